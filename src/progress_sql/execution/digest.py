"""A file's content identity: the SHA-256 of its bytes, memoised by (device, inode, size, mtime). The
gold cache keys results by it, the engines report it for their databases, Ray ships files by it."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

_digests: dict[tuple[int, int, int, int], str] = {}
_digest_lock = threading.Lock()


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes, computed once per (device, inode, size, mtime)."""
    stat = os.stat(path)
    memo_key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)  # the file, not its name
    with _digest_lock:
        known = _digests.get(memo_key)
    if known is not None:
        return known
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    value = digest.hexdigest()
    with _digest_lock:
        _digests[memo_key] = value
    return value


__all__ = ["file_digest"]
