"""The SQLite document store: one row per document, repeats counted, upserts, metadata, read-only opens, stores
written by older versions, and damaged files."""

from __future__ import annotations

import datetime
import math
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from searchengine.indexer.errors import IndexerError, MissingKeywordIndexError
from searchengine.indexer.query.filter_sql import Condition
from searchengine.indexer.tables.store import Document, DocumentStore


@pytest.fixture
def store(tmp_path: Path):
    store = DocumentStore(tmp_path / "documents.db", writable=True)
    yield store
    store.close()


def _docs(*texts: str) -> list[Document]:
    return [Document(text, "corpus.txt", number) for number, text in enumerate(texts, start=1)]


def test_new_store_is_empty(store: DocumentStore) -> None:
    assert store.count() == 0
    assert store.documents.repeats() == 0
    assert store.get([0, 1]) == {}


def test_add_returns_new_ids_and_their_positions(store: DocumentStore) -> None:
    ids, positions, _ = store.add(_docs("alpha", "beta", "gamma"))
    assert ids == [0, 1, 2]
    assert positions == [0, 1, 2]
    ids, positions, _ = store.add(_docs("delta", "epsilon"))
    assert ids == [3, 4]
    assert positions == [0, 1]
    rows = store.get([0, 3, 4])
    assert [rows[i].text for i in (0, 3, 4)] == ["alpha", "delta", "epsilon"]


def test_repeated_texts_in_one_batch_are_documents_of_their_own(store: DocumentStore) -> None:
    documents = [Document(text, "corpus.txt", n, {"n": n}) for n, text in enumerate(["same", "other", "same", "same"])]
    change = store.add(documents)
    assert change.ids == [0, 1, 2, 3]
    assert change.positions == [0, 1, 2, 3]
    assert change.repeated == [False, False, True, True]
    assert store.count() == 4
    assert store.documents.repeats() == 2
    rows = store.get(change.ids)
    assert [(rows[i].line, rows[i].metadata, rows[i].count) for i in change.ids] == [
        (0, {"n": 0}, 3),
        (1, {"n": 1}, 1),
        (2, {"n": 2}, 3),
        (3, {"n": 3}, 3),
    ]  # each keeps its own origin and metadata; count says how many documents share the text


def test_repeats_across_batches_are_counted_and_kept(store: DocumentStore) -> None:
    store.add(_docs("one", "two"))
    change = store.add(_docs("two", "three", "one", "two"))
    assert change.ids == [2, 3, 4, 5]
    assert change.repeated == [True, False, True, True]
    assert store.count() == 6
    assert store.documents.repeats() == 3
    rows = store.get(range(6))
    assert {row.text: row.count for row in rows.values()} == {"one": 2, "two": 3, "three": 1}


def test_ids_are_never_reused_after_a_tombstoned_delete(store: DocumentStore) -> None:
    store.add(_docs("a", "b"))
    store.delete([1])
    store.tombstones.add([1])
    assert store.add(_docs("c")).ids == [2]


def test_upsert_with_a_new_text_replaces_the_row(store: DocumentStore) -> None:
    store.add([Document("old text", external_id="d1"), Document("kept", external_id="d2")])
    change = store.add([Document("new text", external_id="d1")])
    assert change.removed == [0]
    assert change.ids == [2]
    assert store.get([2])[2].external_id == "d1"
    assert store.documents.ids_for_external(["d1", "d2"]) == [1, 2]


def test_upsert_with_the_same_text_updates_origin_and_metadata_in_place(store: DocumentStore) -> None:
    store.add([Document("text", "a.jsonl", 1, {"v": 1}, external_id="d1")])
    change = store.add([Document("text", "b.jsonl", 9, {"v": 2}, external_id="d1")])
    assert (change.ids, change.removed, change.updated) == ([], [], 1)
    row = store.get([0])[0]
    assert (row.source, row.line, row.metadata) == ("b.jsonl", 9, {"v": 2})


def test_an_id_given_twice_in_one_input_keeps_the_last(store: DocumentStore) -> None:
    store.add([Document("first", external_id="d1")])
    change = store.add(
        [Document("second", external_id="d1"), Document("first", external_id="d1"), Document("third", external_id="d1")]
    )
    assert change.removed == [0]
    assert len(change.ids) == 1
    assert store.count() == 1
    assert store.get(change.ids)[change.ids[0]].text == "third"


def test_two_documents_sharing_a_text_are_deleted_one_at_a_time(store: DocumentStore) -> None:
    """Issue 11: delete --external d10 took d11 too when both had the same text."""
    store.add([Document("same", external_id="d10"), Document("same", external_id="d11")])
    store.delete(store.documents.ids_for_external(["d10"]))
    assert store.documents.ids_for_external(["d11"]) == [1]
    assert store.get([1])[1].text == "same"


def test_texts_differing_only_in_case_or_whitespace_are_distinct(store: DocumentStore) -> None:
    ids, _, _ = store.add(_docs("Text", "text", "text "))
    assert len(ids) == 3
    assert store.count() == 3


def test_fields_and_metadata_round_trip(store: DocumentStore) -> None:
    metadata = {
        "title": "Ünïcødé — 日本語 🙂",
        "tags": ["a", "b"],
        "nested": {"n": 1, "x": 2.5, "none": None, "flag": True},
    }
    ids, _, _ = store.add(
        [
            Document("café crème 🙂", "données.jsonl", 7, metadata),
            Document("no origin"),
        ]
    )
    rows = store.get(ids)
    first, second = rows[ids[0]], rows[ids[1]]
    assert first.id == ids[0]
    assert first.text == "café crème 🙂"
    assert first.source == "données.jsonl"
    assert first.line == 7
    assert first.metadata == metadata
    assert first.count == 1
    assert second.source is None
    assert second.line is None
    assert second.metadata == {}


def test_get_leaves_out_unknown_ids(store: DocumentStore) -> None:
    store.add(_docs("x", "y"))
    rows = store.get([1, 99, -5, 0, 1])
    assert sorted(rows) == [0, 1]
    assert rows[0].text == "x" and rows[1].text == "y"
    assert store.get([]) == {}
    assert store.get([42]) == {}


def test_get_accepts_numpy_ids(store: DocumentStore) -> None:
    """Ids come straight from FAISS as numpy int64."""
    import numpy as np

    store.add(_docs("x", "y", "z"))
    rows = store.get(np.array([2, 0, -1], dtype=np.int64))
    assert sorted(rows) == [0, 2]


def test_many_documents_in_chunks(store: DocumentStore) -> None:
    """More than the 500-row chunk used for lookups, with repeats spread across chunk boundaries."""
    texts = [f"document {i}" for i in range(1200)]
    ids, positions, _ = store.add(_docs(*texts))
    assert ids == list(range(1200))
    change = store.add(_docs(*texts[::3], "brand new"))
    assert change.ids == list(range(1200, 1601))
    assert sum(change.repeated) == 400
    assert store.count() == 1601
    rows = store.get(range(1601))
    assert len(rows) == 1601
    assert rows[3].count == 2 and rows[4].count == 1


def test_reopen_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "documents.db"
    first = DocumentStore(path, writable=True)
    first.add(_docs("a", "b", "a"))
    first.close()
    again = DocumentStore(path, writable=True)
    assert again.count() == 3
    ids, _, _ = again.add(_docs("c"))
    assert ids == [3]  # ids continue after the existing ones
    again.close()


def test_read_only_open_reads_and_cannot_write(tmp_path: Path) -> None:
    path = tmp_path / "documents.db"
    writer = DocumentStore(path, writable=True)
    writer.add(_docs("kept", "kept", "also kept"))
    writer.close()
    reader = DocumentStore(path)  # writable=False is the default
    assert reader.count() == 3
    assert reader.get([0])[0].text == "kept"
    with pytest.raises(IndexerError):
        reader.add(_docs("new text"))
    with pytest.raises(IndexerError):
        reader.add(_docs("kept"))
    assert reader.count() == 3
    reader.close()
    # Nothing was written behind the reader's back either.
    check = DocumentStore(path)
    assert check.count() == 3
    check.close()


def _legacy_store(path: Path) -> None:
    """A store as versions before one-row-per-document wrote it: texts stored once with a count, external ids in
    their own table (two of them naming the one row of a repeated text)."""
    connection = sqlite3.connect(path)
    connection.executescript(
        """
        CREATE TABLE documents (id INTEGER PRIMARY KEY, text TEXT, source TEXT, line INTEGER, metadata TEXT,
                                hash TEXT, count INTEGER);
        CREATE UNIQUE INDEX idx_documents_hash ON documents (hash);
        CREATE TABLE external_ids (external_id TEXT PRIMARY KEY, id INTEGER);
        CREATE TABLE tombstones (id INTEGER PRIMARY KEY);
        INSERT INTO documents VALUES (0, 'same', 'a.jsonl', 1, '{"lang": "en"}', 'h0', 2);
        INSERT INTO documents VALUES (1, 'other', 'a.jsonl', 2, '{"lang": "de"}', 'h1', 1);
        INSERT INTO documents VALUES (2, 'thrice', 'a.jsonl', 3, '{}', 'h2', 3);
        INSERT INTO external_ids VALUES ('d10', 0), ('d11', 0), ('d2', 1);
        """
    )
    connection.commit()
    connection.close()


def test_a_store_written_by_an_older_version_is_read_as_documents(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _legacy_store(path)
    reader = DocumentStore(path)
    assert reader.legacy
    assert reader.count() == 3
    assert reader.get([0])[0].external_id == "d10"
    assert reader.documents.ids_for_external(["d2"]) == [1]
    assert list(reader.filters.matching_ids([Condition("external_id", "=", "d2")])) == [1]
    assert list(reader.filters.matching_ids([Condition("lang", "=", "en")])) == [0]
    reader.close()


def test_upgrading_an_older_store_gives_every_occurrence_its_own_row(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _legacy_store(path)
    store = DocumentStore(path, writable=True)
    copies = store.upgrade()
    assert copies == [(3, 0), (4, 2), (5, 2)]  # d11's row, and two more occurrences of 'thrice'
    assert not store.legacy and store.count() == 6 and store.documents.repeats() == 3
    assert store.documents.ids_for_external(["d10", "d11", "d2"]) == [0, 1, 3]
    store.delete(store.documents.ids_for_external(["d10"]))
    assert store.get([3])[3].text == "same" and store.get([3])[3].external_id == "d11"
    assert store.upgrade() == []
    store.close()


def test_read_only_open_of_a_missing_file_raises_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    with pytest.raises(IndexerError):
        DocumentStore(path)
    assert not path.exists()


@pytest.mark.parametrize("name", ["index#2", "50%20off", "what?", "100%"])
def test_read_only_open_works_whatever_the_directory_name(tmp_path: Path, name: str) -> None:
    directory = tmp_path / name
    directory.mkdir()
    path = directory / "documents.db"
    writer = DocumentStore(path, writable=True)
    writer.add(_docs("hello"))
    writer.close()
    before = sorted(p.name for p in tmp_path.iterdir())
    reader = DocumentStore(path)
    assert reader.count() == 1
    assert reader.get([0])[0].text == "hello"
    reader.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_read_only_open_of_a_database_without_the_table_raises(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE something_else (x)")
    connection.commit()
    connection.close()
    with pytest.raises(IndexerError, match="no documents table"):
        DocumentStore(path)
    # A read-only open did not add the table.
    connection = sqlite3.connect(path)
    tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    connection.close()
    assert tables == ["something_else"]


def test_read_only_open_of_an_empty_file_raises(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    with pytest.raises(IndexerError):
        DocumentStore(path)


@pytest.mark.parametrize("writable", [False, True])
def test_random_bytes_raise_indexer_error(tmp_path: Path, writable: bool) -> None:
    path = tmp_path / "random.db"
    path.write_bytes(os.urandom(16384))
    with pytest.raises(IndexerError, match="corrupt or unreadable"):
        store = DocumentStore(path, writable=writable)
        store.count()


def _filled_store_bytes(tmp_path: Path) -> bytes:
    path = tmp_path / "full.db"
    store = DocumentStore(path, writable=True)
    store.add([Document(f"document number {i} " * 10, "f.txt", i, {"i": i}) for i in range(500)])
    store.close()
    return path.read_bytes()


@pytest.mark.parametrize("fraction", [0.5, 0.1])
@pytest.mark.parametrize("writable", [False, True])
def test_truncated_store_raises_indexer_error_on_open_or_query(tmp_path: Path, fraction: float, writable: bool) -> None:
    good = _filled_store_bytes(tmp_path)
    path = tmp_path / "truncated.db"
    path.write_bytes(good[: int(len(good) * fraction)])
    with pytest.raises(IndexerError, match="corrupt or unreadable"):
        store = DocumentStore(path, writable=writable)
        store.count()
        store.get(range(500))


def test_pages_overwritten_with_garbage_raise_indexer_error_on_query(tmp_path: Path) -> None:
    """The header page is intact (the store opens), but the table's pages are garbage."""
    good = bytearray(_filled_store_bytes(tmp_path))
    page = 4096
    good[page:] = bytes((i * 37 + 11) % 256 for i in range(len(good) - page))
    path = tmp_path / "damaged.db"
    path.write_bytes(bytes(good))
    with pytest.raises(IndexerError):
        store = DocumentStore(path)
        store.count()
        store.get(range(500))


def test_no_clustering_until_one_is_saved(store: DocumentStore) -> None:
    store.add(_docs("alpha", "beta"))
    assert store.clustering.record() is None
    assert store.clustering.clusters_of([0, 1]) == {}
    assert store.clustering.members() == {}


def test_saved_clustering_reads_back_and_survives_reopening(store: DocumentStore) -> None:
    store.add(_docs("alpha", "beta", "gamma", "delta", "epsilon"))
    store.clustering.save("kmeans", {"k": 2, "seed": 0}, [0, 1, 2, 4], [1, 0, 0, 1], [0.5, 0.7, 0.9, 0.8], "now")
    store.close()
    reopened = DocumentStore(store.path)
    record = reopened.clustering.record()
    assert (record.method, record.parameters, record.clusters, record.documents, record.created_at) == (
        "kmeans",
        {"k": 2, "seed": 0},
        2,
        4,
        "now",
    )
    assert reopened.clustering.clusters_of([0, 1, 3, 4, 99]) == {0: 1, 1: 0, 4: 1}
    assert reopened.clustering.members() == {0: [2, 1], 1: [4, 0]}  # most central first
    reopened.close()


def test_saving_a_clustering_replaces_the_previous_one(store: DocumentStore) -> None:
    store.add(_docs("alpha", "beta", "gamma"))
    store.clustering.save("kmeans", {"k": 3}, [0, 1, 2], [0, 1, 2], [1.0, 1.0, 1.0], "first")
    store.clustering.save("community", {"threshold": 0.9, "min_size": 2}, [0, 2], [0, 0], [0.9, 0.95], "second")
    assert store.clustering.record().method == "community"
    assert store.clustering.members() == {0: [2, 0]}
    assert store.clustering.clusters_of([0, 1, 2]) == {0: 0, 2: 0}


def test_cluster_lookups_take_more_ids_than_sqlite_parameters(store: DocumentStore) -> None:
    store.add(_docs(*(f"text {i}" for i in range(1200))))
    ids = list(range(1200))
    store.clustering.save("kmeans", {"k": 2}, ids, [i % 2 for i in ids], [1.0] * 1200, "now")
    assert store.clustering.clusters_of(ids) == {i: i % 2 for i in ids}
    assert [len(members) for members in store.clustering.members().values()] == [600, 600]


# The keyword index (FTS5 over the documents' text, kept in step by triggers).


def _keyword_index_holds_the_documents(store: DocumentStore) -> None:
    """FTS5's own check that an external-content index agrees with its table, row for row and term for term."""
    store.db.execute("INSERT INTO documents_fts (documents_fts, rank) VALUES ('integrity-check', 1)")


def _found(store: DocumentStore, text: str, k: int = 10, filters: list | None = None) -> list[int]:
    allowed = store.filters.matching_ids(filters) if filters else None
    return [doc for doc, _ in store.keyword.search(text, k, allowed)]


def test_keyword_search_ranks_documents_holding_any_word_by_bm25(store: DocumentStore) -> None:
    store.add(_docs("the cat sat on the mat", "cats chase mice", "stock prices fell", "a cat and a cat"))
    store.add(_docs("rain in spain", "snow in june", "a dog barks"))  # so that no word is in half the documents
    hits = store.keyword.search("cat mat", 10)
    assert [doc for doc, _ in hits] == [0, 3, 1]  # both words, then 'cat' twice, then 'cats' (stemmed) once
    assert all(first[1] > second[1] > 0 for first, second in zip(hits, hits[1:]))
    assert _found(store, "running prices") == [2]  # Porter stemming: prices = price, and no word is required
    assert _found(store, "the mat") == [0]  # 'the' is in 1 of 7 documents: searched for, found with 'mat'
    assert _found(store, "zebra") == []
    _keyword_index_holds_the_documents(store)


def test_keyword_scores_score_the_ids_asked_for_as_the_search_does(store: DocumentStore) -> None:
    store.add(_docs("red apple", "green apple", "red car", "blue sky"))
    top = store.keyword.search("red apple", 2)
    assert len(top) == 2 and top == store.keyword.search("red apple", 2, np.arange(4))
    scores = store.keyword.scores("red apple", [0, 1, 2, 3])
    assert set(scores) == {0, 1, 2, 3} and scores[3] == 0.0  # holds none of the words
    everyone = dict(store.keyword.search("red apple", 10))
    assert all(scores[doc] == pytest.approx(everyone[doc]) for doc in everyone)
    assert store.keyword.scores("red apple", [2]) == pytest.approx({2: everyone[2]})  # alone, the same score
    assert store.keyword.scores("red apple", []) == {}
    many = store.keyword.scores("apple", range(1200))  # more ids than one SQLite statement takes
    assert len(many) == 1200 and many[0] > 0 and many[1] > 0 and many[999] == 0.0


def test_keyword_index_follows_add_upsert_and_delete(store: DocumentStore) -> None:
    store.add(
        [Document("old wording here", external_id="a", metadata={"v": 1}), Document("untouched", external_id="b")]
    )
    store.add([Document("new phrasing here", external_id="a")])  # text changed: the old row and its words go
    assert _found(store, "wording") == [] and _found(store, "phrasing") == [2]
    store.add([Document("untouched", external_id="b", metadata={"v": 2})])  # same text: row kept, metadata replaced
    assert _found(store, "untouched") == [1] and store.get([1])[1].metadata == {"v": 2}
    store.delete([2])
    assert _found(store, "here phrasing") == []
    _keyword_index_holds_the_documents(store)


def test_keyword_search_keeps_to_the_ids_filters_allow(store: DocumentStore) -> None:
    store.add(
        [
            Document("rain and wind", metadata={"lang": "en", "year": 2020}),
            Document("rain in spain", metadata={"lang": "es", "year": 2021}),
            Document("rain again", metadata={"lang": "en", "year": 2022}),
        ]
    )
    assert sorted(_found(store, "rain", filters=[Condition("lang", "=", "en")])) == [0, 2]
    assert _found(store, "rain", filters=[Condition("lang", "=", "en"), Condition("year", ">", 2020)]) == [2]
    assert _found(store, "rain", filters=[Condition("text", "like", "%spain%")]) == [1]  # a column the FTS shares
    assert sorted(_found(store, "rain", filters=[Condition("id", "in", (0, 1))])) == [0, 1]
    assert _found(store, "rain", k=1, filters=[Condition("year", ">", 2020)]) == [2]  # 'rain again' is shortest


@pytest.mark.parametrize(
    "query",
    [
        '"unbalanced quote',
        'say "near" NEAR(a b) AND OR NOT',
        "prefix* ^start col:umn -minus +plus (paren",
        "{braces} [brackets] a.b, c;d!? 100% $5 @x #y &z |w ~v `tick` \\back",
        "naïve café — 東京 ☃ \u200b emoji 🙂",
        "AND",
        "NOT NOT",
        "*",
        "under_score",
    ],
)
def test_user_text_is_never_fts_syntax(store: DocumentStore, query: str) -> None:
    store.add(_docs("near the start of the column", "minus plus braces brackets", "naïve café in 東京", "and not"))
    assert isinstance(store.keyword.search(query, 10), list)
    assert set(store.keyword.scores(query, [0, 1, 2, 3])) == {0, 1, 2, 3}


def test_operator_words_are_searched_for_as_words(store: DocumentStore) -> None:
    store.add(_docs("near the start", "far away", "and then not"))
    assert _found(store, "NEAR") == [0]
    assert _found(store, "AND") == [2] and _found(store, "not") == [2]
    assert _found(store, "cafe naive") == []  # words the documents lack match nothing, whatever their accents
    store.add(_docs("naïve café"))
    assert _found(store, "cafe naive") == [3]  # diacritics folded on both sides


def test_a_text_without_words_matches_nothing(store: DocumentStore) -> None:
    store.add(_docs("something"))
    assert store.keyword.search("?! -- ...", 10) == [] and store.keyword.scores("?! -- ...", [0]) == {0: 0.0}


def test_a_store_written_before_keyword_search_gains_it_when_opened_for_writing(tmp_path: Path) -> None:
    path = tmp_path / "documents.db"
    store = DocumentStore(path, writable=True)
    store.add(_docs("first text", "second text"))
    store.db["documents"].disable_fts()  # as versions before keyword search wrote it
    store.close()
    reader = DocumentStore(path)
    assert not reader.keyword.exists()
    with pytest.raises(MissingKeywordIndexError, match="has no keyword index"):
        reader.keyword.search("text", 10)
    reader.close()
    writer = DocumentStore(path, writable=True)
    assert writer.keyword.exists()
    assert sorted(_found(writer, "text")) == [0, 1]  # filled from the stored documents
    writer.add(_docs("third text"))
    assert sorted(_found(writer, "text")) == [0, 1, 2]
    _keyword_index_holds_the_documents(writer)
    writer.close()


def test_an_upgraded_older_store_holds_every_document_in_its_keyword_index(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _legacy_store(path)
    store = DocumentStore(path, writable=True)
    assert not store.keyword.exists()  # an older store is upgraded before it gains one
    store.upgrade()
    assert store.keyword.exists()
    assert sorted(_found(store, "thrice")) == [2, 4, 5] and sorted(_found(store, "same")) == [0, 3]
    _keyword_index_holds_the_documents(store)
    store.close()


@pytest.mark.parametrize(
    "bad",
    [
        Document("half a \ud800 character"),
        Document("fine", external_id="id-\udc80"),
        Document("fine", metadata={"tags": ["ok", "x\ud800"]}),
    ],
)
def test_a_lone_surrogate_anywhere_in_a_document_is_refused_before_anything_is_written(
    store: DocumentStore, bad: Document
) -> None:
    store.add([Document("kept")])
    with pytest.raises(IndexerError, match=r"document 2 holds a lone surrogate \(\\ud[89a-f][0-9a-f]{2}\)"):
        store.add([Document("fine too"), bad])
    assert store.count() == 1


@pytest.mark.parametrize(
    "metadata", [{"day": datetime.date(2020, 1, 2)}, {"tags": {"a", "b"}}, {"raw": b"x"}]
)
def test_metadata_json_cannot_hold_is_refused_in_one_line_before_anything_is_written(
    store: DocumentStore, metadata: dict
) -> None:
    """A date in a LangChain document's metadata raised json's TypeError."""
    store.add([Document("kept")])
    with pytest.raises(IndexerError, match=r"document 2 has metadata JSON cannot hold \(.*\); give text, numbers"):
        store.add([Document("fine too"), Document("odd", metadata=metadata)])
    assert store.count() == 1


@pytest.mark.parametrize(
    ("metadata", "key"),
    [
        ({1: "a", "1": "b"}, "1"),  # was stored as {"1": "a", "1": "b"}, one key twice, read back as {"1": "b"}
        ({"a": [{"b": {None: 1}}]}, "None"),
        ({"pair": {(1, 2): "x"}}, r"\(1, 2\)"),
        ({True: "yes"}, "True"),
    ],
)
def test_a_metadata_key_that_is_not_text_is_refused_in_one_line_before_anything_is_written(
    store: DocumentStore, metadata: dict, key: str
) -> None:
    store.add([Document("kept")])
    with pytest.raises(IndexerError, match=rf"document 2 has a metadata key that is not text \({key}\); JSON's keys"):
        store.add([Document("fine too"), Document("odd", metadata=metadata)])
    assert store.count() == 1


@pytest.mark.parametrize("external_id", [5, 1.5, True, ["a"], ("a",), b"a"])
def test_an_external_id_that_is_not_a_str_is_refused_in_one_line_before_anything_is_written(
    store: DocumentStore, external_id: object
) -> None:
    """An int id was stored as text, so adding it again called the store corrupt (UNIQUE constraint failed); a list
    raised TypeError, bytes were called metadata."""
    store.add([Document("kept", external_id="5")])
    with pytest.raises(IndexerError, match=r"document 2 has an external id of type \w+, not str; give ids as text"):
        store.add([Document("fine too"), Document("odd", external_id=external_id)])  # type: ignore[arg-type]
    assert store.count() == 1


@pytest.mark.parametrize("external_id", ["", " ", "\t\n"])
def test_a_blank_external_id_is_refused_in_one_line_before_anything_is_written(
    store: DocumentStore, external_id: str
) -> None:
    """"" was stored as an id that no `delete --external` could name, and a .jsonl or .csv record's empty id field
    is refused already (reading/corpus.py): every write refuses it alike, a cluster's too."""
    store.add([Document("kept", external_id="5")])
    with pytest.raises(IndexerError) as refused:
        store.add([Document("fine too"), Document("odd", external_id=external_id)])
    assert str(refused.value) == (
        f"document 2 has a blank external id ({external_id!r}), which no delete or upsert could name; give it an id "
        "with text in it, or None for no id"
    )
    assert store.count() == 1


def test_nan_in_metadata_is_refused_before_anything_is_written(store: DocumentStore) -> None:
    store.add([Document("kept")])
    with pytest.raises(IndexerError, match="document 2 holds NaN or Infinity in its metadata"):
        store.add([Document("fine too"), Document("odd", metadata={"x": [1.0, float("inf")]})])
    assert store.count() == 1


def test_a_store_used_from_another_thread_says_so_instead_of_calling_itself_corrupt(store: DocumentStore) -> None:
    import threading

    store.add([Document("kept")])
    raised: list[Exception] = []
    worker = threading.Thread(target=lambda: _record(raised, lambda: store.get([0])))
    worker.start()
    worker.join()
    assert len(raised) == 1 and isinstance(raised[0], IndexerError)
    assert "open one SearchEngine per thread" in str(raised[0]) and "corrupt" not in str(raised[0])


def _record(raised: list[Exception], call) -> None:  # noqa: ANN001
    try:
        call()
    except Exception as exc:  # noqa: BLE001 (the test looks at what was raised)
        raised.append(exc)


def test_keyword_bound_is_the_most_bm25_any_document_reaches_from_the_words_idf(store: DocumentStore) -> None:
    # Six documents of two words each (every length the average): one holding a word once scores its IDF exactly,
    # and the bound is (k1 + 1) * the sum of the searched words' IDFs, whatever the documents hold.
    store.add(_docs("red apple", "green pear", "red car", "blue sky", "grey rock", "tall tree"))
    idf_red, idf_apple = math.log((6 - 2 + 0.5) / 2.5), math.log((6 - 1 + 0.5) / 1.5)
    assert dict(store.keyword.search("apple", 10)) == pytest.approx({0: idf_apple})
    assert store.keyword.bound("apple") == pytest.approx(2.2 * idf_apple)
    assert store.keyword.bound("red apple") == pytest.approx(2.2 * (idf_red + idf_apple))
    assert store.keyword.bound("apple apple") == pytest.approx(2 * 2.2 * idf_apple)  # a repeated word counts twice
    unseen = math.log((6 + 0.5) / 0.5)  # a word no document holds still counts: the query asked for it
    assert store.keyword.bound("apple zebra") == pytest.approx(2.2 * (idf_apple + unseen))
    assert store.keyword.bound("?!") == 0.0
    best = max(score for _, score in store.keyword.search("red apple red", 10))
    assert 0 < best < store.keyword.bound("red apple red")


@pytest.mark.parametrize("levels", [500, 5000])  # 500: no hit carrying it could be shown; 5000: json.dumps fails
def test_metadata_nested_too_deeply_is_refused_before_anything_is_written(store: DocumentStore, levels: int) -> None:
    deep: list = []
    for _ in range(levels):
        deep = [deep]
    store.add([Document("kept")])
    with pytest.raises(IndexerError, match="document 2 has metadata nested more than 64 levels deep; flatten it"):
        store.add([Document("fine"), Document("deep", metadata={"d": deep})])
    assert store.count() == 1


def test_a_row_with_metadata_nested_deeper_than_the_limit_is_read_without_it(store: DocumentStore) -> None:
    """An index written before the limit may hold such rows: reading them must not fail every query."""
    store.add([Document(text) for text in ("fine", "deep", "deeper", "a deep list")])
    left_out = '"d" nested more than 64 levels deep, left out; add the document again with flatter metadata to show it'
    beyond_python = "[" * 5000 + "]" * 5000  # more than json.loads reads: its fields are read one by one
    rows = {
        0: '{"lang": "en"}',
        1: '{"lang": "de", "d": ' + "[" * 100 + "]" * 100 + "}",
        2: '{"d": ' + beyond_python + ', "lang": "fr", "note": "]]\\"{"}',
        3: beyond_python,
    }
    for row, metadata in rows.items():
        store.documents.db.execute("UPDATE documents SET metadata = ? WHERE id = ?", [metadata, row])
    read = store.get(list(rows))
    assert read[0].metadata == {"lang": "en"}
    assert read[1].metadata == {"lang": "de", "unreadable_metadata": left_out}
    assert read[2].metadata == {"lang": "fr", "note": ']]"{', "unreadable_metadata": left_out}
    assert read[3].metadata == {  # the same whether this Python's json.loads reads it (3.12) or not (3.11)
        "unreadable_metadata": "nested more than 64 levels deep; add the document again with flatter metadata to show it"
    }
    stored = store.documents.db.execute("SELECT metadata FROM documents WHERE id = 1").fetchone()[0]
    assert stored == rows[1]  # what is stored is kept


def test_a_writer_keeps_a_larger_page_cache_than_a_reader(tmp_path: Path) -> None:
    """An add inserts into the index of text hashes at random places: the writer's cache keeps those pages (see
    store_connection.WRITER_CACHE_KIB); a reader keeps SQLite's default."""
    from searchengine.indexer.tables.store_connection import WRITER_CACHE_KIB

    writer = DocumentStore(tmp_path / "documents.db", writable=True)
    writer.add(_docs("one", "two"))
    assert writer.db.execute("PRAGMA cache_size").fetchone()[0] == -WRITER_CACHE_KIB
    reader = DocumentStore(tmp_path / "documents.db")
    assert (
        reader.db.execute("PRAGMA cache_size").fetchone()[0]
        == sqlite3.connect(":memory:").execute("PRAGMA cache_size").fetchone()[0]
    )
    reader.close()
    writer.close()
