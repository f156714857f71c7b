"""Filters as SQL over a real document store: in, or, contains, prefix, like, quoted field names, typed
comparisons, and one-line refusals for conditions that could only match all or nothing by accident."""

from __future__ import annotations

from pathlib import Path

import pytest
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.query.filter_sql import AnyOf, Condition
from searchengine.indexer.tables.store import Document, DocumentStore

ROWS = [
    ("Intro to cats", {"lang": "en", "year": 2019, "yearstr": "2004", "tags": ["pets", "cats"], "my field": "x"}),
    ("Introduction to dogs", {"lang": "de", "year": 2021, "yearstr": "2010", "tags": ["pets"]}),
    ("stock market rates", {"lang": "fr", "year": 2023, "yearstr": "2023", "tags": ["money", 7]}),
    ("100% natural soap", {"lang": "en", "year": 2020.5, "yearstr": "1999", "tags": []}),
]


@pytest.fixture
def store(tmp_path: Path):
    store = DocumentStore(tmp_path / "documents.db", writable=True)
    store.add([Document(text, "corpus.jsonl", n, metadata) for n, (text, metadata) in enumerate(ROWS, start=1)])
    yield store
    store.close()


def ids(store: DocumentStore, *filters) -> list[int]:  # noqa: ANN002
    return store.filters.matching_ids(list(filters)).tolist()


def test_in_matches_any_listed_value(store: DocumentStore) -> None:
    assert ids(store, Condition("lang", "in", ("en", "de"))) == [0, 1, 3]
    assert ids(store, Condition("year", "in", (2019, 2023))) == [0, 2]


def test_or_between_conditions_and_between_filters(store: DocumentStore) -> None:
    either = AnyOf((Condition("lang", "=", "fr"), Condition("year", "<", 2020)))
    assert ids(store, either) == [0, 2]
    assert ids(store, either, Condition("lang", "=", "en")) == [0]


def test_contains_looks_inside_list_fields(store: DocumentStore) -> None:
    assert ids(store, Condition("tags", "contains", "pets")) == [0, 1]
    assert ids(store, Condition("tags", "contains", 7)) == [2]


def test_prefix_and_like_on_text(store: DocumentStore) -> None:
    assert ids(store, Condition("text", "^=", "Intro")) == [0, 1]
    assert ids(store, Condition("text", "^=", "intro")) == []  # a prefix is case-sensitive
    assert ids(store, Condition("text", "like", "intro%")) == [0, 1]  # LIKE is ASCII case-insensitive
    assert ids(store, Condition("lang", "like", "_n")) == [0, 3]


def test_includes_finds_a_piece_of_text_and_is_empty_a_field_without_a_value(store: DocumentStore) -> None:
    assert ids(store, Condition("text", "includes", "to ")) == [0, 1]
    assert ids(store, Condition("text", "includes", "Cats")) == []  # case-sensitive, as LlamaIndex's text_match
    assert ids(store, Condition("text", "includes", "% n")) == [3]  # no pattern: % is a character here
    assert ids(store, Condition("tags", "is empty", None)) == [3]
    assert ids(store, Condition("my field", "is empty", None)) == [1, 2, 3]  # missing
    assert ids(store, Condition("nobody has this", "is empty", None)) == [0, 1, 2, 3]
    assert ids(store, Condition("source", "is empty", None)) == []
    with pytest.raises(IndexerError, match="'includes' matches text, but 'tags' holds list"):
        ids(store, Condition("tags", "includes", "pets"))


def test_numbers_compare_as_numbers(store: DocumentStore) -> None:
    assert ids(store, Condition("year", ">=", 2020)) == [1, 2, 3]
    assert ids(store, Condition("year", ">", 2020.4)) == [1, 2, 3]


def test_a_field_name_with_spaces(store: DocumentStore) -> None:
    assert ids(store, Condition("my field", "=", "x")) == [0]


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        (Condition("yearstr", ">=", 2020), "compares number with the field 'yearstr', which holds text"),
        (Condition("yearstr", "=", 2004), 'yearstr="2004"'),
        (Condition("year", "=", "2019"), "compares text with the field 'year', which holds number"),
        (Condition("lang", "contains", "e"), "looks inside lists"),
        (Condition("year", "^=", "20"), "matches text"),
        (Condition("year", "like", "20%"), "matches text"),
        (Condition("source", "=", 5), "compares number"),
        (Condition("year", ">", 10**30), "beyond the 64-bit range"),
        (Condition("id", "=", -(10**30)), "beyond the 64-bit range"),
        (Condition("year", "<", float("inf")), "not a finite number"),
        (Condition("year", "in", 2019), "needs a list of values"),
        (Condition("year", "in", ()), "needs a list of values"),
        (Condition("tags", "=", ["pets"]), "has a value of type list"),
        (Condition("lang", "~", "en"), "unknown operator"),
        (Condition("colour", "=", "red"), "no document has a field 'colour'; fields: id"),
        (Condition("la\x00ng", "=", "en"), "cannot be filtered on"),
        (Condition("\x00", ">", 1), "cannot be filtered on"),
        (Condition("lang", "=", None), "compares with None (null), which no value equals, so it would match nothing; "
                                       "to find documents without the field, write 'lang is empty'"),
        (Condition("year", "in", (2020, None)), "which no value equals"),
        (Condition("lang", "!=", None), "which no value equals"),
    ],
)
def test_conditions_that_cannot_mean_what_they_say_are_refused(
    store: DocumentStore, condition: Condition, message: str
) -> None:
    with pytest.raises(IndexerError) as raised:
        store.filters.matching_ids([condition])
    assert message in str(raised.value)
    assert "rebuild" not in str(raised.value)


def test_more_conditions_than_sqlite_can_nest_are_refused_as_such(store: DocumentStore) -> None:
    """Past about 1000 alternatives SQLite's expression tree is too deep: reported as a corrupt store to rebuild."""
    assert ids(store, AnyOf(tuple(Condition("lang", "=", "en") for _ in range(500)))) == [0, 3]
    with pytest.raises(IndexerError, match="joins 2000 conditions with 'or', more than 500; write lang in A,B,C"):
        ids(store, AnyOf(tuple(Condition("lang", "=", "en") for _ in range(2000))))
    with pytest.raises(IndexerError, match="2000 filters must all hold, more than 500"):
        ids(store, *[Condition("lang", "=", "en")] * 2000)


def test_a_like_pattern_past_sqlites_limit_is_not_called_a_corrupt_store(store: DocumentStore) -> None:
    with pytest.raises(IndexerError, match=r"more than SQLite evaluates at once \(LIKE or GLOB pattern too complex"):
        ids(store, Condition("lang", "like", "a%" * 30_000))


@pytest.fixture
def mixed(tmp_path: Path):
    """A field holding a number in one document, text in others (issue 43's hostile repro), and nothing in one."""
    store = DocumentStore(tmp_path / "mixed.db", writable=True)
    rows = [{"year": 2020}, {"year": "2021"}, {"year": "unknown"}, {}, {"year": 2022.5}, {"year": True}]
    store.add([Document(f"{n} doc", "c.jsonl", n, metadata) for n, metadata in enumerate(rows)])
    yield store
    store.close()


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        (Condition("year", ">=", 3000), []),  # SQLite ranks every text above every number
        (Condition("year", ">", 2019), [0, 4]),
        (Condition("year", "!=", 2020), [4]),  # neither the texts nor the document without a year
        (Condition("year", "<", 2020), []),
        (Condition("year", "<=", 2022.5), [0, 4]),
        (Condition("year", "=", 1), []),  # true is not the number 1
        (Condition("year", "in", (2020, "2021")), [0, 1]),
        (Condition("year", "in", (1, 2021)), []),
        (Condition("year", ">", "2000"), [1, 2]),  # text with text only: no number is "above" it
        (Condition("year", "<", "zzz"), [1, 2]),
        (Condition("year", "!=", "2021"), [2]),
        (Condition("year", "^=", "202"), [1]),  # a prefix is text: 2020 and 2022.5 are numbers
        (Condition("year", "like", "%2%"), [1]),
        (AnyOf((Condition("year", ">", 2021), Condition("year", "=", "unknown"))), [2, 4]),
    ],
)
def test_a_number_matches_only_numbers_and_text_only_text(
    mixed: DocumentStore, condition: Condition | AnyOf, expected: list[int]
) -> None:
    assert ids(mixed, condition) == expected
    reader = DocumentStore(mixed.path)  # a read-only store answers from its number columns where it can
    try:
        assert reader.filters.matching_ids([condition]).tolist() == expected
    finally:
        reader.close()


def test_an_unknown_field_names_the_fields_of_the_latest_documents(store: DocumentStore, monkeypatch) -> None:  # noqa: ANN001
    """Reading every document's metadata to name the fields took minutes at millions of documents: the message
    names those of the latest FIELDS_SAMPLE documents."""
    from searchengine.indexer.query import document_filters

    assert store.filters.fields() == [
        "id",
        "external_id",
        "source",
        "line",
        "text",
        "lang",
        "my field",
        "tags",
        "year",
        "yearstr",
    ]
    monkeypatch.setattr(document_filters, "FIELDS_SAMPLE", 2)  # the last two documents have no "my field"
    assert "my field" not in store.filters.fields()
    with pytest.raises(
        IndexerError, match="no document has a field 'colour'; fields: id, external_id, source, line, text, lang, tags"
    ):
        ids(store, Condition("colour", "=", "red"))


def test_a_metadata_key_named_as_a_column_is_reached_as_metadata_dot_key(tmp_path: Path) -> None:
    """A JSONL record's own "source", "line" or "id" is kept as metadata, but `source` names the column (the file a
    document came from): before, such a key could not be filtered at all. `metadata.KEY` names the key, through SQL,
    the numeric columns and a field index alike, and `fields()` lists it so."""
    store = DocumentStore(tmp_path / "documents.db", writable=True)
    try:
        store.add([
            Document("apples", "m.jsonl", 1, {"source": "web", "line": 7, "id": "a1"}),
            Document("pears", "m.jsonl", 2, {"source": "print", "line": 9, "id": "a2"}),
        ])  # fmt: skip
        assert ids(store, Condition("source", "=", "web")) == []  # the column: the file's name
        assert ids(store, Condition("source", "=", "m.jsonl")) == [0, 1]
        assert ids(store, Condition("metadata.source", "=", "web")) == [0]
        assert ids(store, Condition("metadata.id", "in", ("a2",))) == [1]
        assert ids(store, Condition("metadata.line", ">=", 8)) == [1]  # the numeric columns' path
        assert ids(store, Condition("line", ">=", 2)) == [1]  # the column: the line in the file
        assert ids(store, Condition("metadata.source", "is empty", None)) == []
        assert ids(store, Condition("metadata.source", "like", "pr%")) == [1]
        with pytest.raises(IndexerError, match="compares number with the field 'metadata.source', which holds text"):
            ids(store, Condition("metadata.source", "=", 3))
        assert store.filters.fields()[-3:] == ["metadata.id", "metadata.line", "metadata.source"]
        with pytest.raises(IndexerError, match="no document has a field 'metadata.text'; fields: id, "):
            ids(store, Condition("metadata.text", "=", "x"))  # not 'text', which names the column every row has
    finally:
        store.close()
