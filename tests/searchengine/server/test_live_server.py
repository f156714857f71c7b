"""A real uvicorn on 127.0.0.1 with a real HTTP client: concurrent readers, writes beside them, and a writer that
rebuilds the index with another model."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from typer.testing import CliRunner

from searchengine.cli import app
from searchengine.encoding.encoder import Encoder
from searchengine.engine.search_engine import SearchEngine
from searchengine.server.served_index import ServedIndex
from tests.conftest import SENTENCES


def test_concurrent_clients_each_get_their_own_answer(live_url: str) -> None:
    def ask(text: str) -> str:
        with httpx.Client(base_url=live_url, timeout=60) as client:
            response = client.get("/search", params={"q": text, "k": 1})
            response.raise_for_status()
            return response.json()["hits"][0]["text"]

    queries = SENTENCES * 4
    with ThreadPoolExecutor(max_workers=16) as pool:
        assert list(pool.map(ask, queries)) == queries


def test_no_search_fails_while_documents_are_added_and_deleted(live_url: str) -> None:
    failures: list[str] = []
    sizes: set[int] = set()
    done = threading.Event()

    def search() -> None:
        with httpx.Client(base_url=live_url, timeout=60) as client:
            while not done.is_set():
                response = client.get("/search", params={"q": "the cat sat on the mat", "k": 1000})
                if response.status_code != 200:
                    failures.append(response.text)
                    return
                sizes.add(len(response.json()["hits"]))

    readers = [threading.Thread(target=search) for _ in range(4)]
    for thread in readers:
        thread.start()
    with httpx.Client(base_url=live_url, timeout=60) as client:
        for round_number in range(4):
            new = [{"text": f"fresh note {round_number} {i}", "id": f"new-{round_number}-{i}"} for i in range(5)]
            response = client.post("/documents", json={"documents": new, "id_field": "id"})
            assert response.status_code == 200, response.text
        response = client.delete("/documents/new-0-0", params={"external": True})
        assert response.status_code == 200, response.text
        final = client.get("/search", params={"q": "fresh note 3 4", "k": 1}).json()  # a write is seen at once
    done.set()
    for thread in readers:
        thread.join()
    assert not failures, failures
    assert final["hits"][0]["text"] == "fresh note 3 4"
    assert max(sizes) <= len(SENTENCES) + 20 and len(sizes) >= 2


def test_a_rebuild_with_another_model_keeps_the_old_generation_serving(
    live_url: str, served: ServedIndex, index_path: Path, other_tiny_model: Path
) -> None:
    SearchEngine.build(["something else entirely"], index_path, encoder=Encoder(other_tiny_model)).close()
    with httpx.Client(base_url=live_url, timeout=60) as client:
        hits = client.get("/search", params={"q": "the cat sat on the mat", "k": 1}).json()["hits"]
        assert hits[0]["text"] == "the cat sat on the mat"
        health = client.get("/health").json()
    assert health["status"] == "stale" and "was rebuilt with model" in health["problem"]


def test_query_server_passes_the_mode_and_prints_what_a_local_query_prints(live_url: str, index_path: Path) -> None:
    runner = CliRunner()
    for mode in ("keyword", "hybrid"):
        remote = runner.invoke(app, ["query", "piano song", "--mode", mode, "--json", "--server", live_url])
        local = runner.invoke(app, ["query", "piano song", "--mode", mode, "--json", "-d", str(index_path)])
        assert remote.exit_code == 0 and local.exit_code == 0, remote.output + local.output
        remote_result, local_result = json.loads(remote.stdout), json.loads(local.stdout)
        assert remote_result["mode"] == local_result["mode"] == mode
        assert [hit["id"] for hit in remote_result["hits"]] == [hit["id"] for hit in local_result["hits"]]
        assert [hit["found_by"] for hit in remote_result["hits"]] == [hit["found_by"] for hit in local_result["hits"]]
        for remote_hit, local_hit in zip(remote_result["hits"], local_result["hits"]):  # the same sentence shown
            assert remote_hit["highlight"] == local_hit["highlight"] and remote_hit["highlight"] is not None
            assert remote_hit["snippet"] == local_hit["snippet"]
    text = runner.invoke(app, ["query", "piano song", "-k", "1", "--server", live_url])
    assert "(cos " in text.stdout and "bm25 " in text.stdout and "(hybrid search:" in text.stderr


def test_query_server_at_something_else_says_so_in_one_line() -> None:
    """A web server that answers POST /search with 200 and other JSON, or HTML, gave a KeyError or a JSON
    decoding traceback."""
    from fastapi import FastAPI
    from fastapi.responses import HTMLResponse

    from searchengine.errors import SearchEngineError
    from searchengine.server.client import search_remote
    from tests.searchengine.server.conftest import running

    other = FastAPI()
    other.post("/search")(lambda: {"ok": True})
    other.post("/page/search", response_class=HTMLResponse)(lambda: "<html>hello</html>")
    with running(other) as url:
        for base in (url, f"{url}/page"):
            try:
                search_remote(base, ["cat"])
            except SearchEngineError as exc:
                assert "did not answer as a searchengine server" in str(exc) and "\n" not in str(exc)
            else:
                raise AssertionError(f"{base} was taken for a searchengine server")
