"""The newest commit, read beside a reader's snapshot: also by a reader that may not write the index's directory,
whose connection SQLite opens immutable and which must still see the owner's commits."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from searchengine.indexer.commit.commit_probe import CommitProbe
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.tables.store import Document

from tests.indexer.small_index import build_small_index

READER = """
import os, sys
from pathlib import Path
from searchengine.indexer.commit.commit_probe import CommitProbe

store = Path(sys.argv[1])
probe = CommitProbe(store)
print(not os.access(store.parent, os.W_OK), probe.newest(), flush=True)  # True: SQLite opens it immutable
sys.stdin.readline()
print(probe.newest(), flush=True)
"""


def test_a_probe_sees_a_commit_by_another_process_in_order(tmp_path: Path) -> None:
    directory = build_small_index(tmp_path / "index", 3)
    store = directory.file(directory.read_settings(), "documents")
    probe = CommitProbe(store)
    before = probe.newest()
    with writing_in_place(directory) as write:
        write.store.add([Document("one more")])
    assert probe.newest() == before + 1
    probe.close()


def test_a_reader_who_may_not_write_the_directory_sees_the_owners_commits(tmp_path: Path) -> None:
    """A server run as a user who may read the index but not write its directory, over an index copied without
    its -shm file, kept answering from the commit it was started on (hostile test of serve)."""
    command = [sys.executable, "-c", READER]
    if os.geteuid() == 0:  # root writes anything: drop that power in the reader so the directory's mode applies
        if shutil.which("setpriv") is None:
            pytest.skip("needs setpriv to read as root without the power to write any directory")
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *command]
    built = build_small_index(tmp_path / "built", 3)
    built_store = built.file(built.read_settings(), "documents")
    with sqlite3.connect(built_store) as connection:  # all in the file, then copied as a backup tool would
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copytree(built.path, tmp_path / "index", ignore=shutil.ignore_patterns("*-wal", "*-shm", ".lock"))
    directory = IndexDirectory(tmp_path / "index")
    store = directory.file(directory.read_settings(), "documents")
    directory.path.chmod(0o555)
    try:
        reader = subprocess.Popen(
            [*command, str(store)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tmp_path
        )
        cannot_write, first = reader.stdout.readline().split()
        directory.path.chmod(0o755)  # the owner writes (root could anyway)
        with writing_in_place(directory) as write:
            write.store.add([Document("written by the directory's owner")])
        directory.path.chmod(0o555)
        out, _ = reader.communicate("\n", timeout=60)
    finally:
        directory.path.chmod(0o755)
    assert cannot_write == "True"  # the case under test: no -shm, so SQLite opens the store immutable
    assert int(out) == int(first) + 1
