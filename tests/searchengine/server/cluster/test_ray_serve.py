"""A cluster index served by Ray Serve on a simulated two-node Ray cluster (ray.cluster_utils.Cluster): one
deployment per shard copy pinned to its node, the ingress serving the HTTP API of `searchengine serve`, checked
against one ordinary index of the same documents, through HTTP and the CLI's `query --server`. One cluster and one
Serve app for the module (Serve starts slowly); the tests run in order: the node's loss, serving again, then
stopping the cluster and building at its manifest path last."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from searchengine.cli import app as cli
from searchengine.cluster.call_latencies import LATENCY_SAMPLES_NEEDED
from searchengine.engine.index_reader import IndexReader
from tests.conftest import WORDS

ray = pytest.importorskip("ray")

SHARDS = 2
FAST_NODE_DEATH = {"health_check_period_ms": 1000, "health_check_failure_threshold": 3}
"""Ray declares a lost node dead after about 3 s (its default takes about 15 s)."""
QUERIES = ["the cat sat on the mat", "stock market price fell", "rain and snow in the cold city"]
LOSS_TEXT = "a heron crossed the frozen lake at dawn"
"""The document written just after the node's loss."""
REBUILT_WITHIN_S = 120.0
"""Seconds heal may take to rebuild the lost node's copies on the live node (a deployment starts in seconds)."""
REPLACED_GONE_WITHIN_S = 60.0
"""Seconds the lost node's copies' Serve applications may take to go once heal replaced them (Serve waits a copy's
graceful_shutdown_timeout_s, COPY_SHUTDOWN_S, for one whose node is lost: they went 4.7 to 5.4 s after the rebuilt
copies served, with 3 s, and 19.8 to 20.4 s with Serve's default 20 s)."""
SEARCHING_AFTER_LOSS_S = 5.0
"""Seconds the searches go on after the node's removal: past Ray's declaring it dead (FAST_NODE_DEATH) and the
ingress's next heal (every 2 s here), which stops its copies serving."""


def corpus(count: int) -> list[Any]:
    """`count` documents of the tiny model's words, each with an id and a language."""
    import random

    from searchengine.indexer.tables.documents import Document

    chooser = random.Random(7)
    return [
        Document(
            " ".join(chooser.choice(WORDS) for _ in range(chooser.randint(3, 12))),
            metadata={"lang": "en" if position % 3 else "fr"},
            external_id=f"doc-{position}",
        )
        for position in range(count)
    ]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(url: str) -> Any:  # noqa: ANN401
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())


def ingress_process() -> int:
    """The process id of the ingress replica (one Ray actor of Serve's, asked for its own pid)."""
    (name,) = [
        actor["name"] for actor in ray.util.list_named_actors(all_namespaces=True)
        if actor["name"].startswith("SERVE_REPLICA::searchengine#ingress#")
    ]  # fmt: skip
    return ray.get(ray.get_actor(name, namespace="serve").__ray_call__.remote(lambda _: os.getpid()), timeout=60)


def kill_the_ingress(served: dict) -> None:
    """kill -9 of the ingress replica; returns once Serve started it again and it answers through the proxy."""
    os.kill(ingress_process(), signal.SIGKILL)
    deadline = time.monotonic() + 120
    while True:
        try:
            assert get(served["proxy_url"] + "/health") == {"status": "ok"}
            return
        except OSError:
            assert time.monotonic() < deadline, "the killed ingress did not answer through the proxy again in 120 s"
            time.sleep(0.5)


def send(url: str, body: Any, method: str = "POST") -> Any:  # noqa: ANN401
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}, method=method
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def _body_of(error: Exception) -> str:
    """What an HTTP error's response said (its first 500 characters); nothing for another error."""
    read = getattr(error, "read", None)
    try:
        return read()[:500].decode("utf-8", "replace") if read is not None else ""
    except Exception:  # noqa: BLE001 (the body is gone: the error itself is said)
        return ""


def assert_rebuilt_copies_hold(served: dict, external_id: str) -> None:
    """Once heal rebuilt the lost node's copies (every copy off node a, serving, lagging no write), every copy of
    `external_id`'s shard, the rebuilt one too, holds that document."""
    from ray import serve

    from searchengine.cluster.manifest import read_manifest
    from searchengine.cluster.routing import shard_of
    from searchengine.server.cluster.copy_deployments import copy_app_name
    from searchengine.server.cluster.serve_app import INGRESS_APP

    ingress = serve.get_deployment_handle("ingress", app_name=INGRESS_APP)
    deadline = time.perf_counter() + REBUILT_WITHIN_S
    while True:
        copies = [copy for shard in ingress.status.remote().result(timeout_s=60)["shards"] for copy in shard["copies"]]
        if all(copy["node"] != "a" and copy["serving"] and copy["lag"] == 0 for copy in copies):
            break
        assert time.perf_counter() < deadline, f"heal rebuilt no copy of the lost node within {REBUILT_WITHIN_S} s"
        time.sleep(1.0)
    shard = shard_of(external_id, SHARDS)
    places = read_manifest(served["folder"] / "cluster.json").placement[shard]
    assert [place.node for place in places] == ["head", "head"], "the lost copy was rebuilt on the live node"
    for place in places:
        copy = serve.get_deployment_handle("copy", app_name=copy_app_name(place, shard))
        assert copy.call.remote("ids_of", [external_id]).result(timeout_s=60), f"{place.folder} lacks it"


@pytest.fixture(scope="module")
def served(tiny_model: Path, tiny_encoder: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:  # noqa: ANN401
    """The cluster (head and a: one CPU each), a cluster index of 2 shards x 2 copies built on it (a copy of each
    shard on each node), served; and one index of the same 200 documents."""
    from ray.cluster_utils import Cluster
    from searchengine.indexer.commit.index_directory import IndexDirectory

    from searchengine.cluster import ClusterBuildSettings, build_cluster
    from searchengine.engine.indexing import IndexSettings, build_index, document_chunks
    from searchengine.server.cluster.serve_app import serve_cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            "num_cpus": 1, "resources": {"searchengine_node_head": 1}, "include_dashboard": False,
            "_system_config": FAST_NODE_DEATH,
        },
    )  # fmt: skip
    nodes = {"a": cluster.add_node(num_cpus=1, resources={"searchengine_node_a": 1})}
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    cluster.wait_for_nodes()
    folder = tmp_path_factory.mktemp("served-cluster")
    documents = corpus(200)
    settings = ClusterBuildSettings(
        shards=SHARDS, copies=2, model=str(tiny_model), local_root=str(folder / "nodes"),
        encoder_options={"precision": "fp32"}, batch_size=64, nodes=["head", "a"],
    )  # fmt: skip
    built, report = build_cluster(folder / "cluster.json", documents, settings)
    for states in built.copies:  # the build's actors go: the Serve deployments open the copies from here on
        for state in states:
            ray.kill(state.handle)
    reference = folder / "one"
    build_index(
        IndexDirectory(reference), document_chunks(documents), tiny_encoder,
        IndexSettings(index_type="Flat", passages=False), total=len(documents),
    )  # fmt: skip
    served = serve_cluster(folder / "cluster.json", port=free_port(), heal_every_s=2.0)
    try:
        yield {"url": served.ingress_url, "proxy_url": served.proxy_url, "cluster": cluster, "nodes": nodes, "folder": folder, "reference": reference,
               "report": report, "address": cluster.address}  # fmt: skip
    finally:
        # No serve.shutdown(): after the node's loss (the last test) its graceful wait took about 20 s more. Stopping
        # the cluster stops Serve's processes with it, and a later driver session drops the stale Serve client.
        ray.shutdown()
        cluster.shutdown()


def test_every_mode_answers_as_one_index_and_says_how_many_shards_answered(served: dict, tiny_encoder: Any) -> None:  # noqa: ANN401
    reference = IndexReader(served["reference"], tiny_encoder)
    for mode in ("dense", "keyword", "hybrid"):
        answers = send(served["url"] + "/search", {"queries": QUERIES, "k": 10, "mode": mode})["results"]
        for answer, expected in zip(answers, reference.search_batch(QUERIES, 10, mode=mode)):
            assert answer["shards"] == {"asked": SHARDS, "answered": SHARDS, "partial": False}
            assert [hit["score"] for hit in answer["hits"]] == pytest.approx([hit.score for hit in expected], abs=1e-5)
            assert {hit["external_id"] for hit in answer["hits"]} == {hit.external_id for hit in expected} or mode != "dense"
    filtered = get(served["url"] + "/search?q=the+cat&k=5&mode=dense&where=lang%3Dfr")
    assert len(filtered["hits"]) == 5 and {hit["metadata"]["lang"] for hit in filtered["hits"]} == {"fr"}
    reference.close()


def test_the_ingress_times_its_searches_and_asks_no_statistics_for_words_it_has(served: dict, tiny_encoder: Any) -> None:  # noqa: ANN401
    from ray import serve

    from searchengine.server.cluster.serve_app import INGRESS_APP

    ingress = serve.get_deployment_handle("ingress", app_name=INGRESS_APP)
    body = {"queries": QUERIES, "k": 10, "mode": "keyword"}
    send(served["url"] + "/search", body)  # the shards count these words, unless an earlier search had them counted
    before = ingress.spans.remote().result(timeout_s=60)["keyword"]
    answers = send(served["url"] + "/search", body)["results"]
    after = ingress.spans.remote().result(timeout_s=60)["keyword"]
    assert (after["searches"], after["queries"]) == (before["searches"] + 1, before["queries"] + len(QUERIES))
    assert after["statistics_rounds"] == before["statistics_rounds"], "the same words: no statistics round"
    assert after["calls"] == before["calls"] + SHARDS, "one round: the candidates (with the documents)"
    assert after["seconds"] - before["seconds"] >= after["shards_s"] - before["shards_s"] > 0
    reference = IndexReader(served["reference"], tiny_encoder)
    for answer, expected in zip(answers, reference.search_batch(QUERIES, 10, mode="keyword")):
        assert [hit["score"] for hit in answer["hits"]] == pytest.approx([hit.score for hit in expected], abs=1e-5)
    reference.close()


def test_the_ingress_answers_at_its_own_port_and_through_serves_proxy_alike(served: dict) -> None:
    own, proxied = served["url"], served["proxy_url"]
    assert own is not None and own != proxied
    body = {"queries": QUERIES, "k": 5, "mode": "hybrid"}
    answers = [send(where + "/search", body)["results"] for where in (own, proxied)]
    assert [[(hit["external_id"], hit["score"]) for hit in answer["hits"]] for answer in answers[0]] == [
        [(hit["external_id"], hit["score"]) for hit in answer["hits"]] for answer in answers[1]
    ]


def test_the_cli_queries_the_cluster_through_its_server_flag(served: dict) -> None:
    result = CliRunner().invoke(cli, ["query", "the cat sat on the mat", "--server", served["url"], "--json", "-k", "3"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert len(printed["hits"]) == 3 and printed["mode"] == "hybrid"


def test_info_health_page_embeddings_and_metrics(served: dict, tiny_encoder: Any) -> None:  # noqa: ANN401
    url = served["url"]
    assert get(url + "/health") == {"status": "ok"}
    info = get(url + "/info")
    assert info["documents"] == 200 and info["server"]["default_mode"] == "hybrid"
    with urllib.request.urlopen(url + "/", timeout=30) as page:
        assert b"<html" in page.read().lower()
    embedded = send(url + "/v1/embeddings", {"input": ["the cat sat"], "model": Path(info["model"]).name})
    expected = tiny_encoder.encode(["the cat sat"])[0]
    expected = expected / (sum(value * value for value in expected) ** 0.5)
    assert embedded["data"][0]["embedding"] == pytest.approx(list(expected), abs=1e-5)
    with urllib.request.urlopen(url + "/metrics", timeout=30) as response:
        text = response.read().decode()
    assert "searchengine_documents 200.0" in text and 'searchengine_search_seconds_count{mode="hybrid"}' in text


def test_routed_writes_are_searchable_and_status_shows_no_lag(served: dict) -> None:
    url = served["url"]
    added = send(url + "/documents", {"documents": [{"id": "new-1", "text": "a purple rocket over the moon"}],
                                      "id_field": "id"})  # fmt: skip
    assert added["documents"] == 1 and added["index_size"] == 201
    hits = get(url + "/search?q=a+purple+rocket+over+the+moon&k=1&mode=keyword")["hits"]
    assert hits[0]["external_id"] == "new-1"
    deleted = send(url + "/documents/new-1?external=true", None, method="DELETE")
    assert len(deleted["deleted"]) == 1 and deleted["index_size"] == 200
    result = CliRunner().invoke(
        cli, ["cluster-index", "status", str(served["folder"] / "cluster.json"), "--address", served["address"], "--json"]
    )
    assert result.exit_code == 0, result.output
    status = json.loads(result.stdout)
    assert status["documents"] == 200 and len(status["shards"]) == SHARDS
    assert all(copy["lag"] == 0 and copy["serving"] for shard in status["shards"] for copy in shard["copies"])


def test_a_field_only_one_shard_has_filters_and_gets_through_the_ingress(served: dict) -> None:
    """Through Serve's calls too: a shard whose documents lack a filtered field matches nothing (before, it refused
    the search: a 400), and GET /documents answers (before, a 500)."""
    url = served["url"]
    send(url + "/documents", {"documents": [{"id": "colored", "text": "a red rocket", "color": "red"}], "id_field": "id"})
    try:
        found = send(url + "/search", {"queries": ["a red rocket"], "k": 5, "where": ["color = red"]})["results"][0]
        assert [hit["external_id"] for hit in found["hits"]] == ["colored"] and found["shards"]["answered"] == SHARDS
        got = get(url + "/documents?ids=colored&ids=doc-1&where=color%20%3D%20red")["documents"]
        assert [(record["id"], record["metadata"]) for record in got] == [("colored", {"color": "red"})]
    finally:
        send(url + "/documents/colored?external=true", None, method="DELETE")


def test_a_refused_write_through_the_ingress_is_a_400_with_one_line_and_writes_nothing(served: dict) -> None:
    """Through Serve's proxy and ingress (not only the app in a test server): each refusal is one index's, or the
    cluster's own one line, before any copy is called."""
    import urllib.error

    url = served["url"]
    good = {"id": "refused-ok", "text": "a good text"}
    refusals = {
        "document 2 holds NaN or Infinity in its metadata": {
            "documents": [good, {"id": "refused-nan", "text": "a text", "score": float("nan")}],
            "id_field": "id",
        },
        "leave out embeddings": {"documents": [good], "id_field": "id", "embeddings": [[0.5] * 32]},
        "document 1 has no external id": {"documents": [{"text": "a text without an id"}]},
    }
    for said, body in refusals.items():
        with pytest.raises(urllib.error.HTTPError) as refused:
            send(url + "/documents", body)
        error = json.loads(refused.value.read())["error"]
        assert refused.value.code == 400 and said in error and "\n" not in error, error
    assert get(url + "/info")["documents"] == 200
    hits = get(url + "/search?q=a+good+text&k=5&mode=keyword")["hits"]
    assert all(hit["external_id"] != "refused-ok" for hit in hits)


def test_the_ingress_answers_a_write_with_one_index_s_counts(served: dict) -> None:
    """POST /documents and /documents/delete through the ingress and through `serve` over one index of the same
    documents, for the same writes: the same counts and index size (the ingress said every document sent was
    added), the same ids removed, and the same 404 for a delete that names an id no document has."""
    import urllib.error

    from searchengine.server.app import create_app
    from searchengine.server.served_index import ServedIndex
    from tests.searchengine.cluster.conftest import COUNTS, counted_writes
    from tests.searchengine.server.conftest import running

    def post(url: str, body: dict) -> tuple[int, dict]:
        try:
            return 200, send(url, body)
        except urllib.error.HTTPError as refused:
            return refused.code, json.loads(refused.read())

    counted = ("documents", "added", "replaced", "updated", "superseded", "index_size")
    one = ServedIndex(served["reference"])
    answered = []
    try:
        with running(create_app(one)) as one_url:
            urls = (served["url"], one_url)
            for records in counted_writes("counted"):
                (status, mine), (_, theirs) = [post(url + "/documents", {"documents": records, "id_field": "id"})
                                               for url in urls]  # fmt: skip
                assert status == 200 and {n: mine[n] for n in counted} == {n: theirs[n] for n in counted}, mine
                answered.append(
                    (mine["documents"], mine["added"], mine["updated"], mine["replaced"], mine["superseded"])
                )
            refusals = [
                post(url + "/documents/delete", {"external_ids": ["counted-0", "no-such-document"]}) for url in urls
            ]
            assert refusals[0] == refusals[1] and refusals[0][0] == 404, refusals
            gone = {"external_ids": [f"counted-{n}" for n in range(4)]}
            (_, mine), (_, theirs) = [post(url + "/documents/delete", gone) for url in urls]
    finally:
        one.close()
    assert answered == COUNTS
    assert (len(mine["deleted"]), mine["index_size"]) == (len(theirs["deleted"]), theirs["index_size"]) == (4, 200)


def test_a_shard_answer_over_grpcs_default_4_mib_comes_back_whole(served: dict) -> None:
    # A search's calls to the copies come back by value (gRPC), whose default limit is 4 MiB a reply: one document
    # of 5 MiB, sent with its shard's candidates, must reach the ingress (GRPC_ENV), not fail the shard's copies.
    url = served["url"]
    text = " ".join(WORDS[number % len(WORDS)] for number in range(1_100_000)) + " quokka"
    assert len(text) > 5 * 2**20
    send(url + "/documents", {"documents": [{"id": "huge", "text": text}], "id_field": "id"})
    try:
        answer = get(url + "/search?q=quokka&k=1&mode=keyword")
        assert answer["shards"] == {"asked": SHARDS, "answered": SHARDS, "partial": False}
        assert [hit["external_id"] for hit in answer["hits"]] == ["huge"]
    finally:
        send(url + "/documents/huge?external=true", None, method="DELETE")


def test_a_write_near_the_body_limit_commits_whole_and_one_over_it_is_a_413(served: dict) -> None:
    """As many documents as one POST may hold, their body just under the server's limit: each shard's part reaches
    its copies by value (shard 1's, 523 documents, holds 4.3 MB of text: past gRPC's default 4 MiB message) and is
    counted whole; a body over the limit is refused in one line before anything is written."""
    import urllib.error

    from searchengine.server.limits import MAX_BODY_BYTES, MAX_DOCUMENTS

    url = served["url"]
    size = get(url + "/info")["documents"]
    words = " ".join(WORDS[number % len(WORDS)] for number in range(3_000))
    records = [{"id": f"bulk-{n}", "text": f"{words[: 8_300 - len(str(n))]} {n}"} for n in range(MAX_DOCUMENTS)]
    body = {"documents": records, "id_field": "id"}
    assert MAX_BODY_BYTES - 100_000 < len(json.dumps(body).encode()) <= MAX_BODY_BYTES
    added = send(url + "/documents", body)
    assert (added["documents"], added["added"]) == (MAX_DOCUMENTS, MAX_DOCUMENTS)
    assert added["index_size"] == size + MAX_DOCUMENTS
    deleted = send(url + "/documents/delete", {"external_ids": [record["id"] for record in records]})
    assert (len(deleted["deleted"]), deleted["index_size"]) == (MAX_DOCUMENTS, size)
    over = {"documents": [{"id": "over", "text": words * (MAX_BODY_BYTES // len(words) + 1)}], "id_field": "id"}
    for where in (url, served["proxy_url"]):  # the ingress's own port, and through Serve's proxy
        with pytest.raises(urllib.error.HTTPError) as refused:
            send(where + "/documents", over)
        error = json.loads(refused.value.read())["error"]
        assert refused.value.code == 413 and "\n" not in error, error
    assert get(url + "/info")["documents"] == size


def test_a_delete_by_an_odd_external_id_in_the_path_deletes_that_one_document(served: dict) -> None:
    """Ids that a path mangles unless it is quoted (a slash, a quoted slash, letters past ASCII, 2,000 characters):
    each is written and deleted through DELETE /documents/ID?external=true, and a second delete is one index's
    404."""
    import urllib.error
    import urllib.parse

    url = served["url"]
    size = get(url + "/info")["documents"]
    odd = ["a/b", "%2F", "dé jà ✓", "long-" + "x" * 2_000]
    added = send(url + "/documents", {"documents": [{"id": i, "text": f"an odd id number {n}"} for n, i in enumerate(odd)],
                                      "id_field": "id"})  # fmt: skip
    assert added["added"] == len(odd)
    for external_id in odd:
        path = f"{url}/documents/{urllib.parse.quote(external_id, safe='')}?external=true"
        assert len(send(path, None, method="DELETE")["deleted"]) == 1, external_id
        with pytest.raises(urllib.error.HTTPError) as again:
            send(path, None, method="DELETE")
        error = json.loads(again.value.read())["error"]
        assert again.value.code == 404 and error == f"no document with external id {external_id}; nothing was deleted"
    assert get(url + "/info")["documents"] == size


def test_a_restarted_ingress_deletes_the_copies_of_its_build_its_manifest_does_not_name(served: dict) -> None:
    """An ingress that died between writing the manifest (heal moved a copy) and deleting the replaced copy's Serve
    application left that application running for ever: the replaced copies were listed in its memory only. Started
    again, the ingress deletes the copy applications of its manifest's build that the manifest does not name; the
    copies it names, another build's of the same cluster index and another cluster index's go on."""
    from ray import serve

    from searchengine.cluster.manifest import CopyPlace, copy_folder, new_build_id, read_manifest
    from searchengine.cluster.served import copy_app_name, running_apps
    from searchengine.server.cluster.copy_deployments import start_copy_deployments
    from searchengine.server.cluster.serve_app import cluster_status

    path = served["folder"] / "cluster.json"
    manifest = read_manifest(path)
    root = manifest.local_root
    replaced, other_build, other_index = (
        CopyPlace("head", copy_folder(root, "head", name, build, 0))
        for name, build in [(manifest.name, manifest.build), (manifest.name, new_build_id()), ("another", manifest.build)]
    )
    start_copy_deployments([(place, 0) for place in (replaced, other_build, other_index)], root)
    named = {copy_app_name(place, shard) for shard, places in enumerate(manifest.placement) for place in places}
    unnamed, others = copy_app_name(replaced, 0), {copy_app_name(other_build, 0), copy_app_name(other_index, 0)}
    assert {unnamed, *others} <= running_apps()
    try:
        kill_the_ingress(served)
        deadline = time.monotonic() + 60
        while unnamed in running_apps():
            assert time.monotonic() < deadline, f"the ingress started again left {unnamed}, a copy no manifest names"
            time.sleep(0.5)
        assert named | others <= running_apps()
    finally:
        for app in others:
            serve.delete(app, _blocking=False)
        served["url"] = cluster_status(path)["ingress_url"]  # the ingress's own port may have moved


def test_a_killed_ingress_is_started_again_and_status_says_where_it_listens(served: dict) -> None:
    """kill -9 of the ingress replica: Serve starts it again, it reads from the copies which writes each holds (one
    acknowledged before the kill is found after), it answers through the proxy's address as before, and at its own
    port, which `cluster-index status` shows (the old one, or the next free one while the old one's closed
    connections wait out TCP's TIME_WAIT)."""
    added = send(served["url"] + "/documents", {"documents": [{"id": "before-kill", "text": "a velvet lantern"}],
                                                "id_field": "id"})  # fmt: skip
    assert added["documents"] == 1
    body = {"queries": QUERIES, "k": 5, "mode": "hybrid"}
    before = send(served["url"] + "/search", body)["results"]
    kill_the_ingress(served)
    result = CliRunner().invoke(
        cli, ["cluster-index", "status", str(served["folder"] / "cluster.json"), "--address", served["address"]]
    )
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("ingress listening at ")]
    served["url"] = line.removeprefix("ingress listening at ").rstrip("/")
    for where in (served["url"], served["proxy_url"]):
        after = send(where + "/search", body)["results"]
        assert [[hit["external_id"] for hit in answer["hits"]] for answer in after] == [
            [hit["external_id"] for hit in answer["hits"]] for answer in before
        ]
    hits = get(served["url"] + "/search?q=a+velvet+lantern&k=1&mode=keyword")["hits"]
    assert hits[0]["external_id"] == "before-kill"
    send(served["url"] + "/documents/before-kill?external=true", None, method="DELETE")


def test_status_of_a_stopped_ingress_is_one_clear_error(served: dict) -> None:
    from searchengine.cluster.errors import ClusterError
    from searchengine.server.cluster.serve_app import cluster_status

    process = ingress_process()
    os.kill(process, signal.SIGSTOP)
    try:
        with pytest.raises(ClusterError, match="did not answer within 2 s"):
            cluster_status(served["folder"] / "cluster.json", timeout_s=2.0)
    finally:
        os.kill(process, signal.SIGCONT)
    assert get(served["url"] + "/health") == {"status": "ok"}


def test_status_of_another_manifest_is_its_own_not_the_running_ingresss(served: dict) -> None:
    """The running ingress serves the fixture's manifest: status of another (a cluster whose copies are on nodes
    this Ray cluster lacks) asks that manifest's copies, and reports neither the ingress's documents nor its
    address."""
    from dataclasses import replace

    from searchengine.cluster.manifest import CopyPlace, copy_folder, read_manifest, write_manifest
    from searchengine.server.cluster.serve_app import cluster_status

    served_manifest = read_manifest(served["folder"] / "cluster.json")
    root, build = served_manifest.local_root, served_manifest.build
    placement = tuple(
        tuple(
            CopyPlace(f"elsewhere-{place.node}", copy_folder(root, f"elsewhere-{place.node}", "elsewhere", build, shard))
            for place in places
        )
        for shard, places in enumerate(served_manifest.placement)
    )
    other = served["folder"] / "elsewhere.json"
    write_manifest(other, replace(served_manifest, name="elsewhere", placement=placement))
    status = cluster_status(other)
    assert "ingress_url" not in status and status["name"] == "elsewhere" and status["documents"] == 0
    copies = [copy for shard in status["shards"] for copy in shard["copies"]]
    assert len(copies) == 4 and not any(copy["live"] or copy["serving"] for copy in copies)
    assert cluster_status(served["folder"] / "cluster.json")["ingress_url"] is not None


def test_a_build_at_the_served_manifest_path_is_refused_before_it_starts_a_copy(served: dict, tiny_model: Path) -> None:
    """It committed, and removed the served copies' folders under them: from then on every search and write the
    ingress took failed with a 400 naming a missing folder, and the writes acknowledged before it were gone. Now
    the build refuses in one line, before any copy starts, and the served cluster goes on as it was."""
    from searchengine.cluster import ClusterBuildSettings, ClusterError, build_cluster
    from searchengine.cluster.manifest import read_manifest

    path = served["folder"] / "cluster.json"
    before = read_manifest(path)
    settings = ClusterBuildSettings(
        shards=SHARDS, copies=2, model=str(tiny_model), local_root=str(served["folder"] / "nodes"),
        encoder_options={"precision": "fp32"}, nodes=["head", "a"],
    )  # fmt: skip
    started: list[Any] = []
    with pytest.raises(ClusterError) as refused:
        build_cluster(path, corpus(20), settings, starter=lambda *copy: started.append(copy))
    message = str(refused.value)
    assert message.startswith(f"the cluster index at {path} is being served on this Ray cluster (4 of its copies"), message
    assert f"stop serving it first (`searchengine cluster-index stop {path}`), or build under another" in message
    assert started == [] and read_manifest(path) == before
    assert all(Path(place.folder).is_dir() for places in before.placement for place in places)
    send(served["url"] + "/documents", {"documents": [{"id": "after-refusal", "text": "a kestrel over the dunes"}],
                                        "id_field": "id"})  # fmt: skip
    found = get(served["url"] + "/search?q=kestrel+over+the+dunes&k=1&mode=keyword")
    assert found["shards"]["answered"] == SHARDS and found["hits"][0]["external_id"] == "after-refusal"


def test_a_lost_node_fails_no_search_and_loses_no_acknowledged_write(served: dict) -> None:
    """Searches in flight when the node goes, and those just after, answer whole and as before, each well within
    the search timeout (a call to the lost node's copy never fails by itself: it waited the whole timeout before
    the shard's other copy was asked). A write sent just after the loss is acknowledged well within the write
    timeout (it waited the whole timeout for the lost copy), is found, and is held by the copy heal rebuilds in the
    lost one's place, whose Serve application replaces the lost copy's (deleted, as nothing else would: its replica
    stayed pinned to the lost node); then writes go on and none is lost."""
    from searchengine.cluster.manifest import read_manifest
    from searchengine.cluster.served import copy_app_name, running_apps
    from searchengine.server.cluster.copy_deployments import SEARCH_TIMEOUT_S, WRITE_TIMEOUT_S

    url = served["url"]
    path = served["folder"] / "cluster.json"
    lost = {
        copy_app_name(place, shard)
        for shard, places in enumerate(read_manifest(path).placement) for place in places if place.node == "a"
    }  # fmt: skip
    assert len(lost) == SHARDS and lost <= running_apps()
    body = {"queries": QUERIES, "k": 5, "mode": "hybrid"}
    expected = [[hit["external_id"] for hit in answer["hits"]] for answer in send(url + "/search", body)["results"]]
    for _ in range(LATENCY_SAMPLES_NEEDED):  # each shard's calls measured: the hedge delay is their own
        send(url + "/search", body)
    timed: list[tuple[float, float, Any]] = []  # (started, seconds, the answers or None: failed)
    errors: list[str] = []
    stop = threading.Event()

    def search_until_stopped() -> None:
        while not stop.is_set():
            started = time.perf_counter()
            try:
                answers = send(url + "/search", body)["results"]
            except Exception as error:  # noqa: BLE001 (counted: none may fail, and said why)
                answers = None
                errors.append(f"after {time.perf_counter() - started:.1f} s: {error!r} {_body_of(error)}")
            timed.append((started, time.perf_counter() - started, answers))

    searchers = [threading.Thread(target=search_until_stopped) for _ in range(2)]  # the ingress's 2 readers
    for searcher in searchers:
        searcher.start()
    time.sleep(0.5)
    removed = time.perf_counter()
    served["cluster"].remove_node(served["nodes"]["a"])
    writing = time.perf_counter()  # before heal (every 2 s) most likely looked: the lost copies still serve
    send(url + "/documents", {"documents": [{"id": "at-loss", "text": LOSS_TEXT}], "id_field": "id"})
    wrote_s = time.perf_counter() - writing
    time.sleep(SEARCHING_AFTER_LOSS_S)
    stop.set()
    for searcher in searchers:
        searcher.join()
    around = [(started, seconds, answers) for started, seconds, answers in timed if started + seconds >= removed]
    assert any(started < removed for started, _, _ in around), "a search was in flight when the node went"
    assert all(answers is not None for _, _, answers in around), f"no search failed: {errors}"
    for _, _, answers in around:
        assert all(answer["shards"]["answered"] == SHARDS for answer in answers)
        assert [[hit["external_id"] for hit in answer["hits"]] for answer in answers] == expected
    slowest = max(seconds for _, seconds, _ in around)
    assert slowest < SEARCH_TIMEOUT_S / 2, f"a search waited {slowest:.1f} s for the lost node's copy"
    assert wrote_s < WRITE_TIMEOUT_S / 3, f"the write waited {wrote_s:.1f} s for the lost node's copy"
    found = get(url + "/search?q=" + LOSS_TEXT.replace(" ", "+") + "&k=1&mode=keyword")
    assert found["shards"]["answered"] == SHARDS and found["hits"][0]["external_id"] == "at-loss"
    assert_rebuilt_copies_hold(served, "at-loss")
    rebuilt = {copy_app_name(place, shard) for shard, places in enumerate(read_manifest(path).placement) for place in places}
    deadline = time.perf_counter() + REPLACED_GONE_WITHIN_S
    while lost & running_apps():
        assert time.perf_counter() < deadline, f"the lost copies' applications {lost & running_apps()} still run"
        time.sleep(0.5)
    assert rebuilt <= running_apps() and not lost & rebuilt
    failed, written = 0, []
    for number in range(6):
        try:
            result = send(url + "/search", {"queries": QUERIES, "k": 5, "mode": "hybrid"})["results"]
            assert all(answer["shards"]["answered"] == SHARDS for answer in result)
        except Exception:  # noqa: BLE001 (counted: none may fail)
            failed += 1
        send(url + "/documents", {"documents": [{"id": f"after-{number}", "text": f"storm {number} over the city"}],
                                  "id_field": "id"})  # fmt: skip
        written.append(f"after-{number}")
    assert failed == 0
    for external_id in written:
        hits = get(url + f"/search?q=storm+{external_id[-1]}+over+the+city&k=10&mode=keyword")["hits"]
        assert external_id in {hit["external_id"] for hit in hits}


def test_serving_again_on_a_running_serve_gives_the_addresses_it_listens_on(served: dict) -> None:
    """Serve already running keeps its HTTP options and its controller's environment (a new port is ignored, with
    Serve's warning): served again, the addresses given are those Serve listens on, not those asked for. After the
    node's loss: it deploys the ingress again, and the copies left are those of the head."""
    from searchengine.server.cluster.serve_app import serve_cluster

    again = serve_cluster(served["folder"] / "cluster.json", port=free_port(), heal_every_s=2.0)
    assert again.proxy_url == served["proxy_url"]
    assert again.ingress_url is not None and again.ingress_url != again.proxy_url
    served["url"] = again.ingress_url  # the ingress was deployed again: its port may have moved
    for where in (again.ingress_url, again.proxy_url):
        assert get(where + "/health") == {"status": "ok"}


def test_stop_and_status_refuse_a_file_that_is_not_a_cluster_manifest_in_the_same_line(served: dict) -> None:
    not_one = served["folder"] / "not-a-manifest.json"
    not_one.write_text("shards: 2\n")
    lines = []
    for command in ("stop", "status"):
        result = CliRunner().invoke(cli, ["cluster-index", command, str(not_one), "--address", served["address"]])
        assert result.exit_code == 1, result.output
        lines.append(result.output.strip().splitlines())
    assert lines[0] == lines[1] and len(lines[0]) == 1, lines
    assert lines[0][0].startswith(f"Error: cluster manifest {not_one} cannot be read ("), lines


def test_stop_deletes_the_clusters_serve_applications_only_and_a_build_there_goes_on(
    served: dict, tiny_model: Path
) -> None:
    """`cluster-index stop`: the ingress and the manifest's copies go (waited for) while another Serve application
    behind the same proxy still answers; stopped again, one line and exit code 0; status then asks the copies; and
    a build at the manifest path, refused while it was served, commits. Last: it stops the cluster."""
    import urllib.error

    from ray import serve

    from searchengine.cluster import ClusterBuildSettings, build_cluster
    from searchengine.cluster.manifest import read_manifest
    from searchengine.cluster.served import copy_app_name, running_apps
    from searchengine.server.cluster.serve_app import INGRESS_APP

    @serve.deployment(ray_actor_options={"num_cpus": 0})
    def other(_request: Any) -> str:  # noqa: ANN401 (a Starlette request)
        return "still here"

    serve.run(other.bind(), name="other", route_prefix="/other")
    path = served["folder"] / "cluster.json"
    before = read_manifest(path)
    copies = [copy_app_name(place, shard) for shard, places in enumerate(before.placement) for place in places]
    documents = get(served["url"] + "/info")["documents"]
    stop = ["cluster-index", "stop", str(path), "--address", served["address"]]
    result = CliRunner().invoke(cli, stop)
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"Stopped serving {path}: its ingress and 4 copies (Serve applications {', '.join([INGRESS_APP, *copies])}).\n"
    )
    running = running_apps()
    assert "other" in running and not {INGRESS_APP, *copies} & running, running
    with urllib.request.urlopen(served["proxy_url"] + "/other", timeout=60) as response:
        assert response.read() == b"still here"
    with pytest.raises(urllib.error.HTTPError) as gone:
        get(served["proxy_url"] + "/health")
    assert gone.value.code == 404
    again = CliRunner().invoke(cli, stop)
    assert (again.exit_code, again.stdout) == (0, f"{path} is not being served on this Ray cluster: nothing to stop.\n")
    result = CliRunner().invoke(cli, ["cluster-index", "status", str(path), "--address", served["address"], "--json"])
    assert result.exit_code == 0, result.output
    status = json.loads(result.stdout)
    assert status["documents"] == documents and "ingress_url" not in status
    assert all(copy["lag"] == 0 for shard in status["shards"] for copy in shard["copies"])
    settings = ClusterBuildSettings(
        shards=SHARDS, copies=1, model=str(tiny_model), local_root=str(served["folder"] / "nodes"),
        encoder_options={"precision": "fp32"}, nodes=["head"],
    )  # fmt: skip
    built, report = build_cluster(path, corpus(20), settings)
    for states in built.copies:
        for state in states:
            ray.kill(state.handle)
    assert report.documents == 20 and read_manifest(path).build != before.build
