"""How many SQLite connections a write through SearchEngine opens. Each new connection parses the store's schema
(its tables, indexes and triggers), a cost every write paid once per connection: an add and a delete open the
writer's connection alone, and read everything else (the snapshot reloaded after the write, the clean-up's live
files, the commit number, the merge policy's check) through connections already open. Counted with a profiler hook on
`sqlite3.connect` itself, so a connection opened anywhere (our code or a library) counts."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from searchengine.indexer.commit.merge_policy import MERGE_FACTOR

from searchengine import SearchEngine
from searchengine.encoding.encoder import Encoder

WRITE_CONNECTIONS = 1
"""The writer's connection (BEGIN IMMEDIATE ... COMMIT); the snapshot reloaded after it reads through the store
connection it holds (IndexSnapshot._load_in_place)."""


def connections_opened(call: Callable[[], object]) -> int:
    """How often `call` calls sqlite3.connect, in this thread (where every write runs)."""
    opened = 0

    def hook(frame: FrameType, event: str, arg: object) -> None:  # noqa: ARG001 (sys.setprofile's signature)
        nonlocal opened
        if event == "c_call" and arg is sqlite3.connect:
            opened += 1

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        call()
    finally:
        sys.setprofile(previous)
    return opened


def test_the_hook_counts_connections() -> None:
    assert connections_opened(lambda: [sqlite3.connect(":memory:").close() for _ in range(3)]) == 3


def test_an_add_and_a_delete_open_one_connection_each(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = SearchEngine.build([f"document number {i}" for i in range(8)], tmp_path / "index", encoder=tiny_encoder)
    try:
        engine.add(["a first add"])  # the first write may bring the store up to date and open the commit probe
        engine.delete(ids=[0])
        assert connections_opened(lambda: engine.add(["a cat sat on the mat"])) == WRITE_CONNECTIONS
        assert connections_opened(lambda: engine.delete(ids=[1])) == WRITE_CONNECTIONS
        assert connections_opened(lambda: engine.search("a cat", k=3, mode="hybrid")) == 0
        assert [hit.text for hit in engine.search("a cat sat on the mat", k=1, mode="keyword")] == [
            "a cat sat on the mat"
        ]
        assert len(engine) == 8
    finally:
        engine.close()


def test_merges_still_run_when_the_policy_reads_through_the_reader(tmp_path: Path, tiny_encoder: Encoder) -> None:
    """The merge policy's check reads through the loaded reader's store: enough small adds still merge."""
    engine = SearchEngine.build(["the first document"], tmp_path / "index", encoder=tiny_encoder)
    try:
        for i in range(MERGE_FACTOR + 1):
            engine.add([f"added document {i}"])
        segments = len(engine.reader.vectors.segments)
        assert segments < MERGE_FACTOR + 2  # without a merge, the build's segment and one per add
        assert len(engine) == MERGE_FACTOR + 2
        assert not engine.reader.store.closed and engine.reader.store.holds_snapshot
    finally:
        engine.close()
