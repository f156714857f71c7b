"""Numeric filters answered from columns in memory give exactly the ids SQL gives, fall back to SQL for what they
cannot hold, and follow the store's read snapshot."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.query.filter_sql import AnyOf, Condition
from searchengine.indexer.query.number_columns import NumberColumns
from searchengine.indexer.tables.document_table import TABLE
from searchengine.indexer.tables.store import Document, DocumentStore


def _metadata(rng: random.Random) -> dict:
    metadata: dict = {"lang": rng.choice(["en", "de"])}
    choice = rng.random()
    if choice < 0.7:
        metadata["year"] = rng.choice([rng.randint(1990, 2025), rng.randint(1990, 2025) + 0.5])
    elif choice < 0.8:
        metadata["year"] = None
    metadata["mixed"] = rng.choice([1, 2, "2", None])
    metadata["huge"] = rng.choice([2**60 + 1, 3])
    return metadata


@pytest.fixture
def stores(tmp_path: Path):
    rng = random.Random(7)
    writer = DocumentStore(tmp_path / "documents.db", writable=True)
    writer.add([Document(f"text {n}", "c.jsonl", rng.choice([n, None]), _metadata(rng)) for n in range(400)])
    reader = DocumentStore(tmp_path / "documents.db")
    yield writer, reader
    reader.close()
    writer.close()


def test_numeric_filters_match_sql_exactly(stores: tuple[DocumentStore, DocumentStore]) -> None:
    writer, reader = stores  # the writer answers by SQL, the read-only store from its columns
    rng = random.Random(3)
    operators = ["=", "!=", ">", ">=", "<", "<="]
    for _ in range(200):
        field = rng.choice(["year", "id", "line"])
        value = rng.choice([rng.randint(1985, 2030), rng.randint(1985, 2030) + 0.5, rng.randint(0, 420)])
        condition = Condition(field, rng.choice(operators), value)
        other = Condition("year", "in", (2000, 2010.5, rng.randint(1990, 2025)))
        for filters in ([condition], [condition, other], [AnyOf((condition, other))]):
            assert reader.filters.matching_ids(filters).tolist() == writer.filters.matching_ids(filters).tolist(), (
                filters
            )


def test_only_numbers_compared_with_numeric_fields_use_columns(tmp_path: Path, stores) -> None:  # noqa: ANN001
    _, reader = stores

    def fetch(sql: str, parameters: list[object]) -> list[tuple]:
        return reader.db.execute(sql, parameters).fetchall()

    columns = NumberColumns(TABLE, fetch, reader.filters._field_kinds)
    assert columns.matching([Condition("year", ">=", 2020)]) is not None
    assert columns.matching([Condition("id", "<", 10)]).tolist() == list(range(10))
    for sql_only in (
        Condition("mixed", ">=", 2),  # numbers and text: SQLite orders text above numbers
        Condition("huge", ">", 3),  # beyond 2**53, not exact as float64
        Condition("year", "=", None),
        Condition("year", ">", True),
        Condition("lang", "=", "en"),
        Condition("year", "in", (2020, "2021")),
    ):
        assert columns.matching([sql_only]) is None, sql_only
    mixed = [Condition("mixed", ">=", 2)]
    assert reader.filters.matching_ids(mixed).tolist() == reader.filters.matching_ids(mixed).tolist() != []


def test_columns_follow_the_read_snapshot(stores: tuple[DocumentStore, DocumentStore]) -> None:
    writer, reader = stores
    recent = [Condition("year", ">=", 2100)]
    assert reader.filters.matching_ids(recent).tolist() == []
    writer.add([Document("new", "c.jsonl", None, {"year": 2101})])
    assert reader.filters.matching_ids(recent).tolist() == []  # the snapshot read so far
    reader.read_snapshot()
    assert reader.filters.matching_ids(recent).tolist() == [400]
    assert isinstance(reader.filters.matching_ids([Condition("id", ">", 399)]), np.ndarray)


def test_a_filter_cached_for_the_snapshot_is_not_taken_for_an_equal_value_of_another_type(tmp_path: Path) -> None:
    writer = DocumentStore(tmp_path / "documents.db", writable=True)
    writer.add([Document("a", "c.jsonl", 1, {"flag": True, "big": 2.0**70})])
    reader = DocumentStore(tmp_path / "documents.db")
    try:
        assert reader.filters.matching_ids([Condition("flag", "=", True)]).tolist() == [0]
        assert reader.filters.matching_ids([Condition("big", "=", 2.0**70)]).tolist() == [0]
        refused_values = (Condition("flag", "=", 1), Condition("big", "=", 2**70))  # True == 1, 2.0**70 == 2**70
        for refused in (*refused_values, Condition("flag", "=", [True])):  # a list: no hash, a one-line error
            for store in (writer, reader):
                with pytest.raises(IndexerError):
                    store.filters.matching_ids([refused])
    finally:
        reader.close()
        writer.close()
