"""The C library's heap in a long training process on a CPU (glibc): what a phase freed handed back, and
large blocks mapped on their own during the passes but not while generating (docs/benchmarks.md, "The heap's
fragments").

glibc maps a block of its own (returned to the system when freed) only above a threshold that it raises to the
size of each mapped block freed, up to 32 MiB, and serves what is below it from its heap arenas, where a freed
block stays resident until it is reused. A pass over a batch of sequences allocates activations of tens of MiB:
under the raised threshold they pile up as fragments, more of them when other work on the machine changes the
order of frees and reuses. Generation is the opposite case: it allocates blocks of a few MiB (the KV cache,
the logits) at every new token, which the heap serves again at once and a mapping would fault in anew."""

from __future__ import annotations

import contextlib
import ctypes
import gc
from collections.abc import Iterator

#: During the passes, blocks at least this large get their own mapping, returned to the system when freed.
LARGE_BLOCK_BYTES = 1 << 20
#: While generating, blocks below this come from the heap (the ceiling of glibc's own raised threshold), and
#: the heap's top is handed back only beyond twice it (glibc's rule for a raised threshold).
GENERATION_BLOCK_BYTES = 32 << 20
#: glibc's default trim threshold (malloc.h: M_TRIM_THRESHOLD), used with a fixed mapping threshold.
DEFAULT_TRIM_BYTES = 128 * 1024
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h

_mapping = False  # map_large_blocks took: generation switches back to the heap for its blocks


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None)  # the process's own C library
        libc.mallopt, libc.malloc_trim  # noqa: B018  # both glibc's
    except (OSError, AttributeError):
        return None
    return libc


def _set_thresholds(libc: ctypes.CDLL, mapping: int, trim: int) -> bool:
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, mapping)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, trim))


def map_large_blocks(threshold: int = LARGE_BLOCK_BYTES) -> bool:
    """Have glibc map every block of at least ``threshold`` bytes on its own and unmap it when it is freed
    (``mallopt(M_MMAP_THRESHOLD)``, which also ends glibc's raising of it); True when the C library took it.
    The recipe's probe peaked at 5.5 GB by default, 2.9 GB with this, the same losses and gradients.
    :func:`generation_heap` suspends it while sampling. False, changing nothing, where the C library is not glibc."""
    global _mapping
    libc = _libc()
    if libc is None or not _set_thresholds(libc, threshold, DEFAULT_TRIM_BYTES):
        return False
    _mapping = True
    return True


@contextlib.contextmanager
def large_blocks_mapped() -> Iterator[None]:
    """:func:`map_large_blocks` for the phase inside (RL: its passes hold the run's peak), then glibc's raised
    state (blocks under 32 MiB from the heap, the top trimmed beyond 64 MiB) and the freed pages handed back.
    Mapping costs page faults: the recipe's RL step took 1.3x as long with it and its warm-start step 1.7x
    (docs/benchmarks.md), so only the phase with the peak pays it."""
    global _mapping
    took = map_large_blocks()
    try:
        yield
    finally:
        libc = _libc()
        if took and libc is not None:
            _mapping = False
            _set_thresholds(libc, GENERATION_BLOCK_BYTES, 2 * GENERATION_BLOCK_BYTES)
            libc.malloc_trim(0)


@contextlib.contextmanager
def generation_heap() -> Iterator[None]:
    """While sampling, serve blocks under 32 MiB from the heap as glibc's raised threshold would (mapped on
    their own, a greedy batch took 2.2x the time: each token's KV-cache and logits blocks faulted in anew);
    afterwards hand the heap's freed pages back and map large blocks again (the heap's free chunks, their
    pages handed back, serve the next blocks that fit in them first). Nothing changes unless
    :func:`map_large_blocks` took."""
    libc = _libc() if _mapping else None
    if libc is None:
        yield
        return
    _set_thresholds(libc, GENERATION_BLOCK_BYTES, 2 * GENERATION_BLOCK_BYTES)
    try:
        yield
    finally:
        _set_thresholds(libc, LARGE_BLOCK_BYTES, DEFAULT_TRIM_BYTES)
        libc.malloc_trim(0)


def release_freed_memory() -> bool:
    """Hand the heap memory that the last phase freed back to the operating system (glibc's
    ``malloc_trim``); True when some was. glibc keeps freed blocks for reuse, so without it the
    process stays at the warm start's peak and RL's peak comes on top (docs/benchmarks.md). False
    where the C library has no ``malloc_trim``."""
    gc.collect()
    libc = _libc()
    return bool(libc.malloc_trim(0)) if libc is not None else False
