"""A cluster index on a simulated three-node Ray cluster (ray.cluster_utils.Cluster), against one ordinary index of
the same documents: the build (each copy writes its own rows), search in every mode (same ids and scores), routed
writes committed on every copy, and the faults: a copy that was away, a shard with no live copy, a build that dies,
a node removed. The tests run in order on one cluster and one cluster index, each leaving it whole for the next."""

from __future__ import annotations

import datetime
import itertools
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from searchengine.indexer.query.filter_sql import Condition
from searchengine.indexer.tables.documents import Document

from searchengine.cluster import (
    ActorCalls,
    ClusterBuildSettings,
    ClusterError,
    ClusterIndex,
    CopyFolderError,
    ShardCopy,
    ShardsUnavailableError,
    build_cluster,
)
from searchengine.cluster.call_latencies import LATENCY_SAMPLES_NEEDED
from searchengine.cluster.cluster_build import remove_build
from searchengine.cluster.copy_actors import start_copy_actor
from searchengine.cluster.copy_calls import CALL_TIMEOUT
from searchengine.cluster.manifest import CopyPlace, read_manifest
from searchengine.cluster.node_folders import remove_on_their_nodes
from searchengine.cluster.routing import shard_of
from searchengine.cluster.statistics_cache import StatisticsCache
from searchengine.cluster.write_counts import WriteCounts
from searchengine.engine.index_reader import IndexReader
from searchengine.engine.index_writer import IndexWriter
from searchengine.engine.search_engine import SearchEngine
from searchengine.errors import SearchEngineError
from tests.searchengine.cluster.conftest import COUNTS, corpus, counted_writes, one_index

ray = pytest.importorskip("ray")

SHARDS = 3
QUERIES = ["the cat sat on the mat", "stock market price fell", "rain and snow in the cold city", "python code bug"]


@pytest.fixture(scope="module")
def built(ray_cluster: Any, tiny_model: Path, tiny_encoder: Any, tmp_path_factory: pytest.TempPathFactory) -> dict:  # noqa: ANN401
    """A cluster index of 3 shards, 2 copies each, and one index of the same 240 documents."""
    folder = tmp_path_factory.mktemp("cluster")
    documents = corpus(240)
    settings = ClusterBuildSettings(
        shards=SHARDS,
        copies=2,
        model=str(tiny_model),
        local_root=str(folder / "nodes"),
        encoder_options={"precision": "fp32"},
        batch_size=64,
    )
    index, report = build_cluster(folder / "cluster.json", documents, settings)
    index._encoder = tiny_encoder  # the same model, already loaded: queries encode as the reference's do
    reference = one_index(folder / "one", documents, tiny_encoder)
    return {"index": index, "report": report, "folder": folder, "reference": reference, "settings": settings}


@pytest.fixture(autouse=True)
def left_whole(built: dict) -> Iterator[None]:
    """After each test, the cluster index is whole again for the next: its own calls, starter and stopper, and every
    copy serving (heal run until it does). A test that failed half-way left a copy not serving or a stopper of its
    own, and each test after it, on the same cluster, failed too (one failure in CI read as six)."""
    yield
    index = built["index"]
    index.calls, index.starter, index.stopper, index._replaced = ActorCalls(), start_copy_actor, None, []
    if not all(state.serving for states in index.copies for state in states):
        _healed(index)


def _reference(built: dict, tiny_encoder: Any) -> IndexReader:  # noqa: ANN401
    return IndexReader(built["reference"], tiny_encoder)


def assert_same_hits(cluster_hits: list, one_hits: list) -> None:
    """The same scores rank by rank (within 1e-5) and the same documents, but for the order of tied scores."""
    assert len(cluster_hits) == len(one_hits)
    for mine, theirs in zip(cluster_hits, one_hits):
        assert mine.score == pytest.approx(theirs.score, abs=1e-5)
        for side in ("dense_score", "keyword_score"):
            if getattr(theirs, side) is not None and mine.external_id == theirs.external_id:
                assert getattr(mine, side) == pytest.approx(getattr(theirs, side), abs=1e-5)
        assert mine.found_by == theirs.found_by or mine.external_id != theirs.external_id
    if one_hits:  # tied scores may come in either order, and the tie at the k-th place may be cut either way
        last = one_hits[-1].score
        above = lambda hits: sorted((-round(h.score, 5), h.external_id) for h in hits if h.score > last + 1e-5)  # noqa: E731
        assert above(cluster_hits) == above(one_hits)


def assert_same_as_one_index(index: ClusterIndex, reference: IndexReader, where: Any = None, k: int = 10) -> None:  # noqa: ANN401
    for mode in ("dense", "keyword", "hybrid"):
        answer = index.search_batch(QUERIES, k, where, mode=mode)
        assert (answer.answered, answer.partial) == (SHARDS, False)
        for cluster_hits, one_hits in zip(answer.hits, reference.search_batch(QUERIES, k, where, mode=mode)):
            assert_same_hits(cluster_hits, one_hits)
    vector = index.query_vectors(QUERIES[:1])[0] * 3.0  # any length: a given vector is normalised
    by_vector = index.search_by_vector(vector, k, where)
    assert (by_vector.answered, by_vector.partial) == (SHARDS, False)
    assert_same_hits(by_vector.hits[0], reference.search_by_vector(vector, k, where))


def test_build_writes_each_shard_on_its_own_nodes(built: dict) -> None:
    index, report = built["index"], built["report"]
    assert report.driver_rows_written == 0
    assert report.documents == 240 and sum(report.shard_documents) == 240
    status = index.status()
    assert status["documents"] == 240
    assert [shard["documents"] for shard in status["shards"]] == report.shard_documents
    local_root = Path(built["settings"].local_root)
    for shard in status["shards"]:
        nodes = [copy["node"] for copy in shard["copies"]]
        assert len(set(nodes)) == 2, "a shard's two copies sit on two nodes"
        for copy in shard["copies"]:
            assert Path(copy["folder"]).is_relative_to(local_root / copy["node"])
            assert copy["serving"] and copy["lag"] == 0
    assert read_manifest(built["folder"] / "cluster.json").placement == index.manifest.placement


def test_search_equals_one_index(built: dict, tiny_encoder: Any) -> None:  # noqa: ANN401
    reference = _reference(built, tiny_encoder)
    assert_same_as_one_index(built["index"], reference)
    assert_same_as_one_index(built["index"], reference, where=["lang=fr"], k=7)
    assert_same_as_one_index(built["index"], reference, k=300)  # more than there are documents


def test_a_request_a_copy_refuses_raises_its_own_one_line_error_as_one_index_does(
    built: dict, tiny_encoder: Any  # noqa: ANN401
) -> None:
    # Ray delivers a copy's error wrapped (RayTaskError, its message the copy's traceback with Ray's header); the
    # caller gets the copy's own error, as one index raises it, and the copies keep serving.
    index = built["index"]
    sequences = list(index.sequences)
    bad_filter = {"": 3}  # a metadata field no path can hold: refused by each shard's store
    with pytest.raises(SearchEngineError) as one:
        _reference(built, tiny_encoder).search_batch(QUERIES[:1], 5, bad_filter)
    with pytest.raises(SearchEngineError) as cluster:
        index.search_batch(QUERIES[:1], 5, bad_filter)
    assert (type(cluster.value), str(cluster.value)) == (type(one.value), str(one.value))
    with pytest.raises(SearchEngineError) as refused:
        index.add([Document("a text", external_id="not-a-number", metadata={"score": float("nan")})])
    message = str(refused.value)
    assert "ray::" not in message and "\n" not in message and "Traceback" not in message, message
    assert not any(type(error).__module__.startswith("ray") for error in (cluster.value, refused.value))
    assert index.sequences == sequences
    assert all(state.serving for states in index.copies for state in states)


def test_a_copy_never_opens_another_nodes_folder(built: dict) -> None:
    index = built["index"]
    place = index.manifest.placement[0][0]
    other = next(p for shard in index.manifest.placement for p in shard if p.node != place.node)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from searchengine.cluster.placement import live_nodes

    strategy = NodeAffinitySchedulingStrategy(live_nodes()[place.node], soft=False)
    actor = ray.remote(ShardCopy).options(num_cpus=0, scheduling_strategy=strategy)
    wrong = actor.remote(other.folder, 0, index.manifest.local_root)
    with pytest.raises(ray.exceptions.ActorDiedError, match=f"{CopyFolderError.__name__}: .* is not under"):
        ray.get(wrong.status.remote(), timeout=60)  # the actor refused in its creation, so it never opened it


def _ids_in_shard(shard: int, count: int, prefix: str) -> list[str]:
    return list(
        itertools.islice(
            (f"{prefix}-{i}" for i in itertools.count() if shard_of(f"{prefix}-{i}", SHARDS) == shard), count
        )
    )


def test_routed_writes_commit_on_every_copy(built: dict, tiny_encoder: Any) -> None:  # noqa: ANN401
    index = built["index"]
    writer = IndexWriter(built["reference"], tiny_encoder)
    added = [
        Document(f"the cat and the dog play in the garden {i}", metadata={"lang": "en"}, external_id=f"new-{i}")
        for i in range(6)
    ]
    upserted = [Document("a storm of snow over the moon", metadata={"lang": "fr"}, external_id="doc-3")]
    for documents in (added, upserted):
        receipt = index.add(documents)
        writer.add(documents)
        assert all(count == 2 for count in receipt.copies.values())
    receipt = index.delete(["doc-5", "doc-8", "no-such-document"])
    writer.delete(external_ids=["doc-5", "doc-8"])
    assert_same_as_one_index(index, _reference(built, tiny_encoder))
    sequences = index.ask_shards("sequence")
    assert {shard: result for shard, (_, result) in sequences.items()} == dict(enumerate(index.sequences))
    for shard in index.status()["shards"]:
        assert {copy["sequence"] for copy in shard["copies"]} == {shard["sequence"]}
        assert all(copy["lag"] == 0 for copy in shard["copies"])
    with pytest.raises(ClusterError, match="no external id"):
        index.add([Document("no id")])
    looked_up, answer = index.documents([Condition("external_id", "in", ("new-1", "doc-3", "doc-5"))])
    assert not answer.partial
    assert {(d.external_id, d.text) for d in looked_up} == {
        ("new-1", "the cat and the dog play in the garden 1"),
        ("doc-3", "a storm of snow over the moon"),
    }


class CountedCalls(ActorCalls):
    """Ray actor calls, counted by method."""

    def __init__(self) -> None:
        self.methods: Counter[str] = Counter()

    def start(self, handle: Any, method: str, *args: Any) -> Any:  # noqa: ANN401
        self.methods[method] += 1
        return super().start(handle, method, *args)


def _deeply_nested() -> dict:
    nested: dict = {}
    for _ in range(70):
        nested = {"in": nested}
    return nested


REFUSED_WRITES = {  # each after a good document, which must not be written either
    "no documents": [],
    "only an empty text": [Document("", external_id="refused-empty")],
    "a text that is not a str": [Document(5, external_id="refused-int-text")],  # type: ignore[arg-type]
    "None for a document": [None],
    "NaN in metadata": [Document("a text", metadata={"score": float("nan")}, external_id="refused-nan")],
    "Infinity in metadata": [Document("a text", metadata={"score": float("-inf")}, external_id="refused-inf")],
    "an id that is not a str": [Document("a text", external_id=5)],  # type: ignore[arg-type]
    "an id that is a list": [Document("a text", external_id=["refused-list"])],  # type: ignore[arg-type]
    "metadata JSON cannot hold": [Document("a text", metadata={"day": datetime.date(2020, 1, 2)}, external_id="d")],
    "a lone surrogate": [Document("half \ud800 a character", external_id="refused-surrogate")],
    "metadata nested too deeply": [Document("a text", metadata=_deeply_nested(), external_id="refused-deep")],
    "an empty id": [Document("a text", external_id="")],  # one index stored it as an id nothing could name
    "a blank id": [Document("a text", external_id="  ")],
}


@pytest.mark.parametrize("case", list(REFUSED_WRITES))
def test_a_write_one_index_refuses_the_cluster_refuses_with_its_error_before_sending_any_of_it(
    built: dict,
    tiny_encoder: Any,  # noqa: ANN401
    case: str,
) -> None:
    index = built["index"]
    good = [] if case in ("no documents", "only an empty text") else [Document("a good text", external_id=f"ok-{case}")]
    documents = good + REFUSED_WRITES[case]
    with pytest.raises(SearchEngineError) as one:
        IndexWriter(built["reference"], tiny_encoder).add(documents)
    sequences, calls = list(index.sequences), CountedCalls()
    index.calls = calls
    try:
        with pytest.raises(SearchEngineError) as cluster:
            index.add(documents)
    finally:
        index.calls = ActorCalls()
    assert (type(cluster.value), str(cluster.value)) == (type(one.value), str(one.value))
    assert "\n" not in str(cluster.value)
    assert not calls.methods, "refused before any copy was called"
    assert index.sequences == sequences
    assert {shard: held for shard, (_, held) in index.ask_shards("sequence").items()} == dict(enumerate(sequences))
    if good:
        found, _ = index.documents([Condition("external_id", "in", (f"ok-{case}",))])
        assert found == []


def test_a_write_with_a_document_without_an_id_names_it_as_one_index_numbers_documents(built: dict) -> None:
    """Numbered from 1, as every refusal of one index's add is (it said "document 0" of the first), and over HTTP
    too, where the ids are given with id_field."""
    index, calls = built["index"], CountedCalls()
    index.calls = calls
    try:
        with pytest.raises(ClusterError) as refused:
            index.add([Document("a text with an id", external_id="numbered-1"), Document("a text without one")])
    finally:
        index.calls = ActorCalls()
    assert str(refused.value) == (
        "document 2 has no external id: a cluster routes each document by its id, so give every document one "
        "(Document.external_id from Python, id_field over HTTP, --id-field on the command line)"
    )
    assert not calls.methods


def test_a_delete_of_a_lone_string_is_refused_as_one_index_refuses_it(built: dict, tiny_encoder: Any) -> None:  # noqa: ANN401
    """list("doc-1") is its letters: a delete of them removed other documents (one index's too)."""
    from searchengine.server.cluster.cluster_engine import ClusterEngine

    index, calls = built["index"], CountedCalls()
    with pytest.raises(SearchEngineError) as one:
        IndexWriter(built["reference"], tiny_encoder).delete(external_ids="doc-1")  # type: ignore[arg-type]
    index.calls = calls
    try:
        with pytest.raises(SearchEngineError) as cluster:
            index.delete("doc-1")  # type: ignore[arg-type]
        with pytest.raises(SearchEngineError) as served:  # the engine of the ingress's routes
            ClusterEngine(index).delete(external_ids="doc-1")  # type: ignore[arg-type]
    finally:
        index.calls = ActorCalls()
    said = "give a list of external ids, not the string 'doc-1'; write ['doc-1']"
    assert str(cluster.value) == str(served.value) == str(one.value) == said
    assert not calls.methods


def test_the_http_write_route_refuses_as_one_index_serves_it(built: dict, tiny_encoder: Any) -> None:  # noqa: ANN401
    """POST /documents of the app a Serve ingress serves (ClusterEngine) and of `serve` over one index: the same
    status and error for each bad write, nothing written; documents with their own vectors a cluster refuses (it
    embeds what it is sent), where it dropped the vectors."""
    import json
    import urllib.error
    import urllib.request

    from searchengine.server.app import create_app
    from searchengine.server.cluster.cluster_engine import ClusterEngine
    from searchengine.server.served_index import ServedIndex
    from tests.searchengine.server.conftest import running

    def refusal(url: str, body: dict) -> tuple[int, str]:
        request = urllib.request.Request(
            url + "/documents", json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=60)
        return refused.value.code, json.loads(refused.value.read())["error"]

    good = {"id": "http-ok", "text": "a good text"}
    bodies = [
        {"documents": [good, {"id": "http-nan", "text": "a text", "score": float("nan")}]},
        {"documents": [good, {"id": "http-empty", "text": " "}]},
        {"documents": [good, {"id": "http-number", "text": 5}]},
        {"documents": [good, {"id": ["http-list"], "text": "a text"}]},
    ]
    index = built["index"]
    sequences = list(index.sequences)
    engine = ClusterEngine(index)
    cluster, one = ServedIndex(engine.path, open_engine=lambda: engine), ServedIndex(built["reference"])
    try:
        with running(create_app(cluster)) as cluster_url, running(create_app(one)) as one_url:
            for body in bodies:
                body["id_field"] = "id"
                status, error = refusal(cluster_url, body)
                assert (status, error) == refusal(one_url, body)
                assert status == 400 and "\n" not in error
            status, error = refusal(cluster_url, {"documents": [good], "embeddings": [[0.5] * 32]})
            assert status == 400 and "leave out embeddings" in error
    finally:
        cluster.close()
        one.close()
    assert index.sequences == sequences
    assert index.documents([Condition("external_id", "in", ("http-ok",))])[0] == []


def test_a_filter_on_a_field_some_shards_lack_and_get_documents_answer_as_one_index(
    built: dict,
    tiny_encoder: Any,  # noqa: ANN401
) -> None:
    """A field one shard's documents have and the others' lack: every mode finds the document (before, the shards
    without it refused the search: "no document has a field"), a field no shard has is still refused as one index
    refuses it, and GET /documents of the ingress's app answers by ids and by filter (before: a 500)."""
    import json
    import urllib.request

    from searchengine.server.app import create_app
    from searchengine.server.cluster.cluster_engine import ClusterEngine
    from searchengine.server.served_index import ServedIndex
    from tests.searchengine.server.conftest import running

    index = built["index"]
    [colored] = _ids_in_shard(1, 1, "colored")
    index.add([Document("a red rocket over the moon", metadata={"color": "red"}, external_id=colored)])
    try:
        for mode in ("dense", "keyword", "hybrid"):
            answer = index.search_batch(["red rocket"], 5, {"color": "red"}, mode=mode)
            assert ([hit.external_id for hit in answer.hits[0]], answer.answered) == ([colored], SHARDS)
        with pytest.raises(SearchEngineError) as one:
            _reference(built, tiny_encoder).search_batch(["red rocket"], 5, {"no_such_field": "red"})
        with pytest.raises(SearchEngineError) as cluster:
            index.search_batch(["red rocket"], 5, {"no_such_field": "red"})
        assert type(cluster.value) is type(one.value) and "no document has a field 'no_such_field'" in str(one.value)
        assert [document.external_id for document in index.documents({"color": "red"})[0]] == [colored]
        engine = ClusterEngine(index)
        served = ServedIndex(engine.path, open_engine=lambda: engine)
        try:
            with running(create_app(served)) as url:
                with urllib.request.urlopen(f"{url}/documents?ids=doc-7&ids={colored}&ids=doc-3&ids=none") as got:
                    by_ids = json.loads(got.read())["documents"]
                with urllib.request.urlopen(f"{url}/documents?where=color%20%3D%20red") as got:
                    by_filter = json.loads(got.read())["documents"]
        finally:
            served.close()
        reference = _reference(built, tiny_encoder)
        expected = {document.external_id: document.text for document in reference.get(["doc-7", "doc-3"])}
        assert [(record["id"], record["text"]) for record in by_ids] == [
            ("doc-7", expected["doc-7"]), (colored, "a red rocket over the moon"), ("doc-3", expected["doc-3"])
        ]  # fmt: skip
        assert [(record["id"], record["metadata"]) for record in by_filter] == [(colored, {"color": "red"})]
    finally:
        index.delete([colored])


def test_a_filter_whose_value_one_shard_holds_in_another_kind_answers_as_one_index(built: dict) -> None:
    """A field that holds text in one shard's documents and numbers in another's: one index of both takes a filter of
    either kind (its field holds both), so the cluster does too, each shard whose values are all of the other kind
    matching nothing (before, that shard's refusal, "compares text with the field ..., which holds number", was the
    whole search's 400). A kind no shard holds is still refused as one index refuses it."""
    index = built["index"]
    [worded] = _ids_in_shard(1, 1, "kind-text")
    [numbered] = _ids_in_shard(2, 1, "kind-number")
    index.add([
        Document("a red rocket over the moon", metadata={"size": "large"}, external_id=worded),
        Document("a blue rocket over the sea", metadata={"size": 7}, external_id=numbered),
    ])  # fmt: skip
    try:
        for mode in ("dense", "keyword", "hybrid"):
            for where, expected in (
                ({"size": "large"}, worded), ({"size": 7}, numbered), ([Condition("size", "like", "lar%")], worded)
            ):  # fmt: skip
                answer = index.search_batch(["rocket"], 5, where, mode=mode)
                assert ([hit.external_id for hit in answer.hits[0]], answer.answered) == ([expected], SHARDS)
        assert [document.external_id for document in index.documents({"size": 7})[0]] == [numbered]
        with pytest.raises(SearchEngineError, match="'size contains ...' looks inside lists, but 'size' holds"):
            index.search_batch(["rocket"], 5, [Condition("size", "contains", "l")])  # no shard holds a list
    finally:
        index.delete([worded, numbered])


def test_a_write_one_index_takes_the_cluster_stores_as_one_index_does(built: dict, tiny_encoder: Any) -> None:  # noqa: ANN401
    index, writer = built["index"], IndexWriter(built["reference"], tiny_encoder)
    long_id = "odd-long-" + "x" * 5000
    documents = [
        Document("a key that is empty is kept", metadata={"": 1, "lang": "en"}, external_id="odd-key"),
        Document("the first text of an id given twice", external_id="odd-twice"),
        Document("", external_id="odd-blank"),  # left out, as one index leaves a blank text out
        Document("the second text of an id given twice", external_id="odd-twice"),
        Document("a document with a very long id", external_id=long_id),
    ]
    index.add(documents)
    writer.add(documents)
    wanted = [Condition("external_id", "in", ("odd-key", "odd-twice", "odd-blank", long_id))]
    stored = lambda found: sorted((d.external_id, d.text, d.metadata) for d in found)  # noqa: E731
    in_cluster, answer = index.documents(wanted)
    assert not answer.partial
    assert stored(in_cluster) == stored(_reference(built, tiny_encoder).documents(wanted))
    assert {d.external_id for d in in_cluster} == {"odd-key", "odd-twice", long_id}
    assert_same_as_one_index(index, _reference(built, tiny_encoder))


COUNTED = ("documents", "added", "replaced", "updated", "superseded", "vectors")
"""What one index's add reports and a cluster's must report alike (not repeats: a shard knows only its texts)."""


def test_a_write_s_report_counts_what_one_index_s_counts_and_a_delete_answers_as_one_index_s(
    built: dict,
    tiny_encoder: Any,  # noqa: ANN401
) -> None:
    """ClusterEngine (the ingress's engine) against one index: each add's counts, from the copies that committed
    it; a delete's ids (as many); a delete of an id no document has refused with one index's error, nothing
    deleted. It reported every document sent as added."""
    from searchengine.server.cluster.cluster_engine import ClusterEngine

    engine, writer = ClusterEngine(built["index"]), IndexWriter(built["reference"], tiny_encoder)
    reports = []
    for records in counted_writes("counted"):
        documents = [Document(record["text"], external_id=record["id"]) for record in records]
        mine, theirs = engine.add(documents), writer.add(documents)
        assert {name: getattr(mine, name) for name in COUNTED} == {name: getattr(theirs, name) for name in COUNTED}
        reports.append(mine)
    assert [(r.documents, r.added, r.updated, r.replaced, r.superseded) for r in reports] == COUNTS
    with pytest.raises(SearchEngineError) as one:
        writer.delete(external_ids=["counted-0", "no-such-document"])
    with pytest.raises(SearchEngineError) as cluster:
        engine.delete(external_ids=["counted-0", "no-such-document"])
    assert (type(cluster.value), str(cluster.value)) == (type(one.value), str(one.value))
    kept, _ = built["index"].documents([Condition("external_id", "in", ("counted-0",))])
    assert [document.external_id for document in kept] == ["counted-0"]  # nothing deleted
    gone = [f"counted-{n}" for n in range(4)]
    assert len(engine.delete(external_ids=gone)) == len(writer.delete(external_ids=gone)) == 4
    receipt = built["index"].delete(["counted-0", "counted-1"])  # ClusterIndex's own delete: sent again, no error
    assert receipt.counts.deleted == 0 and sum(receipt.copies.values()) > 0
    assert_same_as_one_index(built["index"], _reference(built, tiny_encoder))


def test_kept_term_statistics_skip_their_round_and_follow_every_write(built: dict, tiny_encoder: Any) -> None:  # noqa: ANN401
    index = built["index"]
    writer = IndexWriter(built["reference"], tiny_encoder)
    calls = CountedCalls()
    index.kept_statistics, index.calls = StatisticsCache(), calls
    try:
        assert_same_as_one_index(index, _reference(built, tiny_encoder))
        assert calls.methods["statistics"] == SHARDS, "the keyword search counts the words; the hybrid one reuses them"
        assert_same_as_one_index(index, _reference(built, tiny_encoder))
        assert calls.methods["statistics"] == SHARDS, "the same words again: no shard is asked"
        added = Document("the cat sat on the mat in the rain", metadata={"lang": "en"}, external_id="kept-1")
        index.add([added])
        writer.add([added])
        assert_same_as_one_index(index, _reference(built, tiny_encoder))
        assert calls.methods["statistics"] == SHARDS + 1, "only the shard written to is asked again"
    finally:
        index.kept_statistics, index.calls = None, ActorCalls()


def test_a_copy_that_was_away_catches_up(built: dict) -> None:
    index = built["index"]
    away, other = index.copies[1]
    ray.kill(away.handle)
    ids = _ids_in_shard(1, 3, "while-away")
    receipt = index.add([Document(f"written while a copy was away {i}", external_id=i) for i in ids])
    assert receipt.copies == {1: 1}
    assert not index.search("written while a copy was away", 5, mode="keyword").partial
    done = _healed(index)
    assert any("caught up" in line for line in done)
    assert away.serving and away.sequence == other.sequence == index.sequences[1]
    ray.kill(other.handle)  # now only the copy that was away holds shard 1: the writes must be in it
    answer = index.search("written while a copy was away", 20, mode="keyword")
    assert not answer.partial
    assert set(ids) <= {hit.external_id for hit in answer.hits[0]}
    _healed(index)
    assert all(copy["serving"] for shard in index.status()["shards"] for copy in shard["copies"])


def test_a_shard_without_a_live_copy_gives_a_flagged_partial_answer(built: dict) -> None:
    index = built["index"]
    for state in index.copies[0]:
        ray.kill(state.handle)
    answer = index.search("the cat sat on the mat", 10, mode="hybrid")
    assert answer.partial and answer.missing == (0,) and answer.answered == SHARDS - 1
    assert answer.hits[0] and all(shard_of(hit.external_id, SHARDS) != 0 for hit in answer.hits[0])
    with pytest.raises(ShardsUnavailableError, match="shard 0"):
        index.search("the cat sat on the mat", 10, mode="dense", all_shards=True)
    with pytest.raises(ShardsUnavailableError, match="no live copy"):  # a 503 over HTTP: retry once it has one
        index.add([Document("refused", external_id=_ids_in_shard(0, 1, "refused")[0])])
    _http_answers_partial_or_503(index)
    _a_delete_over_a_shard_without_a_live_copy_deletes_nothing(index)
    _healed(index)  # the copies' nodes are live: each starts again over its own folder
    assert not index.search("the cat sat on the mat", 10, mode="dense", all_shards=True).partial


def _a_delete_over_a_shard_without_a_live_copy_deletes_nothing(index: ClusterIndex) -> None:
    """The ingress's delete (ClusterEngine) of a stored id of a live shard with an id of shard 0, which has no live
    copy: refused whole (a 503: the shard's to fix), whether or not shard 0 holds that id, and the stored one kept;
    with an id no document of a live shard has, one index's 404, nothing deleted."""
    from searchengine.indexer.errors import UnknownDocumentError

    from searchengine.server.cluster.cluster_engine import ClusterEngine

    engine = ClusterEngine(index)
    (kept,), unknown = _ids_in_shard(1, 1, "kept-while-0-is-down"), _ids_in_shard(1, 1, "never-written")[0]
    index.add([Document("kept while shard 0 has no live copy", external_id=kept)])
    for other in (_ids_in_shard(0, 1, "doc")[0], _ids_in_shard(0, 1, "never-written")[0]):  # built, and not
        with pytest.raises(ShardsUnavailableError, match="shard 0 has no live copy"):
            engine.delete(external_ids=[kept, other])
    with pytest.raises(UnknownDocumentError, match=f"no document with external id {unknown}; nothing was deleted"):
        engine.delete(external_ids=[kept, unknown])
    stored, _ = index.documents([Condition("external_id", "in", (kept,))])
    assert [document.external_id for document in stored] == [kept]
    assert len(engine.delete(external_ids=[kept])) == 1


def _http_answers_partial_or_503(index: ClusterIndex) -> None:
    """The same over the server's HTTP API (the app a Serve ingress serves, on uvicorn) and searchengine.Client:
    a partial answer says so; one that asks for every shard gets a 503 naming the shard, raised by the Client as
    ShardsUnavailableError."""
    import json
    import urllib.error
    import urllib.request

    from searchengine.server.app import create_app
    from searchengine.server.client import Client
    from searchengine.server.cluster.cluster_engine import ClusterEngine
    from searchengine.server.served_index import ServedIndex
    from tests.searchengine.server.conftest import running

    engine = ClusterEngine(index)
    served = ServedIndex(engine.path, open_engine=lambda: engine)
    try:
        with running(create_app(served)) as url:
            client = Client(url)
            answer = client.search_records(["the cat sat on the mat"], 10, mode="hybrid")[0]
            assert answer["shards"] == {"asked": SHARDS, "answered": SHARDS - 1, "partial": True} and answer["hits"]
            with pytest.raises(ShardsUnavailableError, match="shard 0"):
                client.search("the cat sat on the mat", 10, mode="dense", all_shards=True)
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(url + "/search?q=the+cat&all_shards=true", timeout=60)
            assert refused.value.code == 503
            assert "shard 0" in json.loads(refused.value.read())["error"]
            write = {"documents": [{"id": _ids_in_shard(0, 1, "refused-http")[0], "text": "refused"}], "id_field": "id"}
            request = urllib.request.Request(
                url + "/documents", json.dumps(write).encode(), {"Content-Type": "application/json"}, method="POST"
            )
            with pytest.raises(urllib.error.HTTPError) as unwritten:  # the shard's to fix, not the request's: 503
                urllib.request.urlopen(request, timeout=60)
            assert unwritten.value.code == 503 and "no live copy" in json.loads(unwritten.value.read())["error"]
            vector = engine.encode(["the cat sat on the mat"])[0]
            by_vector = client.search_by_vector(vector, k=5)
            assert by_vector and all(shard_of(hit.external_id, SHARDS) != 0 for hit in by_vector)
    finally:
        served.close()


def test_a_build_that_dies_leaves_the_cluster_as_it_was(built: dict, tiny_model: Path) -> None:
    path = built["folder"] / "cluster.json"
    before = read_manifest(path)
    builds = lambda: {p.name for p in Path(built["settings"].local_root).glob("*/index/*")}  # noqa: E731
    folders = builds()

    def dying() -> Any:  # noqa: ANN401
        yield from corpus(100)  # more than the batch read before the copies start
        raise OSError("the corpus's disk went away")

    started: list[Any] = []

    def starter(place: Any, shard: int, local_root: str) -> Any:  # noqa: ANN401
        started.append(place)
        return start_copy_actor(place, shard, local_root)

    with pytest.raises(OSError, match="went away"):
        build_cluster(path, dying(), built["settings"], starter=starter)
    assert len(started) == SHARDS * 2, "every copy had started when the corpus failed"
    assert read_manifest(path) == before
    assert builds() == folders, "the dead build's folders were removed"


REFUSED_IN_A_BUILD = {
    "": "document 4 has a blank external id (''), which no delete or upsert could name",
    "  ": "document 4 has a blank external id ('  '), which no delete or upsert could name",
    "nan": "document 4 holds NaN or Infinity in its metadata",
    None: "document 4 has no external id: a cluster routes each document by its id",
}


@pytest.mark.parametrize("refused_id", list(REFUSED_IN_A_BUILD))
def test_a_build_refuses_a_document_a_write_refuses_in_one_line_numbered_in_its_input_and_changes_nothing(
    built: dict, refused_id: str | None
) -> None:
    """"" was called "no external id"; "  " or NaN metadata reached a copy, which refused it mid-build, inside the
    build's error, numbered within the copy's batch (document 3 for the 4th). Then the driver refused it as it routed
    it, once every copy and the embedding worker had started; now, among the first batch, before any starts."""
    path = built["folder"] / "cluster.json"
    before = read_manifest(path)
    builds = lambda: {p.name for p in Path(built["settings"].local_root).glob("*/index/*")}  # noqa: E731
    folders = builds()
    odd = Document("a text", metadata={"score": float("nan")} if refused_id == "nan" else None, external_id=refused_id)
    started: list[Any] = []
    with pytest.raises(SearchEngineError) as refused:
        build_cluster(path, [*corpus(3), odd], built["settings"], starter=lambda *copy: started.append(copy))
    assert str(refused.value).startswith(REFUSED_IN_A_BUILD[refused_id]) and "\n" not in str(refused.value)
    assert started == [], "refused before any copy started"
    assert read_manifest(path) == before
    assert builds() == folders, "the refused build made no folder"


def test_a_build_with_given_vectors_stores_them_and_answers_as_one_index_of_them(
    built: dict,
    tiny_encoder: Any,  # noqa: ANN401
    tmp_path: Path,
) -> None:
    documents = corpus(150, seed=3)
    given = np.random.default_rng(3).standard_normal((len(documents), tiny_encoder.dimension)).astype(np.float32)
    settings = replace(built["settings"], name="given", copies=1)
    blocks = [given[:7], given[7:100], given[100:]]  # blocks need not match the batches
    index, report = build_cluster(built["folder"] / "given.json", documents, settings, vectors=iter(blocks))
    index._encoder = tiny_encoder
    assert report.driver_rows_written == 0 and sum(report.shard_documents) == len(documents)
    with SearchEngine.create(tmp_path / "one", encoder=tiny_encoder, passages=False) as reference:
        reference.add(documents, embeddings=given)  # one ordinary index of the same documents and vectors
        assert_same_as_one_index(index, reference.reader)  # dense scores too: the stored vectors are the given ones
    remove_build(index.manifest)


def test_given_vectors_with_a_nan_stop_the_build_with_one_error_and_commit_nothing(built: dict) -> None:
    documents = corpus(40, seed=4)
    given = np.ones((len(documents), 32), dtype=np.float32)
    given[30, 5] = np.nan
    settings = replace(built["settings"], name="nan", copies=1)
    with pytest.raises(ClusterError, match=r"vectors of block 1 \(from document 0\) hold a NaN"):
        build_cluster(built["folder"] / "nan.json", documents, settings, vectors=[given])
    assert not (built["folder"] / "nan.json").exists()
    assert not list(Path(settings.local_root).glob("*/nan/*/shard-*")), "the failed build's folders were removed"


class CallsThatKillOnABatch(ActorCalls):
    """Ray actor calls that kill the copy a build sends its `batch`-th batch to, just before it is sent."""

    def __init__(self, batch: int) -> None:
        self.batch, self.sent, self.killed = batch, 0, None

    def start(self, handle: Any, method: str, *args: Any) -> Any:  # noqa: ANN401
        if method == "write_batch":
            self.sent += 1
            if self.sent == self.batch:
                ray.kill(handle)
                self.killed = handle
        return super().start(handle, method, *args)


def test_a_build_whose_copy_dies_mid_build_removes_every_folder_it_made_on_every_node(built: dict) -> None:
    settings = replace(built["settings"], name="killed", copies=1, batch_size=8)  # a copy on each of the 3 nodes
    made: dict[str, str] = {}

    def starter(place: Any, shard: int, local_root: str) -> Any:  # noqa: ANN401
        made[place.folder] = place.node
        return start_copy_actor(place, shard, local_root)

    calls = CallsThatKillOnABatch(3)
    with pytest.raises(ClusterError, match="the cluster build failed in Ray.*nothing was committed"):
        build_cluster(built["folder"] / "killed.json", corpus(60, seed=5), settings, calls=calls, starter=starter)
    assert calls.killed is not None and len(made) == SHARDS
    assert not (built["folder"] / "killed.json").exists()
    roots = [path for path in Path(settings.local_root).iterdir() if path.is_dir()]
    assert {root.name for root in roots} >= set(made.values())
    assert not any((root / "killed").exists() and any((root / "killed").iterdir()) for root in roots), (
        "every folder of the build is gone, the dead copy's too"
    )
    assert not any(Path(folder).exists() for folder in made)


def test_a_name_folder_that_leads_off_its_nodes_disk_fails_the_build_in_one_line_and_deletes_nothing(
    built: dict, tmp_path: Path
) -> None:
    """Node a's folder of the build's name is a link to a user's folder: its copy refuses it (own_folder), before
    making anything. The build says that, in the copy's own words, not Ray's wrapper of its traceback, and names
    no folder as left (none was made); the user's folder is as it was."""
    settings = replace(built["settings"], name="linked", copies=1)
    users = tmp_path / "users-folder"
    (users / "kept").mkdir(parents=True)
    (users / "kept" / "notes.txt").write_text("mine")
    (Path(settings.local_root) / "a" / "linked").symlink_to(users, target_is_directory=True)
    with pytest.raises(ClusterError) as refused:
        build_cluster(built["folder"] / "linked.json", corpus(30, seed=6), settings)
    message = str(refused.value)
    assert "\n" not in message and "\x1b" not in message and "left" not in message, message
    assert message.startswith("the cluster build failed in Ray (ShardCopy.__init__): shard copy folder "), message
    assert "a copy opens only its own node's disk" in message and "nothing was committed" in message
    assert sorted(str(path.relative_to(users)) for path in users.rglob("*")) == ["kept", "kept/notes.txt"]
    assert not (built["folder"] / "linked.json").exists()
    assert not list(Path(settings.local_root).glob("*/linked/*/shard-*")), "the other nodes' folders were removed"


def test_a_folder_no_task_of_its_own_node_removes_is_left_and_said(built: dict, tmp_path: Path) -> None:
    gone = tmp_path / "gone" / "index" / "some-build" / "shard-0"
    others = tmp_path / "head" / "index" / "some-build" / "shard-1"
    for folder in (gone, others):
        folder.mkdir(parents=True)
    places = [CopyPlace("gone", str(gone)), CopyPlace("a", str(others))]  # node a's task refuses head's folder
    assert remove_on_their_nodes(places, str(tmp_path)) == [f"{gone} on node gone", f"{others} on node a"]
    assert gone.is_dir() and others.is_dir()


def _kill(handle: Any) -> None:  # noqa: ANN401
    """ray.kill, waited out: it returns before the actor ends, and a call sent right after it may still run (one in
    three on 2 loaded vCPUs), a write then committed by a copy the test means to have died before it."""
    ray.kill(handle)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            ray.get(handle.__ray_ready__.remote(), timeout=60)
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.01)
    raise AssertionError("an actor killed a minute ago still answers")


def _healed(index: ClusterIndex, turns: int = 5) -> list[str]:
    """What heal did, run until every copy serves (a copy that does not answer within 10 s of its start, as under
    load, waits for heal's next turn): a test that means both copies of a shard to serve has them so."""
    done: list[str] = []
    for _ in range(turns):
        done += index.heal()
        if all(state.serving for states in index.copies for state in states):
            return done
    raise AssertionError(f"some copy does not serve after {turns} turns of heal: {done}")


class CallsThatKill(ActorCalls):
    """Ray actor calls that kill a copy just before a chosen call is sent: a copy lost at a precise step of a
    query or a write (the kill and the call are real; nothing is simulated)."""

    def __init__(self, method: str, *victims: Any) -> None:  # noqa: ANN401
        self.method, self.victims = method, list(victims)

    def start(self, handle: Any, method: str, *args: Any) -> Any:  # noqa: ANN401
        if method == self.method:
            for victim in self.victims:
                _kill(victim)
            self.victims = []
        return super().start(handle, method, *args)


@pytest.mark.parametrize("step", ["statistics", "candidates"])
def test_a_copy_lost_at_each_step_of_a_query_is_replaced_by_its_other_copy(built: dict, step: str) -> None:
    index = built["index"]
    expected = index.search_batch(QUERIES, 10, mode="hybrid")
    order = index._copy_order()  # the copy the next search asks first, for each shard
    index._turn -= 1
    index.calls = CallsThatKill(step, order[2][0].handle)
    try:
        answer = index.search_batch(QUERIES, 10, mode="hybrid")
    finally:
        index.calls = ActorCalls()
    assert not answer.partial
    assert [[h.external_id for h in hits] for hits in answer.hits] == [
        [h.external_id for h in hits] for hits in expected.hits
    ]
    assert [state.serving for state in index.copies[2]].count(False) == 1
    index.calls = CallsThatKill(step, index._copy_order()[2][0].handle)  # now shard 2's last copy too
    try:
        partial = index.search_batch(QUERIES, 10, mode="hybrid")
    finally:
        index.calls = ActorCalls()
    assert partial.missing == (2,) and partial.answered == SHARDS - 1
    assert all(shard_of(hit.external_id, SHARDS) != 2 for hits in partial.hits for hit in hits)
    index.heal()


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_a_copy_heal_takes_off_a_round_about_to_ask_it_is_skipped_not_called(built: dict, mode: str) -> None:
    """Heal, finding a copy's node lost, stops it serving and takes its handle (to rebuild it elsewhere) while a
    search is between making its order of copies (or its statistics round, which that copy answered) and starting
    the next round: here as the round's call to shard 0 starts, to shard 2's first copy. Before, the round called
    that copy's handle, None by then, and the search failed (a 500 through the ingress); now it asks the shard's
    other copy, and the answer is whole and the same."""
    index = built["index"]
    expected = index.search_batch(QUERIES, 10, mode=mode)
    order = index._copy_order()  # the copy the next search asks first, for each shard
    index._turn -= 1
    moved = order[2][0]
    handle = moved.handle

    class CallsAsHealTakesACopy(ActorCalls):
        def start(self, handle: Any, method: str, *args: Any) -> Any:  # noqa: ANN401
            if method == "candidates" and moved.handle is not None:
                moved.serving, moved.handle = False, None  # as heal does: serving first, then the handle
            return super().start(handle, method, *args)

    index.calls = CallsAsHealTakesACopy()
    try:
        answer = index.search_batch(QUERIES, 10, mode=mode)
    finally:
        index.calls = ActorCalls()
        moved.handle, moved.serving = handle, True  # its node is not lost: it serves on
    assert not answer.partial
    assert [[(h.external_id, round(h.score, 5)) for h in hits] for hits in answer.hits] == [
        [(h.external_id, round(h.score, 5)) for h in hits] for hits in expected.hits
    ]


def test_a_stalled_copy_is_hedged_by_its_other_copy_and_keeps_serving(built: dict) -> None:
    """A copy whose process stops (SIGSTOP: a node that hangs, a long pause) answers nothing and fails nothing: the
    search asks the shard's other copy once the call is late for its shard, takes that answer, and returns long
    before the call's timeout (an actor call's CALL_TIMEOUT, 60 s, which it waited out before)."""
    index = built["index"]
    expected = index.search_batch(QUERIES, 10, mode="hybrid")
    for _ in range(LATENCY_SAMPLES_NEEDED):  # each shard's calls measured: the hedge delay is their own
        index.search_batch(QUERIES, 10, mode="hybrid")
    order = index._copy_order()  # the copy the next search asks first, for each shard
    index._turn -= 1
    stalled = order[2][0]
    process = ray.get(stalled.handle.__ray_call__.remote(lambda copy: os.getpid()))
    os.kill(process, signal.SIGSTOP)
    try:
        started = time.perf_counter()
        answer = index.search_batch(QUERIES, 10, mode="hybrid")
        took = time.perf_counter() - started
    finally:
        os.kill(process, signal.SIGCONT)
    assert not answer.partial
    assert [[(h.external_id, round(h.score, 5)) for h in hits] for hits in answer.hits] == [
        [(h.external_id, round(h.score, 5)) for h in hits] for hits in expected.hits
    ]
    assert took < CALL_TIMEOUT / 10, f"the stalled copy was waited for: {took:.1f} s"
    assert stalled.serving, "late is not failed: the copy serves again once it answers"
    assert ray.get(stalled.handle.sequence.remote(), timeout=30) == index.sequences[2]


def test_a_write_waits_for_a_slow_live_copy_and_keeps_it_serving(built: dict) -> None:
    """A copy that is slow but alive (its process stopped for 1.5 s) is waited for, not dropped: the write is
    acknowledged by both of its shard's copies and the slow one keeps serving (only a lost node, a copy that stopped
    serving or the write's timeout drop a copy from a write: routed_writes._committed)."""
    index = built["index"]
    slow, other = index.copies[2]
    process = ray.get(slow.handle.__ray_call__.remote(lambda copy: os.getpid()))
    (doc,) = _ids_in_shard(2, 1, "slow-copy")
    os.kill(process, signal.SIGSTOP)
    resume = threading.Timer(1.5, os.kill, (process, signal.SIGCONT))
    resume.start()
    try:
        started = time.perf_counter()
        receipt = index.add([Document("written while a copy was slow", external_id=doc)])
        took = time.perf_counter() - started
    finally:
        resume.cancel()
        os.kill(process, signal.SIGCONT)
    assert receipt.copies == {2: 2} and took >= 1.4, (receipt.copies, took)
    assert slow.serving and slow.sequence == other.sequence == index.sequences[2]


class CallsWithAShortTimeout(ActorCalls):
    """Ray actor calls whose timeout is a few seconds, not CALL_TIMEOUT: a test can wait one out."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def timeout(self, method: str) -> float:  # noqa: ARG002 (every call has the same)
        return self.seconds


def test_a_write_over_shards_with_stalled_copies_waits_one_timeout_not_one_per_shard(built: dict) -> None:
    """One copy each of shards 1 and 2 stops (SIGSTOP: alive, its node listed, answering nothing) and a write goes
    to both shards: the copies of both are waited for together, against one deadline, so the write is acknowledged
    by the other copies after one timeout, not two (routed_writes._committed). The stalled copies stop serving and
    heal brings them back."""
    index = built["index"]
    seconds = 3.0
    stalled = [index.copies[1][0], index.copies[2][0]]
    processes = [ray.get(state.handle.__ray_call__.remote(lambda copy: os.getpid()), timeout=60) for state in stalled]
    ids = _ids_in_shard(1, 1, "stalled-shards") + _ids_in_shard(2, 1, "stalled-shards")
    index.calls = CallsWithAShortTimeout(seconds)
    for process in processes:
        os.kill(process, signal.SIGSTOP)
    try:
        started = time.perf_counter()
        receipt = index.add([Document(f"written while two shards stalled {i}", external_id=i) for i in ids])
        took = time.perf_counter() - started
    finally:
        for process in processes:
            os.kill(process, signal.SIGCONT)
        index.calls = ActorCalls()
    assert receipt.copies == {1: 1, 2: 1}, "acknowledged by each shard's copy that answered"
    assert seconds * 0.9 <= took < seconds * 1.5, f"one timeout is {seconds} s; the write took {took:.1f} s"
    assert not any(state.serving for state in stalled)
    _healed(index)
    for shard in (1, 2):
        assert all(state.serving and state.sequence == index.sequences[shard] for state in index.copies[shard])
    found = index.search_batch([f"written while two shards stalled {i}" for i in ids], 5, mode="keyword")
    assert not found.partial
    assert set(ids) <= {hit.external_id for hits in found.hits for hit in hits}


def test_a_write_whose_shard_loses_every_copy_inside_it_is_not_acknowledged(built: dict) -> None:
    """R = 1 as far as the write can tell: both copies of shard 2 die as the write's calls go out. The write fails
    with one clear error and is never acknowledged; shard 2 holds nothing of it once healed, and the other shard's
    part, committed, is counted, and the error says so (it said only "not acknowledged", as if nothing had been
    written)."""
    index = built["index"]
    (kept,), (lost,) = _ids_in_shard(1, 1, "every-copy-lost"), _ids_in_shard(2, 1, "every-copy-lost")
    before = list(index.sequences)
    index.calls = CallsThatKill("apply", *(state.handle for state in index.copies[2]))
    try:
        with pytest.raises(ShardsUnavailableError, match="no copy of shard 2 committed the write") as failed:
            index.add([Document(f"written as every copy died {i}", external_id=i) for i in (kept, lost)])
    finally:
        index.calls = ActorCalls()
    assert str(failed.value).endswith(". These parts of it were committed and stand: shard 1 (1 added)")
    assert "\n" not in str(failed.value)
    assert index.sequences[2] == before[2] and index.sequences[1] == before[1] + 1
    assert not any(state.serving for state in index.copies[2])
    _healed(index)
    found = index.search_batch([f"written as every copy died {kept}", f"written as every copy died {lost}"], 5)
    assert not found.partial
    assert kept in {hit.external_id for hit in found.hits[0]}
    assert lost not in {hit.external_id for hits in found.hits for hit in hits}


def test_heal_of_a_shard_whose_every_copy_died_serves_its_copies_only_once_they_hold_the_same_writes(
    built: dict,
) -> None:
    """Both copies of shard 2 die, one after committing a write no copy acknowledged (a call that reaches a copy
    before its end runs: `_kill`). Heal takes the copy that holds the most writes as the shard's newest and catches
    the other up from it, or, where that copy starts too slowly for heal's first turn, sets it back to the other's
    writes in the next: either way they serve holding the same writes, the shard's. Heal served each copy as it held:
    the two answered searches from different writes, and the one behind refused the shard's next write (what made
    test_a_copy_that_dies_inside_a_write_loses_no_acknowledged_write fail in CI, that copy being its "dying" one)."""
    index = built["index"]
    ahead, behind = index.copies[2]
    (doc, new) = _ids_in_shard(2, 2, "committed-as-every-copy-died")
    sequence = index.sequences[2] + 1
    document = Document("committed by one copy just before every copy died", external_id=doc)
    vectors = index.encoder.encode([document.text])
    assert ray.get(ahead.handle.apply.remote(sequence, [document], vectors, []), timeout=60).sequence == sequence
    for state in (ahead, behind):
        _kill(state.handle)
    done = _healed(index)
    assert any("caught up to write" in line or "set back to write" in line for line in done), done
    held = [ray.get(state.handle.sequence.remote(), timeout=60) for state in (ahead, behind)]
    assert held == [index.sequences[2]] * 2 and index.sequences[2] in (sequence - 1, sequence)
    receipt = index.add([Document("written once healed", external_id=new)])
    assert receipt.copies == {2: 2} and receipt.counts == WriteCounts(documents=1, added=1)


def test_a_copy_holding_a_write_no_copy_acknowledged_serves_only_once_set_back_to_the_shard_s(built: dict) -> None:
    """A copy commits a write that its shard's other copy never got and no copy acknowledged, then fails; heal
    starts it again holding one write more than the shard. It serves only once set back to the live copy's writes:
    served as it held, it answered the shard's next write, which takes the same number, as one it held already, and
    never stored that write's documents, although the write was acknowledged by both copies."""
    index = built["index"]
    ahead, live = index.copies[2]
    stray, acknowledged = _ids_in_shard(2, 2, "held-by-one-copy")
    sequence = index.sequences[2] + 1
    document = Document("committed by one copy, never acknowledged", external_id=stray)
    vectors = index.encoder.encode([document.text])
    assert ray.get(ahead.handle.apply.remote(sequence, [document], vectors, []), timeout=60).sequence == sequence
    _kill(ahead.handle)
    done = _healed(index)
    assert f"held write {sequence}, which no copy acknowledged; set back to write {sequence - 1}" in " ".join(done)
    receipt = index.add([Document("acknowledged by both copies", external_id=acknowledged)])
    assert receipt.copies == {2: 2} and receipt.counts == WriteCounts(documents=1, added=1)
    for state in (ahead, live):
        assert ray.get(state.handle.ids_of.remote([stray, acknowledged]), timeout=60).keys() == {acknowledged}


def test_a_copy_holding_another_write_under_the_shard_s_number_is_set_back_not_served(built: dict) -> None:
    """A copy commits a write no other copy got and no copy acknowledged, then is away past a heal (it started too
    slowly); the shard's next write, acknowledged by the other copy, takes the same number. Back at that number with
    another write, the copy serves only once set back to the live copy's writes: its last write's id tells the two
    apart (by the number alone it served the stray document and lacked the acknowledged one)."""
    index = built["index"]
    _healed(index)
    away, live = index.copies[2]
    stray, acknowledged = _ids_in_shard(2, 2, "same-number")
    sequence = index.sequences[2] + 1
    document = Document("committed by one copy under a number the shard gave another write", external_id=stray)
    vectors = index.encoder.encode([document.text])
    assert ray.get(away.handle.apply.remote(sequence, [document], vectors, [], "stray"), timeout=60).sequence == sequence
    away.serving = False  # away: the shard's next write goes to the live copy only
    receipt = index.add([Document("acknowledged by the live copy", external_id=acknowledged)])
    assert receipt.copies == {2: 1} and receipt.sequences == {2: sequence}
    done = _healed(index)
    assert f"held another write {sequence} than the shard's, which no copy acknowledged" in " ".join(done)
    assert away.serving and away.sequence == live.sequence == sequence
    for state in (away, live):
        assert ray.get(state.handle.ids_of.remote([stray, acknowledged]), timeout=60).keys() == {acknowledged}


@pytest.mark.parametrize("step", ["before-commit", "after-commit"])
def test_a_copy_that_dies_inside_a_write_loses_no_acknowledged_write(built: dict, step: str) -> None:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from searchengine.cluster.placement import live_nodes

    index = built["index"]
    _healed(index)  # both copies of shard 2 serve, so the write reaches the one that crashes in it
    dying, survivor = index.copies[2]
    ray.kill(dying.handle)
    strategy = NodeAffinitySchedulingStrategy(live_nodes()[dying.place.node], soft=False)
    crashing = ray.remote(ShardCopy).options(
        num_cpus=0, scheduling_strategy=strategy, runtime_env={"env_vars": {"SEARCHENGINE_CRASH_AT": step}}
    )
    dying.handle = crashing.remote(dying.place.folder, 2, index.manifest.local_root)
    ids = _ids_in_shard(2, 2, f"crash-{step}")
    written = [Document(f"written as a copy crashed {step} {i}", external_id=i) for i in ids]
    receipt = index.add(written)
    assert receipt.copies == {2: 1}, "acknowledged by the copy that survived"
    assert receipt.counts == WriteCounts(documents=2, added=2), "counted by the copy that survived"
    with pytest.raises(ray.exceptions.RayActorError):  # it crashed inside the write: heal starts it again
        ray.get(dying.handle.sequence.remote(), timeout=60)
    _healed(index)  # started again on its node, without the crash: it holds the write (after) or catches up (before)
    assert dying.serving and dying.sequence == survivor.sequence == index.sequences[2]
    again = index.add(written)  # sent again, as a client that lost the answer does: one index counts it so too
    assert again.copies == {2: 2} and again.counts == WriteCounts(documents=2, updated=2)
    ray.kill(survivor.handle)
    found = index.search(f"written as a copy crashed {step}", 10, mode="keyword")
    assert set(ids) <= {hit.external_id for hit in found.hits[0]}
    index.heal()


def test_a_write_the_driver_sent_to_one_copy_only_is_caught_up_on_open(built: dict) -> None:
    """The driver (or an ingress) dies between two copies of a write: nothing was acknowledged, one copy holds
    the write and the other not. Opened again, the cluster serves only the copy that holds it until heal."""
    index = built["index"]
    first, second = index.copies[0]
    sequence = index.sequences[0] + 1
    ids = _ids_in_shard(0, 1, "half-sent")
    document = Document("sent to one copy before the driver died", external_id=ids[0])
    vectors = index.encoder.encode([document.text])
    assert ray.get(first.handle.apply.remote(sequence, [document], vectors, []), timeout=60).sequence == sequence
    running = {state.place.folder: state.handle for states in index.copies for state in states}
    reopened = ClusterIndex.open(built["folder"] / "cluster.json", starter=lambda place, *_: running[place.folder])
    lag = {copy["folder"]: copy["lag"] for copy in reopened.status()["shards"][0]["copies"]}
    assert lag == {first.place.folder: 0, second.place.folder: 1}
    assert any("caught up" in line for line in reopened.heal())
    assert all(copy["lag"] == 0 and copy["serving"] for copy in reopened.status()["shards"][0]["copies"])
    index._read_sequences()  # the first index's view of the same copies
    assert index.sequences[0] == sequence and all(state.serving for state in index.copies[0])


def test_a_write_after_another_cluster_index_wrote_its_shard_is_refused_not_lost(built: dict) -> None:
    """Two ClusterIndexes over one cluster (a driver and the ingress, or a driver opened earlier): one writes a
    shard, then the other, whose number for the shard is now stale. Before, every copy took that write as one it
    held already: acknowledged, never stored. Now it is refused in one line (over HTTP a 409), nothing of it
    stored, and the writer's next write is numbered after the other's and stored."""
    import json
    import urllib.error
    import urllib.request

    from searchengine.cluster.errors import WriteConflictError
    from searchengine.server.app import create_app
    from searchengine.server.cluster.cluster_engine import ClusterEngine
    from searchengine.server.served_index import ServedIndex
    from tests.searchengine.server.conftest import running

    index = built["index"]
    running_copies = {state.place.folder: state.handle for states in index.copies for state in states}
    other = ClusterIndex.open(built["folder"] / "cluster.json", starter=lambda place, *_: running_copies[place.folder])
    other._encoder = index.encoder
    ids = _ids_in_shard(0, 5, "two-writers")
    other.add([Document("the other writer's rocket", external_id=ids[0])])
    shard = index.status()["shards"][0]  # this writer's number is stale: the copies' newest write counts, no lag
    assert shard["sequence"] == other.sequences[0] and all(copy["lag"] == 0 for copy in shard["copies"])
    with pytest.raises(WriteConflictError, match="another ClusterIndex .* wrote the shard since this one read it"):
        index.add([Document("this writer's rocket", external_id=ids[1])])
    other.add([Document("the other writer's second rocket", external_id=ids[2])])
    engine = ClusterEngine(index)
    served = ServedIndex(engine.path, open_engine=lambda: engine)
    body = {"documents": [{"id": ids[3], "text": "this writer's rocket over HTTP"}], "id_field": "id"}
    try:
        with running(create_app(served)) as url:
            request = urllib.request.Request(
                url + "/documents", json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
            )
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=60)
    finally:
        served.close()
    error = json.loads(refused.value.read())["error"]
    assert refused.value.code == 409 and "wrote the shard since this one read it" in error and "\n" not in error
    receipt = index.add([Document("this writer's rocket, again", external_id=ids[4])])
    assert receipt.copies == {0: 2} and receipt.counts.added == 1
    found = {hit.external_id for hit in index.search("rocket", k=50, mode="keyword").hits[0]}
    assert {ids[0], ids[2], ids[4]} <= found and not {ids[1], ids[3]} & found
    copies = index.status()["shards"][0]["copies"]
    assert all(copy["lag"] == 0 and copy["serving"] for copy in copies), copies  # CI saw one fail once, loaded


def test_a_removed_node_loses_no_search_and_no_acknowledged_write(built: dict, ray_cluster: Any) -> None:  # noqa: ANN401
    """Searches and writes go on over the copies left; heal rebuilds the lost node's copies elsewhere and, with a
    stopper, stops the replaced ones once the manifest on disk no longer names them: a stop that fails is asked
    again at the next heal, and one that succeeded is not."""
    cluster, nodes = ray_cluster
    index = built["index"]
    lost = [
        (shard, place) for shard, places in enumerate(index.manifest.placement) for place in places if place.node == "b"
    ]
    asked: list[tuple[int, CopyPlace, bool]] = []  # shard, place, whether the committed manifest named it then

    def stopper(place: CopyPlace, shard: int) -> None:
        first = all(place != other for _, other, _ in asked)
        asked.append((shard, place, place in read_manifest(built["folder"] / "cluster.json").placement[shard]))
        if first:  # each copy's first stop fails (at whichever heal turn its replacement first serves)
            raise ConnectionError("Serve's controller is out of reach")

    index.stopper = stopper
    nodes["c"] = cluster.add_node(num_cpus=1, resources={"searchengine_node_c": 1})
    cluster.wait_for_nodes()
    acknowledged = []
    cluster.remove_node(nodes.pop("b"))
    for i, query in enumerate(QUERIES * 2):
        answer = index.search(query, 10, mode="hybrid")
        assert not answer.partial, "every shard keeps a copy on another node"
        document = Document(f"acknowledged after the loss {i}", external_id=f"after-{i}")
        index.add([document])
        acknowledged.append(document.external_id)
    done = _healed(index)
    assert sum("rebuilt on c" in line for line in done) == 2
    assert read_manifest(built["folder"] / "cluster.json").placement == index.manifest.placement
    status = index.status()
    assert {copy["node"] for shard in status["shards"] for copy in shard["copies"]} == {"head", "a", "c"}
    assert all(copy["serving"] and copy["lag"] == 0 for shard in status["shards"] for copy in shard["copies"])
    for shard in index.copies:  # where a copy was rebuilt, only it answers now: the writes must be in it too
        rebuilt = any(state.place.node == "c" for state in shard)
        for state in shard:
            if rebuilt and state.place.node != "c":
                ray.kill(state.handle)
    texts = [f"acknowledged after the loss {i}" for i in range(len(acknowledged))]
    found = index.search_batch(texts, 1, mode="keyword")
    assert not found.partial
    assert [hits[0].external_id for hits in found.hits] == acknowledged
    try:
        index.heal()
        index.heal()
    finally:
        index.stopper = None
    expected = sorted(((shard, place, False) for shard, place in lost), key=str)
    assert sorted(asked, key=str) == sorted(expected * 2, key=str), "each asked twice: once failing, then stopped"


def test_a_node_added_takes_copies(built: dict, ray_cluster: Any, tiny_encoder: Any) -> None:  # noqa: ANN401
    """Copies move to the node added; with a stopper (what a Serve front end gives: an application outlives its
    handles), each moved copy's old place is stopped once the manifest on disk no longer names it."""
    cluster, nodes = ray_cluster
    index = built["index"]
    nodes["d"] = cluster.add_node(num_cpus=1, resources={"searchengine_node_d": 1})
    cluster.wait_for_nodes()
    before = index.search_batch(QUERIES, 10, mode="hybrid")
    placed_before = index.manifest.placement
    stopped: list[tuple[int, CopyPlace, bool]] = []  # shard, place, whether the committed manifest named it then

    def stopper(place: CopyPlace, shard: int) -> None:
        stopped.append((shard, place, place in read_manifest(built["folder"] / "cluster.json").placement[shard]))

    index.stopper = stopper
    try:
        moves = index.rebalance()
    finally:
        index.stopper = None
    assert moves and all("to d" in line for line in moves)
    replaced = [
        (shard, place, False)
        for shard, places in enumerate(placed_before) for place in places
        if place not in index.manifest.placement[shard]
    ]  # fmt: skip
    assert len(replaced) == len(moves) and sorted(stopped, key=str) == sorted(replaced, key=str)
    placed = [copy["node"] for shard in index.status()["shards"] for copy in shard["copies"]]
    assert max(placed.count(node) for node in set(placed)) - placed.count("d") <= 1
    assert read_manifest(built["folder"] / "cluster.json").placement == index.manifest.placement
    after = index.search_batch(QUERIES, 10, mode="hybrid")
    assert not after.partial
    assert [[(h.external_id, h.score) for h in hits] for hits in after.hits] == [
        [(h.external_id, h.score) for h in hits] for hits in before.hits
    ]


def test_a_node_that_comes_back_under_its_name_serves_its_copies_again(built: dict, ray_cluster: Any) -> None:  # noqa: ANN401
    """A node named by its resource keeps its folders: back under the same name (a new Ray node id), its copy is
    started again over its own folder and catches up with the writes made while it was away."""
    cluster, nodes = ray_cluster
    index = built["index"]
    shard, away = next(
        (s, state) for s, states in enumerate(index.copies) for state in states if state.place.node == "d"
    )
    cluster.remove_node(nodes.pop("d"))
    ids = _ids_in_shard(shard, 2, "node-away")
    receipt = index.add([Document(f"written while node d was away {i}", external_id=i) for i in ids])
    assert receipt.copies == {shard: 1}
    nodes["d"] = cluster.add_node(num_cpus=1, resources={"searchengine_node_d": 1})
    cluster.wait_for_nodes()
    placement = index.manifest.placement
    done = _healed(index)
    assert any(f"shard {shard}: copy on d caught up" in line for line in done) and not any(
        "rebuilt" in line for line in done
    )
    assert index.manifest.placement == placement, "the copy came back where it was"
    for state in index.copies[shard]:
        if state is not away:
            ray.kill(state.handle)
    found = index.search("written while node d was away", 10, mode="keyword", all_shards=False)
    assert set(ids) <= {hit.external_id for hit in found.hits[0]}
    index.heal()


def test_a_rebuilt_copy_whose_start_fails_leaves_the_manifest_naming_copies_that_hold_their_shard(
    built: dict, ray_cluster: Any  # noqa: ANN401
) -> None:
    """A node is lost, and heal's first start of a copy rebuilt elsewhere raises, its second starts a copy that is
    lost at once (it does not answer). Before, the start's error left heal with the new place in memory only, and
    the next heal, which started the copy there, never wrote the manifest: it named the lost place of a copy that
    served elsewhere. Now heal says the failure in one line and goes on; memory and manifest name the same places
    but for a copy not serving yet, for which the manifest keeps the lost place; the next heals finish, and the lost
    places and what the failed start left are stopped, each once the committed manifest no longer names it."""
    cluster, nodes = ray_cluster
    index = built["index"]
    path = built["folder"] / "cluster.json"
    _healed(index)
    gone = next(name for name in sorted(nodes) if any(s.place.node == name for states in index.copies for s in states))
    lost = {(shard, s.place) for shard, states in enumerate(index.copies) for s in states if s.place.node == gone}
    tried: list[tuple[int, CopyPlace]] = []
    stopped: list[tuple[int, CopyPlace, bool]] = []  # shard, place, whether the committed manifest named it then

    def starter(place: CopyPlace, shard: int, local_root: str) -> Any:  # noqa: ANN401 (an actor handle)
        tried.append((shard, place))
        if len(tried) == 1:
            raise ClusterError("Serve's controller is out of reach")
        handle = start_copy_actor(place, shard, local_root)
        if len(tried) == 2:
            _kill(handle)  # started, and lost at once
        return handle

    def stopper(place: CopyPlace, shard: int) -> None:
        stopped.append((shard, place, place in read_manifest(path).placement[shard]))

    index.starter, index.stopper = starter, stopper
    cluster.remove_node(nodes.pop(gone))
    try:
        first = index.heal()
        on_disk = read_manifest(path)
        assert on_disk == index.manifest
        for shard, states in enumerate(index.copies):
            for state, named in zip(states, on_disk.placement[shard]):
                assert state.place == named or (not state.serving and (shard, named) in lost), (state, named)
        failed = "its start failed (ClusterError: Serve's controller is out of reach); rebuilt at the next heal"
        assert any(failed in line for line in first), first
        _healed(index)
    finally:
        index.starter, index.stopper = start_copy_actor, None
    on_disk = read_manifest(path)
    assert on_disk == index.manifest
    assert on_disk.placement == tuple(tuple(state.place for state in states) for states in index.copies)
    assert not any(place.node == gone for places in on_disk.placement for place in places)
    assert sorted(stopped, key=str) == sorted(((shard, place, False) for shard, place in {*lost, tried[0]}), key=str)


def test_removing_a_build_frees_its_folders_on_every_live_node(built: dict) -> None:
    index = built["index"]
    folders = [place.folder for places in index.manifest.placement for place in places]
    assert all(Path(folder).is_dir() for folder in folders)
    running = {state.place.folder: state.handle for states in index.copies for state in states}
    removed = remove_build(index.manifest, starter=lambda place, *_: running[place.folder])  # its copies do it
    assert sorted(removed) == sorted(folders)
    assert not any(Path(folder).exists() for folder in folders)
    root, build = Path(built["settings"].local_root), index.manifest.build
    assert not any(
        (root / place.node / "index" / build).exists() for places in index.manifest.placement for place in places
    )
    assert (root / "b" / "index" / build).is_dir(), "the lost node's disk is out of reach: its folders stay"
