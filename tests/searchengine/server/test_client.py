"""searchengine.Client against a real uvicorn: one script runs unchanged against a local SearchEngine and a Client
of a server over an index like it, with the same results and the same exception classes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from searchengine.indexer.errors import UnknownDocumentError

import searchengine
from searchengine import Document, SearchEngine, SearchEngineError
from searchengine.encoding.encoder import Encoder
from searchengine.server.app import ServerSettings, create_app
from searchengine.server.client import Client
from searchengine.server.served_index import ServedIndex
from tests.conftest import SENTENCES
from tests.searchengine.server.conftest import running


def script(engine: Any) -> dict[str, Any]:  # noqa: ANN401 (a SearchEngine or a Client: the point of the test)
    """What a user's script does, written once for both."""
    out: dict[str, Any] = {}
    ids = [f"s{n}" for n in range(len(SENTENCES))]
    metadatas = [{"n": n, "lang": "en" if n % 2 else "de"} for n in range(len(SENTENCES))]
    out["added"] = engine.add(ids=ids, documents=SENTENCES, metadatas=metadatas).added
    out["dense"] = engine.search("a cat on a mat", k=3, mode="dense")
    out["keyword"] = engine.search("piano song", k=2, mode="keyword", where=["n>=5"])
    out["hybrid"] = engine.search_batch(["rocket to the moon", "bread"], k=2, where={"lang": "de"}, highlight=True)
    vector = np.random.default_rng(3).standard_normal(32).astype(np.float32)
    out["by_vector"] = engine.search_by_vector(vector, k=4, where=["n<8"])
    own = np.random.default_rng(4).standard_normal((2, 32)).astype(np.float32)
    engine.add(ids=["own-1", "own-2"], documents=["an owl hoots", "a whale sings"], embeddings=own)
    out["own"] = engine.search_by_vector(own[1], k=1)
    out["get"] = engine.get(ids=["s3", "missing", "own-1"])
    out["get_where"] = engine.get(where=["n>=10"])
    engine.upsert(ids=["s0"], documents=["how do i change my password"], metadatas=[{"n": 100}])
    out["upserted"] = engine.get(ids=["s0"])
    out["deleted"] = engine.delete(external_ids=["s1", "s2"])
    noted = [Document("a fox runs in the snow", "notes.txt", 7, {"n": 50}, "fox"), Document("a hare", "hares.md", 0)]
    engine.add(noted[:1])
    engine.add(noted[1:])
    out["origin"] = engine.get(ids=["fox"]) + engine.get(where=["source=hares.md"])
    out["origin_hit"] = engine.search("fox snow", k=1, mode="keyword")
    out["size"] = len(engine)
    info = engine.info()
    out["info"] = (info.documents, info.vectors, info.dimension, info.model, info.keyword_index)
    for name, call in {
        "unknown id": lambda: engine.delete(external_ids=["never-added"]),
        "bad k": lambda: engine.search("cat", k=0),
        "bad filter": lambda: engine.search("cat", where=["n>>3"]),
        "bad vector": lambda: engine.search_by_vector([0.5] * 7),
        "bad embeddings": lambda: engine.add(documents=["x"], embeddings=[[0.1] * 3]),
        "no ids": lambda: engine.get(),
        "int id": lambda: engine.add([Document("a text", external_id=5)]),  # type: ignore[arg-type]
    }.items():
        try:
            call()
        except SearchEngineError as exc:
            out[name] = type(exc)
    return out


def test_one_script_gives_the_same_results_locally_and_through_a_server(tmp_path: Path, tiny_encoder: Encoder) -> None:
    with SearchEngine.create(tmp_path / "local", encoder=tiny_encoder) as engine:
        local = script(engine)
    SearchEngine.create(tmp_path / "served", encoder=tiny_encoder).close()
    served = ServedIndex(tmp_path / "served", encoder=tiny_encoder)
    try:
        with running(create_app(served, ServerSettings())) as url:
            remote = script(searchengine.Client(url))
    finally:
        served.close()
    assert local["unknown id"] is UnknownDocumentError and local["bad k"] is SearchEngineError
    assert local["own"][0].external_id == "own-2" and local["get"][1].external_id == "own-1"
    assert local["hybrid"][0][0].highlight is not None
    assert [(d.source, d.line, d.metadata) for d in local["origin"]] == [("notes.txt", 7, {"n": 50}), ("hares.md", 0, {})]
    assert (local["origin_hit"][0].source, local["origin_hit"][0].line) == ("notes.txt", 7)
    assert set(remote) == set(local)
    for key, value in local.items():
        assert remote[key] == value, key


def test_errors_keep_their_class_and_one_line(live_url: str) -> None:
    client = Client(live_url)
    with pytest.raises(UnknownDocumentError, match="the server at .* says: no document with external id nope"):
        client.delete(external_ids=["nope"])
    with pytest.raises(SearchEngineError, match="unknown search option fusion"):
        client.search("cat", fusion="rrf")
    with pytest.raises(SearchEngineError, match="cannot reach a searchengine server"):
        Client("http://127.0.0.1:9").search("cat")
    assert client.get(ids=["doc-1"]) == [
        Document(SENTENCES[1], "fixture.jsonl", 2, {"lang": "en", "year": 2001}, "doc-1")
    ]
    assert client.get(ids=[]) == [] and len(client) == len(SENTENCES)


def test_every_error_class_a_server_names_is_made_from_its_message() -> None:
    """The Client raises the class the server names (X-SearchEngine-Error) from the answer's one line, so every
    SearchEngineError, the cluster's included, must be made from a message alone."""
    import searchengine.indexer.errors  # noqa: F401

    import searchengine.cluster.errors  # noqa: F401 (their classes are among those a server may name)
    import searchengine.integrations  # noqa: F401
    import searchengine.reading.corpus  # noqa: F401
    import searchengine.reading.extracted  # noqa: F401

    pending: list[type[SearchEngineError]] = [SearchEngineError]
    seen = []
    while pending:
        kind = pending.pop()
        seen.append(kind.__name__)
        assert str(kind("the server says: why")) == "the server says: why", kind
        pending += kind.__subclasses__()
    assert {"ShardsUnavailableError", "UnavailableError", "UnknownDocumentError", "MissingExtra"} <= set(seen)
