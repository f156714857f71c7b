"""Long documents as passages through the engine: found by their tail, returned once with the passage that
matched, filtered, deleted, upserted and compacted whole, and never reusing an id. (Dense mode: passages are the
dense side's; the keyword side indexes whole documents. The last test covers hybrid mode.)"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from searchengine import BuildSettings, Document, SearchEngine
from searchengine.encoding.encoder import Encoder
from tests.conftest import WORDS

TAIL = "the rocket flew past the moon toward a distant planet"


def _filler(words: int, seed: int) -> str:
    rng = random.Random(seed)
    sentences = [" ".join(rng.choice(WORDS) for _ in range(11)) + "." for _ in range(words // 11)]
    return " ".join(sentences)


def _long(seed: int = 0, tail: str = TAIL) -> str:
    """About 300 tokens of unrelated sentences, then `tail`: five or more passages of the tiny model's 62 tokens."""
    return f"{_filler(300, seed)} {tail}."


def _corpus() -> list[Document]:
    short = [Document(_filler(22, 100 + i), metadata={"kind": "short", "n": i}, external_id=f"s{i}") for i in range(20)]
    long = [
        Document(
            _long(i, TAIL if i == 0 else _filler(11, 50 + i)), metadata={"kind": "long", "n": i}, external_id=f"l{i}"
        )
        for i in range(3)
    ]
    return short + long


@pytest.fixture(params=["Flat", "HNSW32"])
def engine(request: pytest.FixtureRequest, tmp_path: Path, tiny_encoder: Encoder) -> SearchEngine:
    return SearchEngine.build(
        _corpus(),
        tmp_path / "idx",
        BuildSettings(index=request.param, passages=True),
        encoder=tiny_encoder,
    )


def _vector_ids(engine: SearchEngine) -> set[int]:
    return {int(i) for ids, _ in engine.stored_vectors() for i in ids} - {int(i) for i in engine.tombstones}


def test_a_long_document_is_found_by_a_phrase_in_its_tail(engine: SearchEngine) -> None:
    [best] = engine.search(TAIL, k=1, mode="dense")
    assert best.external_id == "l0"
    assert TAIL in best.passage and best.span is not None and best.span[1] == len(best.text)
    assert best.snippet().startswith("…") and "\n" not in best.snippet()


def test_without_passages_the_tail_is_never_embedded(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = SearchEngine.build(_corpus(), tmp_path / "idx", BuildSettings(passages=False), encoder=tiny_encoder)
    assert engine.last_report.split == 0 and engine.last_report.truncated == 3
    assert engine.info().vectors == engine.info().documents == 23
    assert all(hit.span is None for hit in engine.search(TAIL, k=23, mode="dense"))


def test_documents_and_vectors_are_counted_apart(engine: SearchEngine) -> None:
    info = engine.info()
    assert info.documents == 23 and info.vectors > 23 + 3 * 4
    assert info.passages is not None and (info.passages.tokens, info.passages.overlap) == (62, 15)
    assert engine.last_report.split == 3 and engine.last_report.vectors == info.vectors
    assert len(_vector_ids(engine)) == info.vectors


def test_each_document_comes_back_once_and_k_are_filled(engine: SearchEngine) -> None:
    for k in (1, 3, 10, 23, 50):
        hits = engine.search("rocket moon planet", k=k, mode="dense")
        assert len(hits) == min(k, 23)
        assert len({hit.id for hit in hits}) == len(hits)
        assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


def test_a_document_scores_by_its_best_passage(engine: SearchEngine, tiny_encoder: Encoder) -> None:
    [best] = engine.search(TAIL, k=1, mode="dense")
    start, end = best.span
    expected = float(engine.encode([TAIL])[0] @ engine.encode([best.text[start:end]])[0])
    assert best.score == pytest.approx(expected, abs=1e-4)


def test_filters_reach_every_passage(engine: SearchEngine) -> None:
    [hit] = engine.search(TAIL, k=5, where=["kind=long", "n=0"], mode="dense")
    assert hit.external_id == "l0" and TAIL in hit.passage
    hits = engine.search(TAIL, k=30, where="kind=long", mode="dense")
    assert sorted(hit.external_id for hit in hits) == ["l0", "l1", "l2"]
    assert all(hit.external_id != "l0" for hit in engine.search(TAIL, k=30, where="kind=short", mode="dense"))


def test_delete_drops_every_passage(engine: SearchEngine) -> None:
    before = engine.info().vectors
    engine.delete(external_ids=["l0"])
    assert engine.info().documents == 22 and engine.info().vectors < before - 4
    assert len(_vector_ids(engine)) == engine.info().vectors
    assert all(hit.external_id != "l0" for hit in engine.search(TAIL, k=22, mode="dense"))
    engine.compact()
    assert len(engine.tombstones) == 0 and {int(i) for ids, _ in engine.stored_vectors() for i in ids} == _vector_ids(
        engine
    )


def test_an_upsert_with_a_new_text_replaces_every_passage(engine: SearchEngine) -> None:
    engine.add([Document("a short text now", external_id="l0")])
    assert engine.info().documents == 23
    assert len(_vector_ids(engine)) == engine.info().vectors
    [hit] = engine.search(TAIL, k=1, where="external_id=l0", mode="dense")
    assert hit.text == "a short text now" and hit.span is None
    engine.add([Document(_long(0), external_id="s0")])  # and a short one becomes long
    [hit] = engine.search(TAIL, k=1, where="external_id=s0", mode="dense")
    assert hit.span is not None and TAIL in hit.passage


def test_passage_ids_meet_no_document_or_tombstone(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = SearchEngine.build(
        _corpus(),
        tmp_path / "idx",
        BuildSettings(index="HNSW32", passages=True),
        encoder=tiny_encoder,
    )
    engine.delete(external_ids=["l2"])  # the last document: its passages hold the largest ids, now tombstones
    stored = {int(i) for ids, _ in engine.stored_vectors() for i in ids}
    assert set(engine.tombstones) <= stored and max(engine.tombstones) == max(stored)
    engine.add([Document(_long(7)), Document("one more short one")])
    new = {int(i) for ids, _ in engine.stored_vectors() for i in ids} - stored
    assert len(new) == engine.last_report.vectors and min(new) > max(stored)
    documents = {hit.id for hit in engine.search("x", k=len(engine), mode="dense")}
    assert len(documents) == 24 and len(documents & new) == 2  # a document's first passage has its id


def test_add_keeps_the_index_setting(tmp_path: Path, tiny_encoder: Encoder) -> None:
    on = SearchEngine.create(tmp_path / "on", encoder=tiny_encoder, passages=True)
    on.add([Document(_long())])
    assert on.last_report.split == 1 and on.info().vectors > 1
    off = SearchEngine.build(["short"], tmp_path / "off", BuildSettings(passages=False), encoder=tiny_encoder)
    off.add([Document(_long())])
    assert off.last_report.split == 0 and off.last_report.truncated == 1 and off.info().vectors == 2


def test_an_index_with_whitening_and_a_trained_type_splits_too(tmp_path: Path, tiny_encoder: Encoder) -> None:
    documents = _corpus() + [Document(_filler(22, 200 + i)) for i in range(60)]
    engine = SearchEngine.build(
        documents,
        tmp_path / "idx",
        BuildSettings(index="IVF4,Flat", whiten_k=16, passages=True),
        encoder=tiny_encoder,
    )
    assert engine.last_report.split == 3
    assert engine.search(TAIL, k=1, mode="dense")[0].external_id == "l0"


def test_clustering_and_mining_compare_one_vector_per_document(engine: SearchEngine) -> None:
    engine.cluster("kmeans", k=3)
    members = [i for cluster in engine.clustering().clusters for i in cluster.member_ids]
    assert sorted(members) == sorted(hit.id for hit in engine.search("x", k=23, mode="dense"))
    pairs = engine.mine(top=300)
    ids = {i for pair in pairs for i in (pair.first_id, pair.second_id)}
    assert len(pairs) == 23 * 22 // 2 and ids == set(members)


def _drop_passages_table(path: Path) -> None:
    """Make the index look written before passages existed: its store has no passages table."""
    manifest_path = path / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    store = path / manifest["files"]["documents"]
    connection = sqlite3.connect(store)
    connection.execute("DROP TABLE passages")
    connection.commit()
    connection.execute("VACUUM")
    connection.close()
    manifest["sizes"]["documents"] = store.stat().st_size
    manifest.get("checksums", {}).pop("documents", None)
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")


def test_an_index_without_a_passages_table_opens_searches_and_grows(tmp_path: Path, tiny_encoder: Encoder) -> None:
    path = tmp_path / "old"
    SearchEngine.build(
        [Document("the cat sat on the mat", metadata={"n": 1}), Document("stock prices fell")],
        path,
        BuildSettings(passages=False),
        encoder=tiny_encoder,
    )
    _drop_passages_table(path)
    engine = SearchEngine.open(path, encoder=tiny_encoder)
    assert [hit.text for hit in engine.search("cat mat", k=1, where="n=1", mode="dense")] == ["the cat sat on the mat"]
    engine.cluster("kmeans", k=2)
    engine.add(["one more"])
    engine.delete(ids=[1])
    assert engine.info().documents == engine.info().vectors == 2
    hits = engine.search("one more", k=2, mode="dense")
    assert [hit.text for hit in hits] == ["one more", "the cat sat on the mat"]
    assert np.all([hit.span is None for hit in hits])


def test_hybrid_search_keeps_the_best_passage_of_a_long_document(engine: SearchEngine) -> None:
    """Both sides find the long document by its tail: one hit, the dense side's best passage as its span."""
    hits = engine.search(TAIL, k=5, mode="hybrid")
    assert len({hit.id for hit in hits}) == len(hits)
    best = hits[0]
    assert best.external_id == "l0" and set(best.found_by) == {"dense", "keyword"}
    assert best.span is not None and TAIL in best.passage
