"""The real old indexes the upgrade steps are tested on (tests/fixtures/*.tar.gz, each made by the code before a
step: tests/fixtures/make_*_index.py), unpacked into a test's folder."""

from __future__ import annotations

import sqlite3
import tarfile
from pathlib import Path

from searchengine.indexer.commit.index_directory import IndexDirectory

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def unpacked(name: str, folder: Path) -> IndexDirectory:
    """The index of tests/fixtures/<name>.tar.gz, unpacked into `folder`."""
    with tarfile.open(FIXTURES / f"{name}.tar.gz") as archive:
        archive.extractall(folder, filter="data")
    return IndexDirectory(folder / "index")


def store_path(directory: IndexDirectory) -> Path:
    """The index's SQLite store."""
    return directory.file(directory.read_settings(), "documents")


def tables(path: Path) -> set[str]:
    """The tables of the SQLite file at `path`, read without changing it."""
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        connection.close()


def recorded(path: Path) -> list[tuple[int, str]]:
    """The migrations the store at `path` records, in order ([] before any)."""
    if "schema_migrations" not in tables(path):
        return []
    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return connection.execute("SELECT number, name FROM schema_migrations ORDER BY number").fetchall()
    finally:
        connection.close()
