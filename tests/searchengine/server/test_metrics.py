"""GET /metrics in Prometheus' text format: requests and latency by route, searches by mode, the index's
documents, segments, merges and queued writes, behind the key of searches; parsed with prometheus-client's own
parser, as a Prometheus server would read it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from searchengine.server.app import ServerSettings, create_app
from searchengine.server.served_index import ServedIndex
from tests.conftest import SENTENCES


@pytest.fixture
def client(served: ServedIndex) -> Iterator[TestClient]:
    with TestClient(create_app(served)) as test_client:
        yield test_client


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape by (name, sorted labels)."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape(client: TestClient, **headers: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return samples(response.text)


def test_metrics_count_requests_by_route_and_searches_by_mode(client: TestClient) -> None:
    for mode in ("dense", "keyword", "keyword"):
        assert client.get("/search", params={"q": "the cat", "mode": mode}).status_code == 200
    assert client.post("/search", json={"queries": ["cat", "dog", "moon"], "mode": "hybrid"}).status_code == 200
    assert client.get("/search", params={"q": "x", "k": 0}).status_code == 400
    assert client.get("/no-such-page").status_code == 404
    seen = scrape(client)
    route = ("method", "GET"), ("route", "/search"), ("status", "200")
    assert seen["searchengine_requests_total", route] == 3
    assert seen["searchengine_requests_total", (("method", "POST"), ("route", "/search"), ("status", "200"))] == 1
    assert seen["searchengine_requests_total", (("method", "GET"), ("route", "/search"), ("status", "400"))] == 1
    assert seen["searchengine_requests_total", (("method", "GET"), ("route", "unmatched"), ("status", "404"))] == 1
    assert seen["searchengine_request_seconds_count", (("method", "GET"), ("route", "/search"))] == 4
    assert seen["searchengine_request_seconds_sum", (("method", "GET"), ("route", "/search"))] > 0
    assert seen["searchengine_search_seconds_count", (("mode", "keyword"),)] == 2
    assert seen["searchengine_search_seconds_count", (("mode", "dense"),)] == 1
    assert seen["searchengine_queries_total", (("mode", "hybrid"),)] == 3
    assert seen["searchengine_documents", ()] == len(SENTENCES) and seen["searchengine_segments", ()] == 1
    assert seen["searchengine_queued_writes", ()] == 0 and seen["searchengine_merges_total", ()] == 0


def test_metrics_follow_writes_and_merges(client: TestClient) -> None:
    for number in range(10):  # ten one-document segments beside the build's: the merge policy merges them
        response = client.post("/documents", json={"documents": [{"text": f"a new note {number} on the garden"}]})
        assert response.status_code == 200, response.text
    client.delete("/documents/1")
    served: ServedIndex = client.app.state.index
    served.writer.submit(lambda engine: None).result()  # the merges queued after the writes are done
    seen = scrape(client)
    assert seen["searchengine_documents", ()] == len(SENTENCES) + 10 - 1
    assert seen["searchengine_merges_total", ()] >= 1
    assert seen["searchengine_segments", ()] < 11
    delete = (("method", "DELETE"), ("route", "/documents/{document_id:path}"), ("status", "200"))
    assert seen["searchengine_requests_total", delete] == 1
    assert seen["searchengine_queued_writes", ()] == 0


def test_queued_writes_counts_writes_waiting_for_the_writer(served: ServedIndex) -> None:
    import threading

    release = threading.Event()
    blocking = served.writer.submit(lambda engine: release.wait(30))
    waiting = served.writer.submit(lambda engine: None)
    with TestClient(create_app(served)) as client:
        assert scrape(client)["searchengine_queued_writes", ()] == 2
        release.set()
        blocking.result()
        waiting.result()
        assert scrape(client)["searchengine_queued_writes", ()] == 0


def test_metrics_need_the_key_of_searches(served: ServedIndex) -> None:
    with TestClient(create_app(served, ServerSettings(api_key="secret", api_key_for="all"))) as client:
        refused = client.get("/metrics")
        assert refused.status_code == 401 and "API key" in refused.json()["error"]
        assert scrape(client, Authorization="Bearer secret")["searchengine_documents", ()] == len(SENTENCES)
    with TestClient(create_app(served, ServerSettings(api_key="secret"))) as client:  # the key guards writes only
        assert client.get("/metrics").status_code == 200


def test_two_apps_in_one_process_keep_their_own_counts(served: ServedIndex) -> None:
    with TestClient(create_app(served)) as first, TestClient(create_app(served)) as second:
        first.get("/search", params={"q": "cat", "mode": "dense"})
        assert ("searchengine_search_seconds_count", (("mode", "dense"),)) not in scrape(second)
        assert scrape(first)["searchengine_search_seconds_count", (("mode", "dense"),)] == 1
