"""The C library's heap in a training process (glibc): freed memory handed back, large blocks mapped on their
own during the passes, and the heap serving generation's blocks again. Each case runs in a fresh interpreter:
the malloc options are the whole process's."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm; glibc's malloc")

_PRELUDE = """
import os, sys
from progress_sql.heap import generation_heap, large_blocks_mapped, map_large_blocks, release_freed_memory

def resident_mb():
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

def released_mb(size, count):
    '''Allocate count blocks of size bytes, keep the last (above the others on the heap: free() cannot
    shrink the heap below it), free the rest: how much resident memory that gave back at once.'''
    blocks = [bytearray(size) for _ in range(count + 1)]
    live = blocks.pop()
    before = resident_mb()
    del blocks
    return before - resident_mb(), live, before

first = bytearray(8 << 20)
del first  # by default glibc now serves blocks up to 8 MiB from the heap (its raised mapping threshold)
"""


def _run(body: str) -> list[float]:
    done = subprocess.run([sys.executable, "-c", _PRELUDE + body], capture_output=True, text=True, check=True)
    return [float(value) for value in done.stdout.split()]


def test_release_freed_memory_hands_freed_heap_back() -> None:
    """Blocks freed below a live one stay in the process (glibc keeps them for reuse) until released."""
    [kept, released] = _run("""
freed, live, before = released_mb(64 * 1024, 2000)  # 125 MiB of small blocks
print(freed, before - resident_mb() if release_freed_memory() else -1)
""")
    assert kept < 50
    assert released > 100


def test_by_default_freed_activations_stay_resident() -> None:
    [freed] = _run("print(released_mb(4 << 20, 40)[0])")  # 160 MiB of activation-sized blocks
    assert freed < 10


def test_map_large_blocks_returns_freed_activations_at_once() -> None:
    [freed] = _run("assert map_large_blocks()\nprint(released_mb(4 << 20, 40)[0])")
    assert freed > 150


def test_generation_serves_its_blocks_from_the_heap_and_hands_them_back_after() -> None:
    """Inside generation_heap blocks of a few MiB come from the heap again (reused at once, no page faults:
    freed, they stay resident); leaving it hands their pages back, and blocks beyond what the heap holds free
    are mapped on their own again."""
    [kept, after, mapped_again] = _run("""
assert map_large_blocks()
with generation_heap():
    kept, live, before = released_mb(2 << 20, 20)  # 40 MiB, as a KV cache's blocks
after = before - resident_mb()
print(kept, after, released_mb(4 << 20, 40)[0])  # 160 MiB: at most 40 of them fit in the freed heap
""")
    assert kept < 5
    assert after > 30
    assert mapped_again > 100


def test_generation_heap_changes_nothing_unless_blocks_are_mapped() -> None:
    [kept, after] = _run("""
with generation_heap():
    kept, live, before = released_mb(4 << 20, 40)
print(kept, before - resident_mb())
""")
    assert kept < 10
    assert after < 10  # no malloc_trim either: the process asked for no heap management


def test_large_blocks_are_mapped_for_the_phase_inside_only() -> None:
    """RL's phase maps them; after it blocks under 32 MiB come from the heap again (glibc's raised state)."""
    [inside, after] = _run("""
with large_blocks_mapped():
    inside = released_mb(4 << 20, 40)[0]
print(inside, released_mb(4 << 20, 40)[0])
""")
    assert inside > 150
    assert after < 10
