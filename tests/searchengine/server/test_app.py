"""The HTTP API in-process (FastAPI's TestClient): answers, writes, auth, and one-line 4xx errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from searchengine.indexer.commit.index_directory import IndexDirectory

from searchengine.encoding.encoder import Encoder
from searchengine.engine.build_settings import BuildSettings
from searchengine.engine.search_engine import SearchEngine
from searchengine.errors import SearchEngineError
from searchengine.server.app import ServerSettings, create_app
from searchengine.server.limits import MAX_K
from searchengine.server.reader import SearchOptions
from searchengine.server.served_index import ServedIndex
from tests.conftest import SENTENCES
from tests.searchengine.encoding.test_cross_encoder import write_tiny_cross_encoder


@pytest.fixture
def client(served: ServedIndex) -> Iterator[TestClient]:
    with TestClient(create_app(served)) as test_client:
        yield test_client


def _error(response, status: int) -> str:  # noqa: ANN001
    """The one line of an error response; under /v1/, the message of OpenAI's error object."""
    assert response.status_code == status, response.text
    body = response.json()
    assert list(body) == ["error"]
    error = body["error"]
    if response.request.url.path.startswith("/v1/"):
        assert list(error) == ["message", "type", "param", "code"]
        error = error["message"]
    assert "\n" not in error and error
    return error


def test_health_and_info(client: TestClient) -> None:
    assert client.get("/health").json() == {"status": "ok"}
    info = client.get("/info").json()
    assert info["vectors"] == len(SENTENCES) and info["index_type"] == "Flat"
    assert info["server"]["modes"] == ["dense", "keyword", "hybrid", "mmr"] and info["server"]["default_mode"] == "hybrid"
    assert info["keyword_index"] is True and info["server"]["limits"]["k"] == MAX_K


def test_get_search_finds_the_exact_text_first_with_its_metadata(client: TestClient) -> None:
    result = client.get("/search", params={"q": "the cat sat on the mat", "k": 3}).json()
    assert result["query"] == "the cat sat on the mat" and result["rerank"] is None and result["mode"] == "hybrid"
    assert len(result["hits"]) == 3
    best = result["hits"][0]
    assert best["text"] == "the cat sat on the mat" and best["dense_score"] == pytest.approx(1.0, abs=1e-4)
    assert best["found_by"] == ["dense", "keyword"] and best["keyword_score"] > 0
    assert best["metadata"] == {"lang": "en", "year": 2001} and best["source"] == "fixture.jsonl"
    assert best["snippet"] == best["text"] and best["span"] is None
    assert [hit["score"] for hit in result["hits"]] == sorted((hit["score"] for hit in result["hits"]), reverse=True)


def test_a_long_document_comes_back_with_the_passage_that_matched(tmp_path: Path, tiny_encoder: Encoder) -> None:
    long = " ".join(f"{sentence}." for sentence in SENTENCES * 3) + " the king and queen ruled the empire."
    SearchEngine.build([long, "a cat"], tmp_path / "long", BuildSettings(passages=True), encoder=tiny_encoder).close()
    index = ServedIndex(tmp_path / "long", encoder=tiny_encoder)
    try:
        with TestClient(create_app(index)) as client:
            best = client.get("/search", params={"q": "the king and queen ruled the empire", "k": 1}).json()["hits"][0]
    finally:
        index.close()
    start, end = best["span"]
    assert best["text"] == long and end == len(long) and "queen ruled the empire" in long[start:end]
    assert best["snippet"].startswith("…") and len(best["snippet"]) <= 200


def test_post_search_answers_each_query_with_filters(client: TestClient) -> None:
    response = client.post(
        "/search",
        json={"queries": ["the cat sat on the mat", "how do i reset my password"], "k": 20, "where": ["lang=de"]},
    )
    results = response.json()["results"]
    assert [r["query"] for r in results] == ["the cat sat on the mat", "how do i reset my password"]
    for result in results:
        assert len(result["hits"]) == len(SENTENCES) // 2
        assert all(hit["metadata"]["lang"] == "de" for hit in result["hits"])
    assert results[1]["hits"][0]["text"] == "how do i reset my password"


def test_each_mode_answers_as_the_api_does_and_says_which_it_was(client: TestClient, served: ServedIndex) -> None:
    for mode in ("dense", "keyword", "hybrid"):
        result = client.get("/search", params={"q": "piano song", "k": 4, "mode": mode}).json()
        assert result["mode"] == mode
        expected = served.reader.search(["piano song"], SearchOptions(k=4, mode=mode)).result()[0]
        assert [hit["id"] for hit in result["hits"]] == [hit.id for hit in expected]
        assert [hit["found_by"] for hit in result["hits"]] == [list(hit.found_by) for hit in expected]
    keyword = client.post("/search", json={"queries": ["piano", "oven"], "mode": "keyword", "where": ["year>=2008"]})
    results = keyword.json()["results"]
    assert [[hit["text"] for hit in result["hits"]] for result in results] == [
        ["she played a song on the piano"],
        [],  # the bread text is from 2005
    ]
    assert all(result["mode"] == "keyword" for result in results)


def test_repeated_where_in_the_query_string_combines(client: TestClient) -> None:
    hits = client.get("/search", params=[("q", "cat"), ("k", 50), ("where", "lang=en"), ("where", "year>=2009")])
    assert sorted(hit["metadata"]["year"] for hit in hits.json()["hits"]) == [2009, 2011]


def test_add_then_search_then_delete(client: TestClient) -> None:
    added = client.post("/documents", json={"documents": [{"text": "a brand new kitten note", "lang": "en"}]})
    assert added.status_code == 200, added.text
    assert added.json()["added"] == 1 and added.json()["index_size"] == len(SENTENCES) + 1
    best = client.get("/search", params={"q": "a brand new kitten note", "k": 1}).json()["hits"][0]
    assert best["text"] == "a brand new kitten note" and best["metadata"] == {"lang": "en"}
    deleted = client.delete(f"/documents/{best['id']}")
    assert deleted.json() == {"deleted": [best["id"]], "index_size": len(SENTENCES)}
    assert client.get("/search", params={"q": "a brand new kitten note", "k": 1}).json()["hits"][0]["id"] != best["id"]


def test_upsert_and_delete_by_external_id(client: TestClient) -> None:
    replaced = client.post(
        "/documents", json={"documents": [{"id": "doc-1", "text": "the dog sat on the rug"}], "id_field": "id"}
    ).json()
    assert replaced["replaced"] == 1 and replaced["index_size"] == len(SENTENCES)
    texts = [hit["text"] for hit in client.get("/search", params={"q": "cat", "k": 50}).json()["hits"]]
    assert "the dog sat on the rug" in texts and "the cat sat on the mat" not in texts
    assert client.delete("/documents/doc-1", params={"external": True}).json()["index_size"] == len(SENTENCES) - 1


def test_an_external_id_with_slashes_is_deleted(client: TestClient) -> None:
    """Files' ids are their paths (notes/guide.md#2): %2F in the address arrives as a slash."""
    document = {"id": "notes/guide.md#2", "text": "a page of the guide"}
    assert client.post("/documents", json={"documents": [document], "id_field": "id"}).status_code == 200
    deleted = client.delete("/documents/notes%2Fguide.md%232", params={"external": True})
    assert deleted.status_code == 200, deleted.text
    assert deleted.json()["index_size"] == len(SENTENCES)


@pytest.mark.parametrize("written", ["1_0", "\u0663", "+3", "1/2"])
def test_only_plain_digits_name_a_document_id(client: TestClient, written: str) -> None:
    """int() reads 1_0 as 10 and an Arabic-Indic digit as 3: a mistyped id must delete nothing."""
    assert "is not a document id (a number)" in _error(client.delete(f"/documents/{written}"), 400)
    assert client.get("/info").json()["documents"] == len(SENTENCES)


def test_an_id_repeated_in_one_request_is_one_document_and_the_answer_says_so(client: TestClient) -> None:
    documents = [{"id": 7, "text": "a first new text"}, {"id": "7", "text": "a second new text"}]
    added = client.post("/documents", json={"documents": documents, "id_field": "id"}).json()
    assert (added["added"], added["superseded"], added["updated"]) == (1, 1, 0)
    assert added["index_size"] == len(SENTENCES) + 1
    again = client.post("/documents", json={"documents": documents[1:], "id_field": "id"}).json()
    assert (again["added"], again["updated"], again["index_size"]) == (0, 1, len(SENTENCES) + 1)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"q": "cat", "k": 0}, "k: Input should be greater than or equal to 1"),
        ({"q": "cat", "k": MAX_K + 1}, f"k: Input should be less than or equal to {MAX_K}"),
        ({"q": "cat", "k": "ten"}, "k: Input should be a valid integer"),
        ({"q": "   "}, "the query is empty"),
        ({}, "q: Field required"),
        ({"q": "cat", "where": "lang"}, "cannot read the filter 'lang'"),
        ({"q": "cat", "where": "colour=red"}, "no document has a field 'colour'"),
        ({"q": "cat", "rerank": "some-model"}, "this server reranks with no cross-encoder"),
        ({"q": "cat", "rerank_top": 5}, "add rerank=MODEL"),
        ({"q": "cat", "mode": "sparse"}, "mode: Input should be 'dense', 'keyword', 'hybrid' or 'mmr'"),
    ],
)
def test_bad_searches_get_400_and_one_line(client: TestClient, params: dict, message: str) -> None:
    assert message in _error(client.get("/search", params=params), 400)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"queries": []}, "queries: List should have at least 1 item"),
        ({"queries": ["cat", ""]}, "query number 2 is empty"),
        ({"queries": ["cat"], "k": -1}, "k: Input should be greater than or equal to 1"),
        ({"queries": ["cat"], "colour": 1}, "colour: Extra inputs are not permitted"),
        ({"queries": "cat"}, "queries: Input should be a valid list"),
        ({"queries": ["cat"], "mode": "bm25"}, "mode: Input should be 'dense', 'keyword', 'hybrid' or 'mmr'"),
        ({"queries": ["cat"], "k": True}, "k: Input should be a valid integer"),  # was read as k 1
        ({"queries": ["cat"], "rescore": False}, "rescore: Input should be a valid integer"),
        ({"queries": ["cat"], "min_score": True}, "min_score: Input should be a valid number"),
    ],
)
def test_bad_batch_searches_get_400_and_one_line(client: TestClient, body: dict, message: str) -> None:
    assert message in _error(client.post("/search", json=body), 400)


def test_bodies_that_are_not_json_get_400(client: TestClient) -> None:
    assert "not valid JSON" in _error(
        client.post("/search", content=b'{"queries": [', headers={"Content-Type": "application/json"}), 400
    )
    assert "Content-Type: application/json" in _error(client.post("/search", data={"queries": "cat"}), 400)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"documents": [{"text": "caf\xe9"}]}', "the request body is not UTF-8 (b'\\xe9' at byte offset 28)"),
        (b'{"documents": [{"text": "x", "n": %s}]}' % (b"9" * 5000), "an integer of more than 4,300 digits"),
        (b'{"documents": [{"text": "x", "m": %s}]}' % (b"[" * 100_000 + b"]" * 100_000), "nested too deeply"),
    ],
)
def test_bodies_json_cannot_read_say_why(client: TestClient, body: bytes, message: str) -> None:
    """FastAPI says only "There was an error parsing the body" for these (hostile test of serve)."""
    answer = client.post("/documents", content=body, headers={"Content-Type": "application/json"})
    assert message in _error(answer, 400)
    assert client.get("/info").json()["vectors"] == len(SENTENCES)


def test_bad_documents_get_400_and_change_nothing(client: TestClient) -> None:
    assert 'document 2 needs a JSON object with a string "text" field' in _error(
        client.post("/documents", json={"documents": [{"text": "fine"}, {"title": "no text"}]}), 400
    )
    assert 'document 1 needs a string or integer "id" field' in _error(
        client.post("/documents", json={"documents": [{"text": "fine"}], "id_field": "id"}), 400
    )
    assert 'document 1 has an empty "id" field (the id)' in _error(  # no delete by external id could name it
        client.post("/documents", json={"documents": [{"text": "fine", "id": " "}], "id_field": "id"}), 400
    )
    assert client.get("/info").json()["vectors"] == len(SENTENCES)


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_in_posted_metadata_get_400_and_change_nothing(client: TestClient, number: str) -> None:
    """Python's JSON reader takes NaN and Infinity; stored, they broke every later filtered search."""
    body = '{"documents": [{"text": "a fine text"}, {"text": "a text", "score": NUMBER}]}'.replace("NUMBER", number)
    response = client.post("/documents", content=body, headers={"Content-Type": "application/json"})
    assert "document 2 holds NaN or Infinity in its metadata" in _error(response, 400)
    assert client.get("/info").json()["vectors"] == len(SENTENCES)
    assert client.post("/search", json={"queries": ["cat"], "k": 2, "where": ["id>=0"]}).status_code == 200


def test_lone_surrogates_get_400_and_change_nothing(client: TestClient) -> None:
    """A JSON escape like "\\ud800" is half a character: refused in one line, never a 500."""
    json_type = {"Content-Type": "application/json"}
    search = client.post("/search", content=b'{"queries": ["cat \\ud800"]}', headers=json_type)
    assert "the query holds a lone surrogate (\\ud800)" in _error(search, 400)
    for document in (b'{"text": "bad \\udc80"}', b'{"text": "fine", "tag": "\\ud800"}'):
        added = client.post("/documents", content=b'{"documents": [%s]}' % document, headers=json_type)
        assert "document 1 holds a lone surrogate" in _error(added, 400)
    assert client.get("/info").json()["vectors"] == len(SENTENCES)


def test_unknown_ids_get_404(client: TestClient) -> None:
    assert "no document with id 999" in _error(client.delete("/documents/999"), 404)
    assert "no document with external id nope" in _error(client.delete("/documents/nope?external=true"), 404)
    assert "not a document id (a number); add ?external=true" in _error(client.delete("/documents/nope"), 400)
    assert "no such endpoint: GET /nowhere" in _error(client.get("/nowhere"), 404)
    assert "PUT is not allowed on /search" in _error(client.put("/search"), 405)


def test_oversize_bodies_get_413_before_they_are_read(served: ServedIndex) -> None:
    with TestClient(create_app(served, ServerSettings(max_body_bytes=1000))) as client:
        big = {"documents": [{"text": "word " * 400}]}
        assert "larger than" in _error(client.post("/documents", json=big), 413)
        assert client.post("/search", json={"queries": ["cat"]}).status_code == 200
    assert served.reader.run(len).result() == len(SENTENCES)


def test_an_api_key_guards_writes_only_by_default(served: ServedIndex) -> None:
    with TestClient(create_app(served, ServerSettings(api_key="s3cret"))) as client:
        assert client.get("/search", params={"q": "cat"}).status_code == 200
        new = {"documents": [{"text": "guarded text"}]}
        assert "needs an API key for writes" in _error(client.post("/documents", json=new), 401)
        wrong = client.post("/documents", json=new, headers={"Authorization": "Bearer nope"})
        assert "API key is wrong" in _error(wrong, 401)
        assert wrong.headers["www-authenticate"] == "Bearer"
        assert _error(client.delete("/documents/1"), 401)
        right = client.post("/documents", json=new, headers={"Authorization": "Bearer s3cret"})
        assert right.status_code == 200 and right.json()["added"] == 1


def test_an_api_key_for_all_guards_searches_but_not_health_or_the_page(served: ServedIndex) -> None:
    with TestClient(create_app(served, ServerSettings(api_key="s3cret", api_key_for="all"))) as client:
        assert "needs an API key for searches" in _error(client.get("/search", params={"q": "cat"}), 401)
        assert _error(client.post("/search", json={"queries": ["cat"]}), 401)
        assert _error(client.get("/info"), 401)
        authorised = client.get("/search", params={"q": "cat"}, headers={"Authorization": "Bearer s3cret"})
        assert authorised.status_code == 200
        assert client.get("/health").status_code == 200 and "<form" in client.get("/").text


@pytest.mark.parametrize(
    ("scope", "method", "path"),
    [("writes", "POST", "/documents"), ("all", "POST", "/search"), ("all", "POST", "/v1/embeddings")],
)
def test_the_api_key_is_checked_before_the_body_is_read(
    served: ServedIndex, scope: str, method: str, path: str
) -> None:
    """Bad JSON without the key is 401, not 400; a body over the limit with a wrong key is 401, not 413 (so it was
    refused before it was read); with the right key the body's own problem comes back."""
    settings = ServerSettings(api_key="s3cret", api_key_for=scope, max_body_bytes=1000)  # type: ignore[arg-type]
    json_header = {"Content-Type": "application/json"}
    with TestClient(create_app(served, settings)) as client:
        assert "needs an API key" in _error(
            client.request(method, path, content=b"{not json", headers=json_header), 401
        )
        wrong = {**json_header, "Authorization": "Bearer nope"}
        assert "API key is wrong" in _error(client.request(method, path, content=b"x" * 5000, headers=wrong), 401)
        right = {**json_header, "Authorization": "Bearer s3cret"}
        assert _error(client.request(method, path, content=b"{not json", headers=right), 400)
        assert "larger than" in _error(client.request(method, path, content=b"x" * 5000, headers=right), 413)


def test_settings_are_checked(served: ServedIndex) -> None:
    with pytest.raises(SearchEngineError, match="'writes' or 'all'"):
        create_app(served, ServerSettings(api_key="k", api_key_for="reads"))  # type: ignore[arg-type]
    with pytest.raises(SearchEngineError, match="API key is empty"):
        create_app(served, ServerSettings(api_key="  "))


def test_the_page_and_its_script_are_served(client: TestClient) -> None:
    page = client.get("/")
    assert page.headers["content-type"].startswith("text/html") and 'src="/page.js"' in page.text
    script = client.get("/page.js")
    assert script.headers["content-type"].startswith("text/javascript") and "/search?" in script.text
    assert "/search" in client.get("/openapi.json").json()["paths"]


def test_rerank_with_a_cross_encoder_the_server_offers(
    index_path: Path, tiny_encoder: Encoder, tiny_model: Path, tmp_path: Path
) -> None:
    cross = str(write_tiny_cross_encoder(tmp_path / "cross", tiny_model))
    index = ServedIndex(index_path, encoder=tiny_encoder, rerank=[cross])
    try:
        with TestClient(create_app(index)) as client:
            assert client.get("/info").json()["server"]["rerank"] == [cross]
            result = client.get("/search", params={"q": "the cat sat", "k": 3, "rerank": cross, "rerank_top": 6})
            assert result.status_code == 200, result.text
            body = result.json()
            assert body["rerank"] == {"model": cross, "top": 6} and len(body["hits"]) == 3
            assert all(hit["retrieval_score"] is not None for hit in body["hits"])
            scores = [hit["score"] for hit in body["hits"]]
            assert scores == sorted(scores, reverse=True)
            other = client.get("/search", params={"q": "cat", "rerank": "another-model"})
            assert f"reranks only with {cross}, not 'another-model'" in _error(other, 400)
    finally:
        index.close()


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_the_api_pages_load_every_asset_from_the_server_itself(client: TestClient, page: str) -> None:
    """Offline, a page that loads Swagger UI or ReDoc from a CDN is blank: each script, style sheet and icon it
    names is a path on this server, and is served."""
    import re

    html = client.get(page)
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", html.text)
    assets += re.findall(r"""url: ?["']([^"']+)["']""", html.text)
    assert assets and all(asset.startswith("/") and not asset.startswith("//") for asset in assets), assets
    assert "http://" not in html.text and "https://" not in html.text.replace("https://github.com", "")
    for asset in assets:
        assert client.get(asset).status_code == 200, asset


def test_the_cli_and_the_server_give_the_same_hit_objects(client: TestClient, index_path: Path) -> None:
    from typer.testing import CliRunner

    from searchengine.cli import app

    for mode in ("keyword", "hybrid", "dense"):
        served = client.get("/search", params={"q": "piano song", "k": 3, "mode": mode, "highlight": True}).json()
        arguments = ["query", "piano song", "-k", "3", "--mode", mode, "--json", "--precision", "fp32"]
        printed = CliRunner().invoke(app, [*arguments, "-d", str(index_path)])  # fp32: the server's tiny_encoder
        assert printed.exit_code == 0, printed.output
        local = json.loads(printed.stdout)
        assert local.keys() == served.keys() and local["rerank"] is None is served["rerank"]
        assert len(local["hits"]) == len(served["hits"]) >= 1
        for mine, theirs in zip(local["hits"], served["hits"]):
            assert list(mine) == list(theirs)  # the same keys in the same order, external_id and highlight included
            assert mine["external_id"].startswith("doc-") and mine["highlight"]["span"]
            for key, value in mine.items():  # scores may differ in the last float bits (ONNX here, torch there)
                assert value == (pytest.approx(theirs[key], abs=1e-5) if isinstance(value, float) else theirs[key])


def test_min_score_leaves_out_weak_hits_and_a_bad_one_gets_400(client: TestClient) -> None:
    every = client.get("/search", params={"q": "piano song", "k": 5, "mode": "hybrid"}).json()["hits"]
    middle = every[2]["score"]
    kept = client.get("/search", params={"q": "piano song", "k": 5, "mode": "hybrid", "min_score": middle}).json()
    assert [hit["id"] for hit in kept["hits"]] == [hit["id"] for hit in every if hit["score"] >= middle]
    batch = client.post("/search", json={"queries": ["piano song"], "k": 5, "min_score": 1.01}).json()
    assert batch["results"][0]["hits"] == []
    assert "min_score" in _error(client.get("/search", params={"q": "x", "min_score": "nan"}), 400)
    assert "min_score" in _error(client.post("/search", json={"queries": ["x"], "min_score": "high"}), 400)


def test_highlights_are_given_when_asked_for(client: TestClient) -> None:
    plain = client.get("/search", params={"q": "piano song", "k": 2, "mode": "dense"}).json()["hits"]
    marked = client.get("/search", params={"q": "piano song", "k": 2, "mode": "dense", "highlight": True}).json()
    assert [hit["highlight"] for hit in plain] == [None, None]
    assert all(hit["highlight"]["span"][1] > hit["highlight"]["span"][0] for hit in marked["hits"])
    batch = client.post("/search", json={"queries": ["piano song"], "k": 2, "highlight": True}).json()
    assert all(hit["highlight"] is not None for hit in batch["results"][0]["hits"])


def test_a_write_while_another_process_writes_is_refused_in_one_line_and_searches_go_on(client: TestClient) -> None:
    served: ServedIndex = client.app.state.index
    with IndexDirectory(served.path).locked():  # as `searchengine add` in another process holds it
        added = client.post("/documents", json={"documents": [{"text": "refused while locked"}]})
        assert "is being written by this process" in _error(added, 409)  # held here: named as this process
        assert "wait for it to finish and try again" in _error(client.delete("/documents/3"), 409)
        for mode in ("dense", "keyword", "hybrid"):
            hits = client.get("/search", params={"q": "the cat sat on the mat", "k": 1, "mode": mode}).json()["hits"]
            assert hits[0]["text"] == "the cat sat on the mat"
    assert client.post("/documents", json={"documents": [{"text": "taken once the lock is free"}]}).status_code == 200
    assert client.get("/info").json()["documents"] == len(SENTENCES) + 1
