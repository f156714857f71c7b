"""BM25 from statistics given from outside (global_bm25) against FTS5's own bm25(): a store scoring with its own
statistics gives bm25() exactly, and two stores scoring with their summed statistics give what one store of both
stores' rows gives (what a cluster's shards do)."""

from __future__ import annotations

import random

import sqlite_utils
from searchengine.indexer.query.global_bm25 import TermStatistics, bm25_scores, term_statistics
from searchengine.indexer.query.keyword_query import SearchedTerm, keyword_terms, match_expression, select_terms

WORDS = "the cat sat on mat running runs dog e_mail foo_bar garden plants planted café cafe".split()
QUERIES = ["cat running dog", "e_mail cat cat", "planting gardens foo_bar the", "zzz cat", "café", "the"]


def _store(rows: dict[int, str]) -> sqlite_utils.Database:
    db = sqlite_utils.Database(memory=True)
    db["documents"].insert_all([{"id": i, "text": text} for i, text in rows.items()], pk="id")
    db["documents"].enable_fts(["text"], fts_version="FTS5", tokenize="porter", create_triggers=True)
    return db


def _rows(count: int, seed: int) -> dict[int, str]:
    chooser = random.Random(seed)
    return {i: " ".join(chooser.choice(WORDS) for _ in range(chooser.randint(1, 12))) for i in range(count)}


def _terms(statistics: TermStatistics, query: str) -> list[SearchedTerm]:
    """The query's words as the keyword query keeps them, each once per repeat."""
    counts = keyword_terms(query)
    return [
        t for t in select_terms(counts, statistics.held(list(counts)), statistics.documents) for _ in range(t.repeats)
    ]


def _scores(db: sqlite_utils.Database, statistics: TermStatistics, query: str) -> dict[int, float]:
    phrases = [(statistics.tokens_of[t.word], statistics.idf(t.word)) for t in _terms(statistics, query)]
    return bm25_scores(db.conn, "documents_fts", phrases, statistics.average_length)


def _fts5(db: sqlite_utils.Database, query: str, documents: int) -> dict[int, float]:
    expression = match_expression(db.conn, query, "documents_fts", "porter", documents)
    select = "SELECT rowid, -bm25(documents_fts) FROM documents_fts WHERE documents_fts MATCH ?"
    return dict(db.execute(select, [expression]).fetchall()) if expression else {}


def test_own_statistics_give_fts5s_bm25() -> None:
    rows = _rows(300, 1)
    db = _store(rows)
    for query in QUERIES:
        statistics = term_statistics(db.conn, keyword_terms(query), "documents_fts", "porter", len(rows))
        assert statistics.rows == len(rows)
        mine, theirs = _scores(db, statistics, query), _fts5(db, query, len(rows))
        assert mine.keys() == theirs.keys() and theirs, query
        assert max(abs(mine[doc] - theirs[doc]) for doc in mine) < 1e-9, query


def test_summed_statistics_give_one_stores_bm25() -> None:
    rows = _rows(400, 2)
    whole = _store(rows)
    parts = [_store({i: text for i, text in rows.items() if i % 3 == part}) for part in range(3)]
    for query in QUERIES:
        words = keyword_terms(query)
        counted = [term_statistics(db.conn, words, "documents_fts", "porter", sum(1 for i in rows if i % 3 == p))
                   for p, db in enumerate(parts)]  # fmt: skip
        total = counted[0] + counted[1] + counted[2]
        assert (total.rows, total.documents) == (len(rows), len(rows))
        merged = {doc: score for db in parts for doc, score in _scores(db, total, query).items()}
        theirs = _fts5(whole, query, len(rows))
        assert merged.keys() == theirs.keys(), query
        assert max(abs(merged[doc] - theirs[doc]) for doc in merged) < 1e-9, query


def test_long_rows_phrases_and_repeats_give_fts5s_bm25() -> None:
    # rows of 1 to 20,000 tokens (a docsize varint of 1, 2 and 3 bytes), phrases held twice, reversed, apart
    filler = ["garden"] * 126 + ["plants"] * 140
    rows = {
        1: "e_mail cat",
        2: "mail e cat e mail",
        3: "e x mail e_mail e_mail",
        4: " ".join(filler[:126] + ["e", "mail"]),  # 128 tokens
        5: " ".join(filler + ["cat"] * 20 + ["foo", "bar"]),
        6: " ".join(["dog"] * 20_000 + ["e", "mail"]),
        7: "foo bar foo_bar bar foo",
        8: "the dog",
    }
    db = _store(rows)
    lengths = dict(db.execute("SELECT id, length(sz) FROM documents_fts_docsize").fetchall())
    assert {lengths[1], lengths[4], lengths[6]} == {1, 2, 3}
    for query in ["e_mail", "e_mail e_mail cat", "foo_bar cat dog", "mail e_mail garden", "dog cat"]:
        statistics = term_statistics(db.conn, keyword_terms(query), "documents_fts", "porter", len(rows))
        mine, theirs = _scores(db, statistics, query), _fts5(db, query, len(rows))
        assert mine.keys() == theirs.keys() and theirs, query
        assert max(abs(mine[doc] - theirs[doc]) for doc in mine) < 1e-9, query
        if query == "e_mail":
            assert mine.keys() == {1, 2, 3, 4, 6}
        phrases = [(statistics.tokens_of[t.word], statistics.idf(t.word)) for t in _terms(statistics, query)]
        within = bm25_scores(db.conn, "documents_fts", phrases, statistics.average_length, [6, 4, 2, 99])
        assert within == {doc: score for doc, score in mine.items() if doc in {2, 4, 6}}, query


def test_ids_empty_phrases_and_absent_words() -> None:
    rows = _rows(300, 3)
    db = _store(rows)
    statistics = term_statistics(db.conn, ["cat", "e_mail", "zzz"], "documents_fts", "porter", len(rows))
    cat, mail, absent = ((statistics.tokens_of[w], statistics.idf(w)) for w in ["cat", "e_mail", "zzz"])
    average = statistics.average_length
    every = bm25_scores(db.conn, "documents_fts", [cat, mail, cat], average)
    assert len(every) > 20
    ids = [*sorted(every)[::3], 10_000, -1, *sorted(every)[1::7]][::-1]  # unsorted, with ids no row has
    within = bm25_scores(db.conn, "documents_fts", [cat, mail, cat], average, ids)
    assert within == {doc: score for doc, score in every.items() if doc in set(ids)}
    assert bm25_scores(db.conn, "documents_fts", [cat, mail, cat], average, []) == {}
    assert bm25_scores(db.conn, "documents_fts", [((), 1.0), cat, mail, absent, cat], average) == every
    assert bm25_scores(db.conn, "documents_fts", [absent, ((), 2.0)], average) == {}
    assert bm25_scores(db.conn, "documents_fts", [], average) == {}


def test_a_word_of_several_tokens_no_row_holds() -> None:
    # a shard without any token of "e_mail" or "foo-bar": no rows, no error (an empty phrase search crashed here)
    db = _store({1: "cat sat", 2: "the dog"})
    statistics = term_statistics(db.conn, ["e_mail", "foo-bar", "cat"], "documents_fts", "porter", 2)
    assert statistics.phrase_documents == {"e_mail": 0, "foo-bar": 0, "cat": 1}
    phrases = [(statistics.tokens_of[w], statistics.idf(w)) for w in ["e_mail", "foo-bar", "cat"]]
    assert bm25_scores(db.conn, "documents_fts", phrases[:2], statistics.average_length) == {}
    assert bm25_scores(db.conn, "documents_fts", phrases, statistics.average_length, [1, 1, 2]).keys() == {1}
    assert _scores(db, statistics, "e_mail cat") == _fts5(db, "e_mail cat", 2)
