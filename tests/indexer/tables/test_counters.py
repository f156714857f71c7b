"""The counts the store keeps by triggers agree with count(*) through adds, upserts, deletes and passages, and
`verify` says so when one is wrong."""

from __future__ import annotations

from pathlib import Path

from searchengine.indexer.tables.counters import COUNTED, DISTINCT_TEXTS, counted, read_counter
from searchengine.indexer.tables.store import Document, DocumentStore

from tests.indexer.small_index import build_small_index


def _agree(store: DocumentStore) -> dict[str, int]:
    kept = {name: read_counter(store.db, name) for name in COUNTED}
    assert kept == {name: counted(store.db, name) for name in COUNTED}
    return kept


def test_counts_follow_every_change(tmp_path: Path) -> None:
    store = DocumentStore(tmp_path / "d.db", writable=True)
    assert _agree(store) == {"documents": 0, "passages": 0}
    change = store.add([Document("a", external_id="x"), Document("b"), Document("c")])
    store.add_passages({change.ids[1]: [(0, 1), (1, 2), (2, 3)]})  # two passages beyond the first
    assert _agree(store) == {"documents": 3, "passages": 2}
    store.add([Document("a new text for x", external_id="x")])  # an upsert: one row out, one in
    assert _agree(store)["documents"] == 3
    store.tombstones.add(store.delete([change.ids[1]]))  # its passages go with it
    store.tombstones.add([change.ids[1]])  # a tombstone given twice is kept once
    assert _agree(store) == {"documents": 2, "passages": 0}
    assert store.count() == 2 and store.vector_count() == 2 and len(store.tombstones.ids()) == 3
    store.close()


def test_a_store_written_before_the_counters_gains_them(tmp_path: Path) -> None:
    store = DocumentStore(tmp_path / "d.db", writable=True)
    store.add([Document("a"), Document("b")])
    with store.db.atomic():
        store.db.execute("DROP TABLE counters")
        store.db.execute("DROP TABLE build_settings")
        store.db.execute("DELETE FROM schema_migrations WHERE number >= 2")
    store.close()
    reopened = DocumentStore(tmp_path / "d.db", writable=True)
    assert _agree(reopened)["documents"] == 2
    reopened.close()


def test_verify_names_a_wrong_count(tmp_path: Path) -> None:
    directory = build_small_index(tmp_path / "index", 30)
    assert all(check.problem is None for check in directory.verify())
    store = DocumentStore(directory.path / directory.read_settings().files["documents"].name, writable=True)
    with store.db.atomic():
        store.db.execute("UPDATE counters SET value = 99 WHERE name = 'documents'")
    store.close()
    problems = [check.problem for check in directory.verify() if check.problem]
    assert problems[0] == "the store's kept counts are wrong: documents 99 (count(*) says 30)"
    assert problems[1].startswith("the segments hold 30 vectors, but the store has 99 searchable vectors")


def _distinct_agrees(store: DocumentStore) -> int:
    kept = read_counter(store.db, DISTINCT_TEXTS)
    assert kept == counted(store.db, DISTINCT_TEXTS)
    scanned = store.db.execute("SELECT count(*) - count(DISTINCT hash) FROM documents").fetchone()[0]
    assert store.documents.repeats() == scanned
    return kept


def test_distinct_texts_follow_every_change(tmp_path: Path) -> None:
    store = DocumentStore(tmp_path / "d.db", writable=True)
    assert _distinct_agrees(store) == 0
    change = store.add([Document("a", external_id="x"), Document("a"), Document("b"), Document("b")])
    assert _distinct_agrees(store) == 2 and store.documents.repeats() == 2
    store.add([Document("c", external_id="x")])  # x leaves "a" to the other row, and brings "c"
    assert _distinct_agrees(store) == 3
    store.delete([change.ids[1]])  # the last "a"
    assert _distinct_agrees(store) == 2
    with store.db.atomic():  # a text changed in place (no write path does; a trigger still follows it)
        store.db.execute("UPDATE documents SET hash = 'h' WHERE id = ?", [change.ids[2]])
    assert _distinct_agrees(store) == 3
    store.close()


def test_a_build_counts_distinct_texts_at_its_end(tmp_path: Path) -> None:
    store = DocumentStore(tmp_path / "d.db", writable=True)
    store.start_build()
    store.add([Document("a"), Document("a"), Document("b")])
    store.add([Document("b"), Document("c", external_id="x")])
    store.add([Document("d", external_id="x")])
    with store.db.atomic():
        store.finish_build()
    assert _distinct_agrees(store) == 3
    store.add([Document("a"), Document("e")])  # the triggers are back
    assert _distinct_agrees(store) == 4
    store.close()


def test_a_store_written_before_distinct_texts_gains_the_count(tmp_path: Path) -> None:
    store = DocumentStore(tmp_path / "d.db", writable=True)
    store.add([Document("a"), Document("a"), Document("b")])
    with store.db.atomic():
        for event in ("insert", "delete", "update"):
            store.db.execute(f"DROP TRIGGER counters_distinct_texts_{event}")
        store.db.execute("DELETE FROM counters WHERE name = 'distinct_texts'")
        store.db.execute("DELETE FROM schema_migrations WHERE number >= 7")
    store.close()
    reader = DocumentStore(tmp_path / "d.db")
    assert read_counter(reader.db, DISTINCT_TEXTS) is None and reader.documents.repeats() == 1  # read by a scan
    reader.close()
    reopened = DocumentStore(tmp_path / "d.db", writable=True)
    assert _distinct_agrees(reopened) == 2
    reopened.close()


def test_verify_names_a_wrong_distinct_count(tmp_path: Path) -> None:
    directory = build_small_index(tmp_path / "index", 30)
    store = DocumentStore(directory.path / directory.read_settings().files["documents"].name, writable=True)
    with store.db.atomic():
        store.db.execute("UPDATE counters SET value = 7 WHERE name = 'distinct_texts'")
    store.close()
    problems = [check.problem for check in directory.verify() if check.problem]
    assert problems == ["the store's kept counts are wrong: distinct_texts 7 (count(*) says 30)"]
