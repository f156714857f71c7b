"""What a write in place reads of the index directory around its commit: the manifest once to see that the index
needs no conversion and once under the writer lock, which its clean-up of unreferenced files reuses (nothing else
replaces the manifest while the lock is held), and still removes what no commit names. Counted with an audit hook on
`open`, so a read from anywhere (our code or a library) counts."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from searchengine.indexer.commit.index_directory import MANIFEST
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.tables.store import Document

from tests.indexer.small_index import build_small_index, unit_vectors

MANIFEST_READS = 2
"""upgrade_index's look at the format, before the lock (a conversion takes the lock itself), and the write's own
under the lock."""
_counting: list[list[str]] = []
"""The paths opened while a `manifest_reads` call runs (an audit hook cannot be removed, so it counts only then)."""


def _count_opens(event: str, args: tuple) -> None:
    if event == "open" and _counting and isinstance(args[0], (str, Path)):
        _counting[-1].append(str(args[0]))


sys.addaudithook(_count_opens)


def manifest_reads(call: Callable[[], object]) -> int:
    """How often `call` opens a file named manifest.json."""
    _counting.append([])
    try:
        call()
    finally:
        opened = _counting.pop()
    return sum(Path(path).name == MANIFEST for path in opened)


def test_the_hook_counts_manifest_reads(tmp_path: Path) -> None:
    directory = build_small_index(tmp_path / "index", 3)
    assert manifest_reads(lambda: (directory.path / MANIFEST).read_text()) == 1


def test_a_write_in_place_reads_the_manifest_twice_and_still_cleans_up(tmp_path: Path) -> None:
    directory = build_small_index(tmp_path / "index", 5)
    orphan = directory.path / "segment.1.faiss"  # what a write killed before its commit leaves
    orphan.write_bytes(b"not named by any commit")

    def add() -> None:
        with writing_in_place(directory) as write:
            change = write.store.add([Document("a new document"), Document("another one")])
            write.vectors.add(unit_vectors(2, 1), np.asarray(change.ids, dtype=np.int64))

    assert manifest_reads(add) == MANIFEST_READS
    assert not orphan.exists()
    assert not directory.has_unreferenced()
    assert sorted(path.name for path in directory.path.glob("segment.*")) == sorted(
        name for name in directory.live_file_names() if name.startswith("segment.")
    )
    assert len(list(directory.path.glob("segment.*"))) == 2  # the build's and the write's
