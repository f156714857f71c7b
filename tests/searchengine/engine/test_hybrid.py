"""Keyword and hybrid search through the API: the keyword index kept right by every write path (add, upsert,
delete, compact, an interrupted commit), indexes written before it, modes, filters on both sides, and hits that
say which side found them with both scores."""

from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from searchengine.indexer.commit.index_directory import file_checksum
from searchengine.indexer.tables.store import Document, DocumentStore

from searchengine import BuildSettings, SearchEngine, SearchEngineError
from searchengine.encoding.encoder import Encoder
from searchengine.engine.fusion import Fusion, fuse
from tests.format_one import downgrade_to_format_1

DOCUMENTS = [
    Document("the cat sat on the mat", metadata={"lang": "en"}, external_id="cat"),
    Document("a dog ran in the garden", metadata={"lang": "en"}, external_id="dog"),
    Document("stock prices fell as the market rate rose", metadata={"lang": "en"}, external_id="stock"),
    Document("bake the bread in a hot oven", metadata={"lang": "fr"}, external_id="bread"),
    Document("the cat ran after the dog", metadata={"lang": "fr"}, external_id="chase"),
    Document("snow and cold wind in the city", metadata={"lang": "en"}, external_id="snow"),
]


@pytest.fixture(params=["Flat", "HNSW32"])
def engine(request: pytest.FixtureRequest, tmp_path: Path, tiny_encoder: Encoder) -> SearchEngine:
    return SearchEngine.build(DOCUMENTS, tmp_path / "idx", BuildSettings(index=request.param), encoder=tiny_encoder)


def _keyword_ids(engine: SearchEngine, text: str, **options: object) -> list[str]:
    return sorted(hit.external_id for hit in engine.search(text, k=50, mode="keyword", **options))


def _check_keyword_index(engine: SearchEngine) -> None:
    """FTS5's own check that the keyword index of the current generation agrees with its documents (on a copy: the
    check is written as an INSERT, so it needs a writable database)."""
    copy = engine.path.parent / "check.db"
    shutil.copyfile(engine.directory.file(engine.manifest, "documents"), copy)
    connection = sqlite3.connect(copy)
    connection.execute("INSERT INTO documents_fts (documents_fts, rank) VALUES ('integrity-check', 1)")
    connection.close()


def test_keyword_mode_finds_documents_holding_a_word(engine: SearchEngine) -> None:
    hits = engine.search("cat", k=10, mode="keyword")
    assert sorted(hit.external_id for hit in hits) == ["cat", "chase"]
    assert all(hit.found_by == ("keyword",) and 0 < hit.score <= 1 and hit.keyword_score > 0 for hit in hits)
    assert all(hit.dense_score is None for hit in hits)
    assert engine.search("zebra", k=10, mode="keyword") == []
    assert engine.search("?!", k=10, mode="keyword") == []  # no words: nothing to match


def test_dense_mode_says_so_and_gives_the_cosine(engine: SearchEngine) -> None:
    hits = engine.search("cat", k=3, mode="dense")
    assert all(hit.found_by == ("dense",) and hit.score == hit.dense_score for hit in hits)
    assert all(hit.keyword_score is None for hit in hits)


@pytest.mark.parametrize(
    "fusion",
    [Fusion("rrf", rrf_k=60, depth=3), Fusion("minmax", dense_weight=0.3, depth=3), Fusion("bounded", 0.4, depth=3)],
)
def test_hybrid_fuses_both_sides_and_gives_every_hit_both_scores(engine: SearchEngine, fusion: Fusion) -> None:
    query = "the cat ran"
    dense = engine.search(query, k=3, mode="dense")
    keyword = engine.search(query, k=3, mode="keyword")
    every_cosine = {hit.id: hit.score for hit in engine.search(query, k=len(DOCUMENTS), mode="dense")}
    every_bm25 = {hit.id: hit.keyword_score for hit in engine.search(query, k=len(DOCUMENTS), mode="keyword")}
    hits = engine.search(query, k=3, mode="hybrid", fusion=fusion)
    bound = keyword[0].keyword_score / keyword[0].score  # keyword mode's score is BM25 over the query's bound
    expected = fuse([(h.id, h.score) for h in dense], [(h.id, h.keyword_score) for h in keyword], fusion, bound)[:3]
    assert [hit.id for hit in hits] == [doc for doc, _ in expected]
    assert [hit.score for hit in hits] == pytest.approx([score for _, score in expected])
    for hit in hits:
        assert hit.found_by == tuple(
            side for side, found in (("dense", dense), ("keyword", keyword)) if hit.id in {h.id for h in found}
        )
        assert hit.dense_score == pytest.approx(every_cosine[hit.id], abs=1e-5)  # found by keyword alone too
        assert hit.keyword_score == pytest.approx(every_bm25.get(hit.id, 0.0))  # 0 without any query word


def test_hybrid_finds_what_only_the_keyword_side_ranks_high(engine: SearchEngine) -> None:
    """The tiny random model barely knows meaning; the exact word still brings the document up in hybrid."""
    hits = engine.search("oven", k=2, mode="hybrid", fusion=Fusion("rrf", depth=2))
    assert "bread" in [hit.external_id for hit in hits]
    assert next(hit for hit in hits if hit.external_id == "bread").found_by[-1] == "keyword"


def test_filters_apply_to_both_sides(engine: SearchEngine) -> None:
    assert _keyword_ids(engine, "cat dog", where=["lang=fr"]) == ["chase"]
    hits = engine.search("cat dog", k=10, where={"lang": "fr"}, mode="hybrid")
    assert sorted(hit.external_id for hit in hits) == ["bread", "chase"]
    assert engine.search("cat", k=10, where=["lang=de"], mode="keyword") == []
    with pytest.raises(SearchEngineError, match="no document has a field 'colour'"):
        engine.search("cat", k=10, where={"colour": "red"}, mode="keyword")


def test_search_batch_answers_each_query_as_search_does(engine: SearchEngine) -> None:
    """The same hits, and scores equal to float rounding (a batch of 3 or more is scored as one matrix product,
    a single query by a scan: searchengine.indexer.vectors.exact_batches)."""
    queries = ["cat", "bread oven", "market"]
    for mode in ("keyword", "hybrid"):
        batch, alone = engine.search_batch(queries, k=3, mode=mode), [engine.search(q, k=3, mode=mode) for q in queries]
        for together, single in zip(batch, alone, strict=True):
            assert [replace(hit, score=0.0, dense_score=None) for hit in together] == [
                replace(hit, score=0.0, dense_score=None) for hit in single
            ]
            for name in ("score", "dense_score"):
                got, expected = [getattr(hit, name) for hit in together], [getattr(hit, name) for hit in single]
                assert got == pytest.approx(expected, abs=1e-6)


def test_an_unknown_mode_is_refused(engine: SearchEngine) -> None:
    with pytest.raises(SearchEngineError, match="unknown search mode 'sparse'; use one of dense, keyword, hybrid"):
        engine.search("cat", mode="sparse")


def test_the_keyword_index_follows_add_upsert_and_delete(engine: SearchEngine) -> None:
    engine.add([Document("a cat in a hat", external_id="hat")])
    assert _keyword_ids(engine, "cat") == ["cat", "chase", "hat"]
    engine.add([Document("a bat in a hat", external_id="hat")])  # text changed: the old words go
    assert _keyword_ids(engine, "cat") == ["cat", "chase"] and _keyword_ids(engine, "bat") == ["hat"]
    engine.add([Document("a bat in a hat", metadata={"lang": "de"}, external_id="hat")])  # same text, new metadata
    assert _keyword_ids(engine, "bat", where=["lang=de"]) == ["hat"]
    engine.delete(external_ids=["chase"])  # HNSW keeps its vector as a tombstone: never found by either side
    assert _keyword_ids(engine, "cat") == ["cat"]
    assert "chase" not in {hit.external_id for hit in engine.search("the cat ran after the dog", k=10)}
    _check_keyword_index(engine)


def test_compact_keeps_the_keyword_index(engine: SearchEngine) -> None:
    engine.delete(external_ids=["dog"])
    engine.compact()
    assert _keyword_ids(engine, "dog") == ["chase"]
    _check_keyword_index(engine)


def test_an_interrupted_commit_keeps_the_previous_keyword_index(
    engine: SearchEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt  # a Ctrl-C just before the store's commit: the write never counts

    monkeypatch.setattr(DocumentStore, "commit", interrupted)
    with pytest.raises(KeyboardInterrupt):
        engine.add([Document("a cat in a hat", external_id="hat")])
    with pytest.raises(KeyboardInterrupt):
        engine.delete(external_ids=["cat"])
    monkeypatch.undo()
    reopened = SearchEngine.open(engine.path, encoder=engine.encoder)
    assert _keyword_ids(reopened, "cat") == ["cat", "chase"]
    assert len(reopened) == len(DOCUMENTS)
    _check_keyword_index(reopened)


def _drop_keyword_index(path: Path) -> None:
    """Make the index at `path` one written before keyword search (so before segments too, format 1): its store
    without the FTS table."""
    downgrade_to_format_1(path)
    manifest_path = path / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    store = path / manifest["files"]["documents"]
    connection = sqlite3.connect(store)
    connection.executescript(
        "DROP TRIGGER documents_ai; DROP TRIGGER documents_ad; DROP TRIGGER documents_au; DROP TABLE documents_fts;"
    )
    connection.close()
    manifest["sizes"]["documents"] = store.stat().st_size
    manifest["checksums"]["documents"] = file_checksum(store)
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")


def test_an_index_without_the_keyword_index_searches_dense_and_says_how_to_add_it(
    engine: SearchEngine, tiny_encoder: Encoder
) -> None:
    _drop_keyword_index(engine.path)
    old = SearchEngine.open(engine.path, encoder=tiny_encoder)
    assert not old.has_keyword_index and old.default_mode == "dense"
    assert [hit.found_by for hit in old.search("cat", k=2)] == [("dense",), ("dense",)]
    for mode in ("keyword", "hybrid"):
        with pytest.raises(SearchEngineError, match=r"no keyword index .* `searchengine compact --index-dir "):
            old.search("cat", mode=mode)
    with pytest.raises(SearchEngineError, match=r"default mode, dense, fuses nothing: add mode='hybrid'"):
        old.search("cat", fusion=Fusion("rrf"))  # a fusion the default mode would ignore
    assert old.compact() == 0  # nothing dropped; the keyword index added
    assert old.has_keyword_index and old.default_mode == "hybrid"
    assert old.search("cat", k=2, fusion=Fusion("rrf"))[0].found_by == ("dense", "keyword")
    assert _keyword_ids(old, "cat") == ["cat", "chase"]
    _check_keyword_index(old)


def test_an_index_without_the_keyword_index_gains_it_on_its_next_write(
    engine: SearchEngine, tiny_encoder: Encoder
) -> None:
    _drop_keyword_index(engine.path)
    old = SearchEngine.open(engine.path, encoder=tiny_encoder)
    old.add([Document("a cat in a hat", external_id="hat")])
    assert _keyword_ids(old, "cat") == ["cat", "chase", "hat"]
    _check_keyword_index(old)


def test_min_score_keeps_only_hits_scored_at_least_that_in_every_mode(engine: SearchEngine) -> None:
    for mode in ("dense", "keyword", "hybrid"):
        every = engine.search("the cat ran", k=6, mode=mode)
        assert all(-1 <= hit.score <= 1 for hit in every)  # each mode's scale is fixed: cosine, or 0..1
        threshold = every[1].score
        kept = engine.search("the cat ran", k=6, mode=mode, min_score=threshold)
        assert [hit.id for hit in kept] == [hit.id for hit in every if hit.score >= threshold]
        assert engine.search("the cat ran", k=6, mode=mode, min_score=1.01) == []


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "0.5", True])
def test_a_min_score_that_is_not_a_number_is_refused_in_one_line(engine: SearchEngine, bad: object) -> None:
    with pytest.raises(SearchEngineError, match="min_score must be a number"):
        engine.search("cat", min_score=bad)


def test_bounded_hybrid_scores_nonsense_low_where_minmax_gives_it_half(engine: SearchEngine) -> None:
    bounded = engine.search("zzzxqv qqq", k=1, mode="hybrid")[0]
    minmax = engine.search("zzzxqv qqq", k=1, mode="hybrid", fusion=Fusion("minmax"))[0]
    assert minmax.score >= 0.5  # min-max raises the best of any list to 1
    assert bounded.score == pytest.approx(max(0.0, bounded.dense_score) / 2)  # no word matched: half the cosine
