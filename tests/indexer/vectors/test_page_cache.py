"""mincore over a file: how much of it the page cache holds (what `info` and the memory check report apart)."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

from searchengine.indexer.vectors.page_cache import cached_bytes


def test_a_file_just_read_is_in_the_page_cache_in_whole_pages(tmp_path: Path) -> None:
    path = tmp_path / "vectors.bin"
    size = 10 * mmap.PAGESIZE + 1
    path.write_bytes(os.urandom(size))
    assert path.read_bytes()  # read through: every page now cached
    assert cached_bytes(path) == 11 * mmap.PAGESIZE


def test_an_empty_file_holds_nothing(tmp_path: Path) -> None:
    path = tmp_path / "empty.bin"
    path.write_bytes(b"")
    assert cached_bytes(path) == 0
