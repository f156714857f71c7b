"""How much of a file sits in the operating system's page cache now (mincore over a read-only mapping of it): the
memory a memory-mapped file takes, which is the page cache's, shared by every process and given back under
pressure, and so reported apart from a process's own memory."""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
from pathlib import Path

import numpy as np

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]
_libc.mincore.restype = ctypes.c_int


def cached_bytes(path: Path) -> int:
    """Bytes of `path` in the page cache now, in whole pages; 0 for an empty file or where mincore fails."""
    size = os.path.getsize(path)
    if size == 0:
        return 0
    pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    residency = (ctypes.c_ubyte * pages)()
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), size, prot=mmap.PROT_READ) as mapped:
        view = np.frombuffer(mapped, dtype=np.uint8)  # only to learn the mapping's address
        address = view.__array_interface__["data"][0]
        failed = _libc.mincore(ctypes.c_void_p(address), ctypes.c_size_t(size), residency) != 0
        del view
    if failed:
        return 0
    return int(np.count_nonzero(np.frombuffer(residency, dtype=np.uint8) & 1)) * mmap.PAGESIZE
