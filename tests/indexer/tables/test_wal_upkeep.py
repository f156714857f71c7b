"""SQLite's write-ahead log stays small: a commit empties it once readers have left it, waits for them only so
long, and a reader renews its snapshot when that lets the log be emptied."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.tables import store_connection, wal_upkeep
from searchengine.indexer.tables.store import Document
from searchengine.indexer.tables.wal_upkeep import LogUpkeep

from tests.indexer.small_index import build_small_index


@pytest.fixture(autouse=True)
def small_log_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every commit of these small writes leaves more log than this, so each one asks to empty it."""
    monkeypatch.setattr(store_connection, "WAL_KEEP_BYTES", 1024)
    monkeypatch.setattr(wal_upkeep, "_waited_in_vain", {})


def _store_path(directory: IndexDirectory) -> Path:
    return directory.file(directory.read_settings(), "documents")


def _log_bytes(store: Path) -> int:
    return os.stat(f"{store}-wal").st_size if os.path.exists(f"{store}-wal") else 0


def _add(directory: IndexDirectory, count: int, start: int) -> None:
    with writing_in_place(directory) as write:
        write.store.add([Document(f"new document {start + i} " + "word " * 200) for i in range(count)])


def _reader(store: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{store.resolve().as_uri()}?mode=ro", uri=True)


def test_a_commit_empties_the_log_once_no_reader_reads_it(tmp_path: Path) -> None:
    directory = build_small_index(tmp_path / "index", 10)
    store = _store_path(directory)
    idle = _reader(store)  # open but in no transaction: the writer is not the last connection, so closing it
    idle.execute("SELECT count(*) FROM documents").fetchall()  # does not fold the log in by itself
    for start in range(0, 60, 20):
        _add(directory, 20, start)
        assert _log_bytes(store) == 0
    assert idle.execute("SELECT count(*) FROM documents").fetchone() == (70,)


def test_a_reader_that_never_moves_on_is_waited_for_once_and_keeps_its_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wal_upkeep, "WAL_WAIT_S", 1.0)
    directory = build_small_index(tmp_path / "index", 10)
    store = _store_path(directory)
    stuck = _reader(store)
    stuck.execute("BEGIN")
    assert stuck.execute("SELECT count(*) FROM documents").fetchone() == (10,)
    started = time.monotonic()
    _add(directory, 20, 0)
    waited = time.monotonic() - started
    started = time.monotonic()
    _add(directory, 20, 20)
    second = time.monotonic() - started
    assert waited >= 1.0  # the first commit waited for the reader the whole WAL_WAIT_S
    assert second < 0.8  # the next one in this process did not wait again
    assert _log_bytes(store) > 0
    assert stuck.execute("SELECT count(*) FROM documents").fetchone() == (10,)  # its snapshot still reads whole
    stuck.execute("COMMIT")
    assert stuck.execute("SELECT count(*) FROM documents").fetchone() == (50,)


def test_a_reader_renews_once_the_log_is_all_copied_and_not_again_for_the_same_log(tmp_path: Path) -> None:
    directory = build_small_index(tmp_path / "index", 10)
    store = _store_path(directory)
    reader = _reader(store)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM documents").fetchall()
    wal_upkeep._waited_in_vain[str(store)] = time.monotonic()  # as after a wait that ran out: no waiting here
    _add(directory, 20, 0)
    assert _log_bytes(store) > 0  # the reader began before this commit, so the log stays
    upkeep = LogUpkeep(store)
    assert upkeep.time_to_renew() is False  # a checkpoint cannot copy past the reader's older snapshot
    reader.execute("COMMIT")  # the reader loads the new commit (its snapshot begins before the log is copied)
    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM documents").fetchone() == (30,)
    time.sleep(wal_upkeep.CHECK_EVERY_S)
    assert upkeep.time_to_renew() is True  # all of the log is in the database file now
    reader.execute("COMMIT")
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM documents").fetchall()
    time.sleep(wal_upkeep.CHECK_EVERY_S)
    assert upkeep.time_to_renew() is False  # renewing again for the same log changes nothing
    upkeep.close()


def test_a_commit_empties_the_log_while_a_reader_follows_commits_and_renews(tmp_path: Path) -> None:
    """The protocol as the server's readers run it: a reader thread that loads each new commit and renews when
    its LogUpkeep says so; every commit waits for it and leaves an empty log."""
    directory = build_small_index(tmp_path / "index", 10)
    store = _store_path(directory)
    loaded, stop = threading.Event(), threading.Event()

    def reader() -> None:
        connection, upkeep = _reader(store), LogUpkeep(store)
        connection.execute("BEGIN")
        count = connection.execute("SELECT count(*) FROM documents").fetchone()[0]
        loaded.set()
        while not stop.wait(0.005):
            newest = _reader(store)
            changed = newest.execute("SELECT count(*) FROM documents").fetchone()[0] != count
            newest.close()
            if changed or upkeep.time_to_renew():
                connection.execute("COMMIT")
                connection.execute("BEGIN")
                count = connection.execute("SELECT count(*) FROM documents").fetchone()[0]
        connection.close()
        upkeep.close()

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        assert loaded.wait(30)
        for start in range(0, 60, 20):
            _add(directory, 20, start)
            assert _log_bytes(store) == 0
        assert wal_upkeep._waited_in_vain == {}
    finally:
        stop.set()
        thread.join()
