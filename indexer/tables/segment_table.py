"""The store's record of which segments make up the index, and the state each commit stamps.

The `segments` table names every live segment file with its FAISS type, vector count, size and checksum (and
`segment_originals` the file of original vectors beside a segment whose codes are approximate, with its own;
`vector_template` the trained empty index every segment of a trained type is encoded with, indexer/vectors/template.py); the
`index_state` table holds the commit number (one more per commit: how a reader sees that something changed), the
time of the last write, the library versions that last wrote, and the next free id. Both change only inside a
write's transaction, which is the commit point: a segment is live exactly when a committed transaction names it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from searchengine.indexer.errors import IndexerError
from searchengine.indexer.tables.store_table import StoreTable
from searchengine.indexer.vectors.originals import OriginalsRecord, originals_name
from searchengine.indexer.vectors.segments import SegmentRecord
from searchengine.indexer.vectors.template import TemplateRecord

if TYPE_CHECKING:
    import sqlite_utils

SEGMENT_NAME = re.compile(r"segment\.\d+\.faiss")
TEMPLATE_NAME = re.compile(r"template\.\d+\.faiss")
CHECKSUM = re.compile(r"sha256:[0-9a-f]{64}")

TABLE = "segments"
STATE_TABLE = "index_state"
ORIGINALS_TABLE = "segment_originals"
TEMPLATE_TABLE = "vector_template"
_TEMPLATE_COLUMNS = "name, factory, size, checksum, trained_vectors, training_error, next_id, added, added_error, measured"


class SegmentTable(StoreTable):
    """Segment rows and the commit state of one store, read and written through its connection; `guard` turns
    SQLite errors into the store's one-line errors."""

    name = TABLE

    def records(self) -> list[SegmentRecord]:
        """The live segments, oldest first; a row that cannot be one is one IndexerError naming it."""
        with self._guard():
            if self._has_originals_table():
                rows = self.db.execute(
                    f"SELECT s.name, factory, vectors, s.size, s.checksum, first_id, last_id, o.name, o.size, "
                    f"o.checksum FROM {TABLE} s LEFT JOIN {ORIGINALS_TABLE} o ON o.segment = s.name ORDER BY position"
                ).fetchall()
            else:  # a store no write has upgraded yet (readers never change it): no segment has originals
                rows = [
                    (*row, None, None, None)
                    for row in self.db.execute(
                        f"SELECT name, factory, vectors, size, checksum, first_id, last_id FROM {TABLE} "
                        "ORDER BY position"
                    ).fetchall()
                ]
        return [self._record(row) for row in rows]

    def file_names(self) -> set[str]:
        """The names of the files the store names: its live segments, their originals files and its trained
        template (what a clean-up keeps), read without the checks of `records` and `template`."""
        with self._guard():
            names = {row[0] for row in self.db.execute(f"SELECT name FROM {TABLE}").fetchall()}
            for table in (ORIGINALS_TABLE, TEMPLATE_TABLE):
                if self._has_table(table):
                    names.update(row[0] for row in self.db.execute(f"SELECT name FROM {table}").fetchall())
        return names

    def _has_originals_table(self) -> bool:
        return self._has_table(ORIGINALS_TABLE)

    def _has_table(self, name: str) -> bool:
        query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
        return self.db.execute(query, [name]).fetchone() is not None

    def template(self) -> TemplateRecord | None:
        """The index's trained template, None where it has none (an exact or graph type, an index built before
        templates, or one whose store no write has upgraded yet); a row that cannot be one is one IndexerError."""
        with self._guard():
            if not self._has_table(TEMPLATE_TABLE):
                return None
            row = self.db.execute(f"SELECT {_TEMPLATE_COLUMNS} FROM {TEMPLATE_TABLE}").fetchone()
        if row is None:
            return None
        name, factory, size, checksum, trained, error, next_id, added, added_error, measured = row
        whole = (size, trained, next_id, added, measured)
        if (
            not isinstance(name, str)
            or not TEMPLATE_NAME.fullmatch(name)
            or not isinstance(factory, str)
            or not factory
            or not all(isinstance(value, int) and value >= 0 for value in whole)
            or not isinstance(checksum, str)
            or not CHECKSUM.fullmatch(checksum)
            or not (error is None or isinstance(error, float | int))
            or not isinstance(added_error, float | int)
        ):
            raise IndexerError(
                f"the store's template row names {name!r} of type {factory!r}, size {size!r}: the store is corrupt; "
                "rebuild the index"
            )
        return TemplateRecord(
            name, factory, size, checksum, trained, error, next_id, added, float(added_error), measured
        )

    def set_template(self, record: TemplateRecord | None) -> None:
        """Name `record` as the index's template in place of any before it (None: the index has none)."""
        with self._guard():
            self.db.execute(f"DELETE FROM {TEMPLATE_TABLE}")
            if record is not None:
                self.db.execute(
                    f"INSERT INTO {TEMPLATE_TABLE} ({_TEMPLATE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        record.name,
                        record.factory,
                        record.size,
                        record.checksum,
                        record.trained_vectors,
                        record.training_error,
                        record.next_id,
                        record.added,
                        record.added_error,
                        record.measured,
                    ],
                )

    def count_added(self, vectors: int, measured: int, error: float) -> None:
        """Count `vectors` more encoded with the template since it was trained, `measured` of them with quantization
        errors summing to `error`."""
        with self._guard():
            self.db.execute(
                f"UPDATE {TEMPLATE_TABLE} SET added = added + ?, measured = measured + ?, added_error = added_error + ?",
                [vectors, measured, error],
            )

    def _record(self, row: tuple) -> SegmentRecord:
        name, factory, vectors, size, checksum, first_id, last_id, *originals = row
        problem = None
        if not isinstance(name, str) or not SEGMENT_NAME.fullmatch(name):
            problem = f"names {name!r}, not a segment file of the index directory (segment.<number>.faiss)"
        elif not isinstance(factory, str) or not factory:
            problem = f"has FAISS type {factory!r}"
        elif not all(isinstance(value, int) and value >= 0 for value in (vectors, size, first_id)):
            problem = f"has vectors {vectors!r}, size {size!r}, first id {first_id!r} (whole numbers, 0 or more)"
        elif not isinstance(last_id, int) or last_id < first_id - 1:
            problem = f"has id range {first_id!r}..{last_id!r}"
        elif not isinstance(checksum, str) or not CHECKSUM.fullmatch(checksum):
            problem = f"has checksum {checksum!r}"
        elif originals[0] is not None and (
            originals[0] != originals_name(name)
            or not isinstance(originals[1], int)
            or originals[1] < 0
            or not isinstance(originals[2], str)
            or not CHECKSUM.fullmatch(originals[2])
        ):
            problem = f"of {name} names originals {originals[0]!r} of size {originals[1]!r}, checksum {originals[2]!r}"
        if problem:
            raise IndexerError(f"the store's segment row {problem}: the store is corrupt; rebuild the index")
        kept = None if originals[0] is None else OriginalsRecord(*originals)
        return SegmentRecord(name, factory, vectors, size, checksum, first_id, last_id, kept)

    def add(self, records: Sequence[SegmentRecord]) -> None:
        """Name new segments (after those there are)."""
        with self._guard():
            position = int(self.db.execute(f"SELECT coalesce(max(position), -1) FROM {TABLE}").fetchone()[0]) + 1
            self.db.conn.executemany(
                f"INSERT INTO {TABLE} (name, factory, vectors, size, checksum, first_id, last_id, position) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [_row(record, position + offset) for offset, record in enumerate(records)],
            )
            self._add_originals(records)

    def _add_originals(self, records: Sequence[SegmentRecord]) -> None:
        rows = [(r.name, r.originals.name, r.originals.size, r.originals.checksum) for r in records if r.originals]
        if rows:
            self.db.conn.executemany(
                f"INSERT INTO {ORIGINALS_TABLE} (segment, name, size, checksum) VALUES (?, ?, ?, ?)", rows
            )

    def replace(self, old: Sequence[str], new: SegmentRecord) -> None:
        """Name `new` in place of the segments `old` (a merge): it takes the position of the first of them."""
        with self._guard():
            marks = ",".join("?" * len(old))
            position = self.db.execute(f"SELECT min(position) FROM {TABLE} WHERE name IN ({marks})", list(old))
            first = position.fetchone()[0]
            self.db.execute(f"DELETE FROM {TABLE} WHERE name IN ({marks})", list(old))
            self._remove_originals(old)
            self.db.execute(
                f"INSERT INTO {TABLE} (name, factory, vectors, size, checksum, first_id, last_id, position) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                _row(new, first),
            )
            self._add_originals([new])

    def _remove_originals(self, segments: Sequence[str]) -> None:
        if self._has_originals_table():
            marks = ",".join("?" * len(segments))
            self.db.execute(f"DELETE FROM {ORIGINALS_TABLE} WHERE segment IN ({marks})", list(segments))

    def remove(self, names: Sequence[str]) -> None:
        """Stop naming the segments `names` (a merge that found every vector of them deleted)."""
        with self._guard():
            self.db.execute(f"DELETE FROM {TABLE} WHERE name IN ({','.join('?' * len(names))})", list(names))
            self._remove_originals(names)

    def clear(self) -> None:
        with self._guard():
            self.db.execute(f"DELETE FROM {TABLE}")
            if self._has_originals_table():
                self.db.execute(f"DELETE FROM {ORIGINALS_TABLE}")

    def state(self) -> dict[str, str]:
        """The commit state: 'commit', 'updated_at', 'versions' (JSON) and 'next_id', as far as written; checked,
        so a damaged value is one IndexerError."""
        with self._guard():
            state = dict(self.db.execute(f"SELECT key, value FROM {STATE_TABLE}").fetchall())
        for key in ("commit", "next_id"):
            if key in state and not (isinstance(state[key], str) and state[key].isdigit()):
                raise IndexerError(
                    f"the store's {key} is {state[key]!r}, not a whole number: the store is corrupt; rebuild the index"
                )
        if "versions" in state:
            try:
                versions = json.loads(state["versions"])
            except (TypeError, ValueError):
                versions = None
            if not isinstance(versions, dict) or not all(isinstance(v, str) for v in versions.values()):
                raise IndexerError("the store's recorded versions are not a JSON object: the store is corrupt")
        return state

    def commit_number(self) -> int:
        return int(self.state().get("commit", "0"))

    def stamp(self, versions: dict[str, str] | None, next_id: int) -> None:
        """Mark this transaction a new commit: the number one higher, the time now, the versions (when something
        was encoded) and the next free id (never lower than before: an id is never given twice)."""
        state = self.state()
        values = {
            "commit": str(int(state.get("commit", "0")) + 1),
            "updated_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "next_id": str(max(next_id, int(state.get("next_id", "0")))),
        }
        if versions is not None:
            values["versions"] = json.dumps({**json.loads(state.get("versions", "{}")), **versions})
        with self._guard():
            self.db.conn.executemany(
                f"INSERT OR REPLACE INTO {STATE_TABLE} (key, value) VALUES (?, ?)", list(values.items())
            )


def _row(record: SegmentRecord, position: int) -> tuple:
    return (
        record.name,
        record.factory,
        record.vectors,
        record.size,
        record.checksum,
        record.first_id,
        record.last_id,
        position,
    )


def create_tables(db: sqlite_utils.Database) -> None:
    """The segments and state tables (upgrade step 3, migration 1: indexer/upgrades/segment_tables.py)."""
    db.execute(
        f"CREATE TABLE IF NOT EXISTS {TABLE} (name TEXT PRIMARY KEY, factory TEXT NOT NULL, vectors INTEGER NOT NULL, "
        "size INTEGER NOT NULL, checksum TEXT NOT NULL, first_id INTEGER NOT NULL, last_id INTEGER NOT NULL, "
        "position INTEGER NOT NULL)"
    )
    db.execute(f"CREATE TABLE IF NOT EXISTS {STATE_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


def create_originals_table(db: sqlite_utils.Database) -> None:
    """The originals files of segments (upgrade step 7, migration 5: indexer/upgrades/originals_table.py): one row
    per segment that keeps them, removed with it."""
    db.execute(
        f"CREATE TABLE IF NOT EXISTS {ORIGINALS_TABLE} (segment TEXT PRIMARY KEY, name TEXT NOT NULL, "
        "size INTEGER NOT NULL, checksum TEXT NOT NULL)"
    )


def create_template_table(db: sqlite_utils.Database) -> None:
    """The index's trained template (upgrade step 8, migration 6: indexer/upgrades/template_table.py): at most one
    row."""
    db.execute(
        f"CREATE TABLE IF NOT EXISTS {TEMPLATE_TABLE} (name TEXT PRIMARY KEY, factory TEXT NOT NULL, "
        "size INTEGER NOT NULL, checksum TEXT NOT NULL, trained_vectors INTEGER NOT NULL, training_error REAL, "
        "next_id INTEGER NOT NULL, added INTEGER NOT NULL DEFAULT 0, added_error REAL NOT NULL DEFAULT 0, "
        "measured INTEGER NOT NULL DEFAULT 0)"
    )
