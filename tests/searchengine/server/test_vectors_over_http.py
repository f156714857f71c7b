"""Vectors in and out over HTTP, on a real uvicorn: `embeddings` beside the documents of POST /documents and a
`vector` in POST /search."""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from searchengine.server.served_index import ServedIndex


def test_documents_added_with_vectors_are_found_by_vector_and_by_keyword(live_url: str, served: ServedIndex) -> None:
    vectors = np.random.default_rng(1).standard_normal((2, 32)).round(4)
    documents = [
        {"text": "an owl hoots at night", "id": "owl", "kind": "bird"},
        {"text": "a whale sings in the sea", "id": "whale", "kind": "sea"},
    ]
    with httpx.Client(base_url=live_url, timeout=60) as client:
        added = client.post(
            "/documents", json={"documents": documents, "id_field": "id", "embeddings": vectors.tolist()}
        )
        assert added.status_code == 200, added.text
        assert added.json()["added"] == 2
        found = client.post("/search", json={"vector": vectors[1].tolist(), "k": 2, "where": ["kind=sea"]})
        assert found.status_code == 200, found.text
        result = found.json()["results"][0]
        assert (result["query"], result["mode"]) == (None, "dense")
        assert [hit["external_id"] for hit in result["hits"]] == ["whale"]
        assert result["hits"][0]["score"] == pytest.approx(1.0, abs=1e-5)
        keyword = client.get("/search", params={"q": "owl", "mode": "keyword", "k": 1}).json()
        assert keyword["hits"][0]["external_id"] == "owl"
        # the vector of a text, as /v1/embeddings gives it, finds what a text search finds
        text = "the cat sat on the mat"
        embedded = served.reader.run(lambda engine: engine.encode([text])[0].tolist()).result()
        by_vector = client.post("/search", json={"vector": embedded, "k": 3}).json()["results"][0]["hits"]
        by_text = client.get("/search", params={"q": text, "mode": "dense", "k": 3}).json()["hits"]
        assert [hit["id"] for hit in by_vector] == [hit["id"] for hit in by_text]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"vector": [0.5] * 31}, "the vector has 31 numbers, but this index's vectors have 32"),
        ({"vector": [0.5] * 32, "queries": ["a"]}, "not both"),
        ({"vector": [0.5] * 32, "mode": "hybrid"}, "a search by vector is dense"),
        ({"vector": [0.5] * 32, "all_shards": True}, "drop all_shards"),
        ({}, "give queries"),
    ],
)
def test_a_bad_vector_search_is_refused_in_one_line(live_url: str, body: dict, message: str) -> None:
    response = httpx.post(f"{live_url}/search", json=body, timeout=60)
    assert response.status_code == 400
    assert message in response.json()["error"]


def test_embeddings_of_the_wrong_size_write_nothing(live_url: str) -> None:
    with httpx.Client(base_url=live_url, timeout=60) as client:
        before = client.get("/info").json()["documents"]
        response = client.post("/documents", json={"documents": [{"text": "x"}], "embeddings": [[0.1] * 8]})
        assert response.status_code == 400
        assert "have 8 numbers each, but this index's vectors have 32" in response.json()["error"]
        assert client.get("/info").json()["documents"] == before


def test_mmr_over_http_takes_its_options(live_url: str, served: ServedIndex) -> None:
    body = {"queries": ["the cat sat on the mat"], "k": 3, "mode": "mmr", "mode_options": {"fetch_k": 6, "lambda_mult": 0.3}}
    response = httpx.post(f"{live_url}/search", json=body, timeout=60)
    assert response.status_code == 200, response.text
    expected = served.reader.run(
        lambda engine: engine.search("the cat sat on the mat", 3, mode="mmr", mode_options={"fetch_k": 6, "lambda_mult": 0.3})
    ).result()
    assert [hit["id"] for hit in response.json()["results"][0]["hits"]] == [hit.id for hit in expected]
    body["mode_options"] = {"fetch_k": 6.5}
    refused = httpx.post(f"{live_url}/search", json=body, timeout=60)
    assert refused.status_code == 400 and "fetch_k must be a whole number" in refused.json()["error"]
