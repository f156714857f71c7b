"""`verify` of what the store's rows hold: each document row against the checksum written with it
(indexer/tables/row_checksums.py), and the keyword index against the rows (FTS5's own integrity-check). SQLite's
integrity_check (store_check.py) sees the file's pages and indexes, not a letter changed inside a stored text."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from searchengine.indexer.commit.file_check import FileCheck
from searchengine.indexer.commit.manifest import Manifest
from searchengine.indexer.tables.keyword_table import TABLE as KEYWORD_TABLE
from searchengine.indexer.tables.row_checksums import (
    has_row_checksums,
    orphan_checksums,
    row_checksum,
    rows_with_checksums,
)
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.tables.store_connection import BUSY_TIMEOUT_MS

SHOWN = 5
"""Damaged rows a problem names (then how many more)."""


def check_rows(folder: Path, manifest: Manifest) -> FileCheck:
    """One FileCheck for the rows of the store of the index in `folder`: each against its checksum, and the keyword
    index against them."""
    store = DocumentStore(folder / manifest.files["documents"].name)
    try:
        store.read_snapshot()
        problem, checked = rows_problem(store)
        return FileCheck("rows", "documents", True, problem, checked)
    finally:
        store.close()


def rows_problem(store: DocumentStore) -> tuple[str | None, str]:
    """What is wrong with the rows of an open store (None when nothing), and what was checked."""
    keyword_checked, keyword = _keyword_problem(store)
    said = {
        "checked": "the keyword index agrees with the texts",
        "absent": "no keyword index",
        "read-only": "the keyword index is checked only where this user may write the store (FTS5 runs its check "
        "as a write)",
        "busy": "the keyword index was not checked: a writer held the store throughout; run verify again",
    }[keyword_checked]
    if not has_row_checksums(store.db):
        checked = (
            "no row checksums yet: the index was written before they were kept, and its next write records "
            f"them; {said}"
        )
        return keyword, checked
    rows, changed, missing = 0, [], []
    for row, checksum in rows_with_checksums(store.db):
        rows += 1
        if checksum is None:
            missing.append(row)
        elif checksum != row_checksum(row):
            changed.append(row)
    orphans = orphan_checksums(store.db)
    problems = []
    if changed:
        problems.append(
            f"{_named(changed)} differ{'s' if len(changed) == 1 else ''} from the checksum written with "
            f"{'it' if len(changed) == 1 else 'them'}: changed since (text, origin or metadata)"
        )
    if missing:
        problems.append(f"{_named(missing)} ha{'s' if len(missing) == 1 else 've'} no checksum")
    if orphans:
        problems.append(f"{orphans} checksum{'' if orphans == 1 else 's'} belong to no document")
    if keyword:
        problems.append(keyword)
    checked = f"{rows} document{'' if rows == 1 else 's'} match the checksums written with them; {said}"
    return "; ".join(problems) or None, checked


def _keyword_problem(store: DocumentStore) -> tuple[str, str | None]:
    """Whether the keyword index was checked ('checked', 'absent', 'read-only', 'busy') and what FTS5's integrity-check
    finds wrong between it and the texts, or None. SQLite runs that check as an INSERT (which writes nothing), so
    on a connection that may write: a store this user may not write is left to the row checksums."""
    if not store.keyword.exists():
        return "absent", None
    if not os.access(store.path, os.W_OK):
        return "read-only", None
    connection = sqlite3.connect(store.path)
    try:
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        connection.execute(f"INSERT INTO {KEYWORD_TABLE} ({KEYWORD_TABLE}) VALUES ('integrity-check')")
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorname", "").startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            return "busy", None  # a write in progress the whole wait: not damage
        return "checked", f"the keyword index disagrees with the stored texts ({exc})"
    finally:
        connection.rollback()
        connection.close()
    return "checked", None


def _named(rows: list[tuple]) -> str:
    """'document 30 (rose), document 31' and how many more: rows by id and external id."""
    names = [f"document {row[0]}" + (f" ({row[1]})" if row[1] is not None else "") for row in rows[:SHOWN]]
    more = f" and {len(rows) - SHOWN} more" if len(rows) > SHOWN else ""
    return ("the row of " if len(rows) == 1 else f"the rows of {len(rows)} documents, ") + ", ".join(names) + more
