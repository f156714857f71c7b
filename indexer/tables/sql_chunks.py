"""`... IN (?, ?, ...)` over any number of values, in chunks under SQLite's parameter limit: how every table of
the store reads or deletes rows by a list of ids."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite_utils


CHUNK = 500
"""Values per `IN (...)`: under SQLite's parameter limit (999 in older builds)."""


def in_chunks(
    db: sqlite_utils.Database, sql: str, values: Sequence[Any], then: str = "", first: Sequence[Any] = ()
) -> list[tuple]:
    """Run `sql (?, ?, ...) then` (a SELECT or DELETE whose `sql` ends in `IN`) over `values`, CHUNK at a time,
    with the parameters `first` before each chunk's (those of `sql`'s own placeholders); returns the rows of all
    chunks."""
    rows: list[tuple] = []
    values = list(values)
    for start in range(0, len(values), CHUNK):
        chunk = values[start : start + CHUNK]
        rows.extend(db.execute(f"{sql} ({','.join('?' * len(chunk))}) {then}", [*first, *chunk]).fetchall())
    return rows
