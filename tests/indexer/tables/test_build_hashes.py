"""A store filled as a build fills it (indexer/tables/build_hashes.py): without its index of text hashes until the
commit, with every answer of an add the same as a store filled row by row, and the same store at the end; and an add
writes its rows to the keyword index in one statement (one new FTS5 segment, not one per batch of rows)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from searchengine.indexer.tables import build_hashes
from searchengine.indexer.tables.row_checksums import row_checksum, rows_with_checksums
from searchengine.indexer.tables.store import Document, DocumentStore


def _adds() -> list[list[Document]]:
    """Adds with repeats within one add and across adds, upserts that keep or change the text, and no ids."""
    return [
        [Document("alpha", "a.txt", 1, {"n": 1}, "a"), Document("beta", "a.txt", 2, {}, "b"), Document("alpha")],
        [Document("beta", "b.txt", 1, {"k": "v"}), Document("gamma", "b.txt", 2, {}, "a"), Document("delta")],
        [Document("alpha", None, None, {}, "c"), Document("beta", "c.txt", 3, {"n": 3}, "b"), Document("alpha")],
    ]


def _fill(path: Path, building: bool) -> list:
    store = DocumentStore(path, writable=True)
    if building:
        store.start_build()
    changes = [store.add(documents) for documents in _adds()]
    with store.db.atomic():
        store.finish_build()
    store.close()
    return changes


def _schema(path: Path) -> list[tuple]:
    connection = sqlite3.connect(path)
    try:
        return connection.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    finally:
        connection.close()


def test_a_build_answers_and_stores_as_row_by_row(tmp_path: Path) -> None:
    built = _fill(tmp_path / "built.db", building=True)
    plain = _fill(tmp_path / "plain.db", building=False)
    assert built == plain
    assert [change.repeated for change in built] == [[False, False, True], [True, False, False], [True, True]]
    assert _schema(tmp_path / "built.db") == _schema(tmp_path / "plain.db")
    stores = [DocumentStore(tmp_path / name) for name in ("built.db", "plain.db")]
    try:
        rows = [list(rows_with_checksums(store.db)) for store in stores]
        assert rows[0] == rows[1]
        assert all(checksum == row_checksum(row) for row, checksum in rows[0])
        assert stores[0].documents.repeats() == stores[1].documents.repeats() == 3
        plan = stores[0].db.execute("EXPLAIN QUERY PLAN SELECT id FROM documents WHERE hash = 'x'").fetchall()
        assert "documents_hash" in str(plan)
        assert stores[0].keyword.search("alpha", 10) == stores[1].keyword.search("alpha", 10)
        assert sqlite3.connect(tmp_path / "built.db").execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        for store in stores:
            store.close()


def test_a_build_started_on_stored_rows_finds_their_texts(tmp_path: Path) -> None:
    store = DocumentStore(tmp_path / "documents.db", writable=True)
    store.add([Document("stored before")])
    store.start_build()
    assert "documents_hash" not in str(store.db.execute("SELECT name FROM sqlite_master").fetchall())
    assert store.add([Document("stored before"), Document("new")]).repeated == [True, False]
    store.close()


def test_hashes_sharing_a_key_are_not_one_text(tmp_path: Path) -> None:
    store = DocumentStore(tmp_path / "documents.db", writable=True)
    store.start_build()
    stored, other = "ab" * 8 + "0" * 48, "ab" * 8 + "1" * 48
    assert build_hashes.hash_key(stored) == build_hashes.hash_key(other)
    with store.db.atomic():
        store.documents.insert(
            [
                {
                    "id": 0,
                    "external_id": None,
                    "text": "t",
                    "source": None,
                    "line": None,
                    "metadata": "{}",
                    "hash": stored,
                }
            ]
        )
    assert store.documents.known_hashes([other]) == set()
    assert store.documents.known_hashes([stored, other]) == {stored}
    store.close()


def test_an_add_writes_one_keyword_segment(tmp_path: Path) -> None:
    store = DocumentStore(tmp_path / "documents.db", writable=True)
    store.add([Document(f"document number {n} of many", "a.txt", n, {"n": n}, f"id-{n}") for n in range(1000)])
    segments = store.db.execute("SELECT count(DISTINCT segid) FROM documents_fts_idx").fetchone()[0]
    assert segments == 1
    assert len(store.keyword.search("many", 2000)) == 1000
    store.close()
