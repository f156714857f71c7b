"""Indexes on metadata fields: a filter on an indexed field seeks its index (the query plan says so) and matches
exactly what the same filter matches without one, in a writer and a read-only store, as rows are added, replaced
and deleted; the kinds a field holds come from the index; columns and unwritable names are refused."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from searchengine.indexer.errors import IndexerError, UnknownFieldError
from searchengine.indexer.query.filter_sql import AnyOf, Condition, where_clause
from searchengine.indexer.tables.field_indexes import index_name
from searchengine.indexer.tables.store import Document, DocumentStore

ROWS = [
    {"lang": "en", "year": 2019, "it's": "a", "mixed": 2020, "tags": ["pets"]},
    {"lang": "de", "year": 2021, "it's": "b", "mixed": "2021"},
    {"lang": "fr", "year": 2023.5, "mixed": "unknown", "tags": []},
    {"lang": "en", "mixed": True},
    {"lang": None, "year": 2020, "mixed": 2022.5},
    {},
]
FIELDS = ["lang", "year", "it's", "mixed"]
CONDITIONS = [
    Condition("lang", "=", "en"),
    Condition("lang", "!=", "en"),
    Condition("lang", "in", ("de", "fr")),
    Condition("lang", "^=", "e"),
    Condition("lang", "like", "_R"),
    Condition("lang", "includes", "n"),
    Condition("lang", "is empty", None),
    Condition("year", ">=", 2020),
    Condition("year", "<", 2021.5),
    Condition("year", "in", (2019, 2023.5)),
    Condition("year", "!=", 2021),
    Condition("it's", "=", "b"),
    Condition("mixed", ">", 2019),
    Condition("mixed", ">", "2000"),
    Condition("mixed", "in", (2020, "2021")),
    Condition("mixed", "=", True),
    Condition("tags", "contains", "pets"),
    AnyOf((Condition("lang", "=", "de"), Condition("year", "<", 2020))),
]


def _store(path: Path, indexed: bool) -> DocumentStore:
    store = DocumentStore(path, writable=True)
    store.add([Document(f"text {n}", "c.jsonl", n, metadata, f"doc-{n}") for n, metadata in enumerate(ROWS)])
    if indexed:
        with store.db.atomic():
            assert store.field_indexes.create(FIELDS) == FIELDS
    return store


@pytest.fixture
def stores(tmp_path: Path):
    plain, indexed = _store(tmp_path / "plain.db", False), _store(tmp_path / "indexed.db", True)
    yield plain, indexed
    plain.close()
    indexed.close()


@pytest.fixture(scope="module")
def unchanged(tmp_path_factory: pytest.TempPathFactory):
    """The two stores, with and without indexes, and a read-only store of each, for the tests that write nothing."""
    folder = tmp_path_factory.mktemp("field_indexes")
    plain, indexed = _store(folder / "plain.db", False), _store(folder / "indexed.db", True)
    readers = [DocumentStore(store.path) for store in (plain, indexed)]
    for reader in readers:
        reader.read_snapshot()
    yield plain, indexed, *readers
    for store in (plain, indexed, *readers):
        store.close()


def _ids(store: DocumentStore, condition: Condition | AnyOf) -> list[int]:
    return store.filters.matching_ids([condition]).tolist()


@pytest.mark.parametrize("condition", CONDITIONS, ids=repr)
def test_an_indexed_field_matches_what_it_matches_without_the_index(unchanged, condition) -> None:  # noqa: ANN001
    plain, indexed, plain_reader, indexed_reader = unchanged
    assert _ids(indexed, condition) == _ids(plain, condition)
    # a query process: numbers from columns without an index, from the index with one
    assert _ids(indexed_reader, condition) == _ids(plain_reader, condition) == _ids(plain, condition)


@pytest.mark.parametrize(
    ("condition", "index"),
    [
        (Condition("lang", "=", "en"), "lang"),
        (Condition("year", ">=", 2020), "year"),
        (Condition("it's", "in", ("a", "b")), "it's"),
        (AnyOf((Condition("lang", "=", "de"), Condition("year", "<", 2020))), "year"),
    ],
    ids=repr,
)
def test_a_filter_on_an_indexed_field_seeks_its_index(unchanged, condition, index: str) -> None:  # noqa: ANN001
    plain, indexed, _, _ = unchanged
    where, parameters = where_clause([condition], indexed.filters._field_kinds, indexed.filters.indexed())
    plan = " ".join(
        row[-1] for row in indexed.db.execute(f"EXPLAIN QUERY PLAN SELECT id FROM documents WHERE {where}", parameters)
    )
    assert f"USING INDEX {index_name(index)}" in plan
    assert "SCAN documents" not in plan
    where, parameters = where_clause([condition], plain.filters._field_kinds, plain.filters.indexed())
    plan = " ".join(
        row[-1] for row in plain.db.execute(f"EXPLAIN QUERY PLAN SELECT id FROM documents WHERE {where}", parameters)
    )
    assert "SCAN documents" in plan  # without an index every row is read


def test_the_kinds_a_field_holds_come_from_its_index(stores) -> None:  # noqa: ANN001
    plain, indexed = stores
    assert "year" in indexed.filters.indexed()
    for field in FIELDS:
        assert indexed.filters._field_kinds(field) == plain.filters._field_kinds(field)
    assert indexed.filters._field_kinds("mixed") == {"number", "text", "true/false"}
    assert indexed.filters._field_kinds("lang") == {"text", "null"}
    with pytest.raises(UnknownFieldError, match="no document has a field 'colour'"):
        indexed.filters.matching_ids([Condition("colour", "=", "red")])
    with indexed.db.atomic():
        indexed.field_indexes.create(["colour"])  # indexed before any document has it
    with pytest.raises(UnknownFieldError, match="no document has a field 'colour'"):
        indexed.filters.matching_ids([Condition("colour", "=", "red")])


def test_the_index_follows_adds_upserts_and_deletes(stores) -> None:  # noqa: ANN001
    plain, indexed = stores
    for store in stores:
        store.add(
            [Document("new", "c.jsonl", 9, {"lang": "de"}), Document("text 0", "c.jsonl", 0, {"lang": "de"}, "doc-0")]
        )
        store.delete([1])
    condition = Condition("lang", "=", "de")
    assert _ids(indexed, condition) == _ids(plain, condition) == [0, 6]
    assert indexed.count() == plain.count()
    assert indexed.db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


def test_indexed_fields_are_read_from_the_schema_and_survive_reopening(stores) -> None:  # noqa: ANN001
    _, indexed = stores
    indexed.close()
    reopened = DocumentStore(indexed.path)
    assert reopened.field_indexes.keys() == set(FIELDS)
    reopened.close()
    writer = DocumentStore(indexed.path, writable=True)
    with writer.db.atomic():
        assert writer.field_indexes.create(["lang", "lang", "views"]) == ["views"]
        assert writer.field_indexes.drop(["year", "absent"]) == ["year"]
    assert writer.field_indexes.keys() == {"lang", "it's", "mixed", "views"}
    writer.close()


@pytest.mark.parametrize(
    ("field", "message"),
    [("text", "'text' is a column of every document"), ('a"b', "cannot be filtered on"), ("", "cannot be filtered on")],
)
def test_a_column_or_an_unwritable_name_is_refused_before_anything_is_made(tmp_path: Path, field, message) -> None:  # noqa: ANN001
    store = _store(tmp_path / "documents.db", False)
    with pytest.raises(IndexerError, match=message):
        store.field_indexes.create(["lang", field])
    assert store.field_indexes.keys() == frozenset()
    store.close()


def test_a_read_only_store_cannot_make_one(unchanged) -> None:  # noqa: ANN001
    _, _, plain_reader, _ = unchanged
    with pytest.raises(IndexerError):
        plain_reader.field_indexes.create(["lang"])
    connection = sqlite3.connect(plain_reader.path)
    assert connection.execute("SELECT name FROM sqlite_master WHERE name LIKE 'documents_field_%'").fetchall() == []
    connection.close()


def test_a_metadata_key_named_as_a_column_is_indexed_and_sought_as_metadata_dot_key(tmp_path: Path) -> None:
    store = DocumentStore(tmp_path / "documents.db", writable=True)
    store.add([Document(f"text {n}", "c.jsonl", n, {"source": f"s{n % 3}"}, f"doc-{n}") for n in range(30)])
    with pytest.raises(IndexerError, match="a metadata key of that name is metadata.source"):
        store.field_indexes.create(["source"])
    with store.db.atomic():
        assert store.field_indexes.create(["metadata.source"]) == ["source"]
    condition = Condition("metadata.source", "=", "s1")
    where, parameters = where_clause([condition], store.filters._field_kinds, store.filters.indexed())
    plan = " ".join(row[-1] for row in store.db.execute(f"EXPLAIN QUERY PLAN SELECT id FROM documents WHERE {where}", parameters))
    assert f"USING INDEX {index_name('source')}" in plan
    assert store.filters.matching_ids([condition]).tolist() == list(range(1, 30, 3))
    with store.db.atomic():
        assert store.field_indexes.drop(["metadata.source"]) == ["source"]
    store.close()
