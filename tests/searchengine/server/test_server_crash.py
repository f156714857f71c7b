"""`searchengine serve` killed in the middle of a write (os._exit at a named step, as kill -9 would) while clients
search on several readers: the index reopens, passes `verify`, and holds exactly the writes that committed."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest
from searchengine.indexer.commit.crash_points import CRASH_ENV
from searchengine.indexer.commit.index_directory import IndexDirectory

from searchengine.encoding.encoder import Encoder
from searchengine.engine.search_engine import SearchEngine
from tests.conftest import SENTENCES
from tests.serving import serve_command, served_address

ORIGINAL = {f"doc-{n}" for n in range(len(SENTENCES))}
NEW = [{"text": f"a note about the garden number {n}", "id": f"new-{n}"} for n in range(3)]


def _post_new(client: httpx.Client) -> httpx.Response:
    return client.post("/documents", json={"documents": NEW, "id_field": "id"})


def _delete_one(client: httpx.Client) -> httpx.Response:
    return client.delete("/documents/doc-3", params={"external": True})


@pytest.mark.parametrize(
    ("step", "write", "answered", "after"),
    [
        # the add committed, then the process died before it could answer: the add stays
        ("after-commit", _post_new, False, ORIGINAL | {row["id"] for row in NEW}),
        # the delete died before its commit: nothing was deleted
        ("before-commit", _delete_one, False, ORIGINAL),
        # the add answered; the merge it called for (off the request path) died before its commit
        ("merge-before-commit", _post_new, True, ORIGINAL | {row["id"] for row in NEW}),
    ],
    ids=["add-after-commit", "delete-before-commit", "merge-before-commit"],
)
def test_a_server_killed_mid_write_reopens_with_exactly_the_committed_writes(
    index_path: Path, tiny_encoder: Encoder, tmp_path: Path, step: str, write, answered: bool, after: set[str]
) -> None:
    with SearchEngine.open(index_path, encoder=tiny_encoder) as engine:
        for n in range(9):  # ten segments: the next write's merge (MERGE_FACTOR) joins them
            engine.add([f"filler sentence {n}"], merge=False)
        segments = engine.info().shards
    log = tmp_path / "serve.log"
    with log.open("w") as sink:
        server = subprocess.Popen(
            serve_command(["-d", str(index_path), "--readers", "3"]),
            env={**os.environ, CRASH_ENV: step},
            stdout=sink,
            stderr=sink,
        )
    url = served_address(server, log)
    searched, failures, stop = [0], [], threading.Event()

    def search(mode: str) -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            while not stop.is_set():
                try:
                    response = client.get("/search", params={"q": "garden note", "k": 30, "mode": mode})
                except httpx.TransportError:
                    return  # the server is gone
                if response.status_code != 200:
                    failures.append(response.text)
                searched[0] += 1

    clients = [threading.Thread(target=search, args=(mode,)) for mode in ("dense", "keyword", "hybrid")]
    for thread in clients:
        thread.start()
    try:
        while searched[0] < 6 and server.poll() is None:  # the readers are answering before the write starts
            time.sleep(0.05)
        with httpx.Client(base_url=url, timeout=60) as client:
            try:
                response = write(client)
                assert answered and response.status_code == 200, response.text
            except httpx.TransportError:
                assert not answered
        assert server.wait(60) == 75, log.read_text()  # it died at `step`, not before or after
    finally:
        stop.set()
        if server.poll() is None:
            server.kill()
        for thread in clients:
            thread.join()
    assert not failures, failures[:3]
    assert searched[0] > 0
    assert [check.problem for check in IndexDirectory(index_path).verify() if check.problem] == []
    with SearchEngine.open(index_path, encoder=tiny_encoder) as reopened:
        assert {external for external in reopened.external_ids() if external} == after
        assert reopened.info().shards == segments + (1 if write is _post_new else 0)  # no merge committed
        reopened.add(["a write after the crash"])  # it cleans up what the dead process left
    live = IndexDirectory(index_path).live_file_names()
    assert [entry.name for entry in index_path.glob("segment.*") if entry.name not in live] == []
