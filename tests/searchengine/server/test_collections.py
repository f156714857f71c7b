"""A server of many collections (`searchengine serve --collections FOLDER`), on a real uvicorn and as a real
`serve` process: listing, creating and deleting collections, each searched and written under its name, a model
shared by two loaded once, idle ones closed, and keys of one collection refused on another."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient
from searchengine.indexer.tables.store import Document

from searchengine import Client, SearchEngine, SearchEngineError
from searchengine.encoding.encoder import Encoder
from searchengine.errors import UnknownCollectionError
from searchengine.server.app import ServerSettings, create_app
from searchengine.server.collection_keys import collection_keys
from searchengine.server.collections import Collections, served_collections
from searchengine.server.served_index import ServedIndex
from tests.conftest import SENTENCES
from tests.searchengine.server.conftest import running
from tests.serving import serve_process


@pytest.fixture
def folder(tmp_path: Path, tiny_encoder: Encoder, other_tiny_model: Path) -> Path:
    """Three collections: "animals" and "plants" on the tiny model, "other" on another; and a folder that is no
    index."""
    root = tmp_path / "collections"
    animals = [Document(text, metadata={"n": n}, external_id=f"a{n}") for n, text in enumerate(SENTENCES[:6])]
    SearchEngine.build(animals, root / "animals", encoder=tiny_encoder).close()
    SearchEngine.build(SENTENCES[6:], root / "plants", encoder=tiny_encoder).close()
    SearchEngine.build(["a note on another model"], root / "other", encoder=Encoder(other_tiny_model)).close()
    (root / "not-an-index").mkdir()
    return root


@pytest.fixture
def held(folder: Path) -> Iterator[Collections]:
    collections = served_collections(folder, idle_close_s=None)
    yield collections
    collections.close()


def test_each_collection_answers_under_its_name(held: Collections, tiny_model: Path) -> None:
    with running(create_app(None, ServerSettings(), held)) as url:
        client = Client(url)
        assert client.collections() == [
            {"name": "animals", "documents": 6},
            {"name": "other", "documents": 1},
            {"name": "plants", "documents": 6},
        ]
        animals, plants = client.collection("animals"), client.collection("plants")
        assert animals.search("the cat sat on the mat", k=1)[0].external_id == "a1"
        assert {hit.text for hit in plants.search("cat", k=10)} == set(SENTENCES[6:])
        assert len(animals) == 6 and animals.info().documents == 6
        assert [d.external_id for d in animals.get(where=["n>=4"])] == ["a4", "a5"]
        animals.add(ids=["owl"], documents=["an owl hoots at night"])
        assert animals.search("owl", k=1, mode="keyword")[0].external_id == "owl" and len(plants) == 6
        get = httpx.get(f"{url}/collections/plants/search", params={"q": "piano", "k": 1}, timeout=60)
        assert get.status_code == 200 and get.json()["hits"][0]["text"] == SENTENCES[9]
        assert httpx.get(f"{url}/health", timeout=60).json() == {"status": "ok"}
        assert httpx.get(f"{url}/collections/plants/health", timeout=60).json() == {"status": "ok"}
        # a server of collections has no one index: today's routes say where to go
        plain = httpx.get(f"{url}/search", params={"q": "cat"}, timeout=60)
        assert plain.status_code == 404 and "/collections/NAME/search" in plain.json()["error"]
        with pytest.raises(UnknownCollectionError, match="no collection named 'nope'"):
            client.collection("nope").search("cat")
        with pytest.raises(SearchEngineError, match="cannot name a collection"):
            httpx_error(httpx.get(f"{url}/collections/.hidden/search", params={"q": "cat"}, timeout=60))
        # create, fill, search and delete one
        made = httpx.post(f"{url}/collections", json={"name": "fresh", "model": str(tiny_model)}, timeout=60)
        assert made.status_code == 201, made.text
        fresh = client.collection("fresh")
        fresh.add(documents=["bright stars at night", "a quiet library"])
        assert fresh.search("library", k=1, mode="keyword")[0].text == "a quiet library"
        again = httpx.post(f"{url}/collections", json={"name": "fresh"}, timeout=60)
        assert again.status_code == 400 and "exists already" in again.json()["error"]
        assert httpx.delete(f"{url}/collections/fresh", timeout=60).json() == {"deleted": "fresh"}
        assert not (held.folder / "fresh").exists() and "fresh" not in [c["name"] for c in client.collections()]
        with pytest.raises(UnknownCollectionError):
            fresh.search("library")


def test_a_name_taken_by_a_folder_that_is_no_index_says_so_instead_of_delete_it_first(
    held: Collections, tiny_model: Path
) -> None:
    """Create said "exists already; delete it first", and DELETE said "no collection named": nothing over HTTP could
    free the name. The folder is left alone (only an index is ever removed from here)."""
    def make(path: Path, encoder: Encoder | None) -> None:
        SearchEngine.create(path, model=tiny_model, encoder=encoder).close()

    with pytest.raises(SearchEngineError, match="'not-an-index' is taken by something in the collections' folder that"):
        held.create("not-an-index", make, str(tiny_model))
    with pytest.raises(UnknownCollectionError):
        held.delete("not-an-index")
    assert (held.folder / "not-an-index").is_dir()


KILLED_CREATE = """
import os, signal, sys
from searchengine import SearchEngine
def kill_at_commit(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "commit_generation":
        os.kill(os.getpid(), signal.SIGKILL)
sys.setprofile(kill_at_commit)
SearchEngine.create(sys.argv[1], model=sys.argv[2])
"""


def test_a_create_a_crash_killed_before_its_commit_can_be_made_again(held: Collections, tiny_model: Path) -> None:
    """A server killed inside POST /collections left a folder of the name with no index: create refused the name
    ('remove it on the server') and DELETE did not know it, so no request could ever make it."""
    import subprocess
    import sys

    path = held.folder / "notes"
    killed = subprocess.run([sys.executable, "-c", KILLED_CREATE, str(path), str(tiny_model)], timeout=120)
    assert killed.returncode == -9 and path.is_dir() and "notes" not in held.names()
    held.create("notes", lambda path, encoder: SearchEngine.create(path, model=tiny_model).close(), str(tiny_model))
    with held.opened("notes") as notes:
        assert notes.reader.run(len).result() == 0


def test_of_several_creates_of_one_name_at_once_one_makes_it_and_the_others_are_refused(
    held: Collections, tiny_model: Path
) -> None:
    """Each create looked for the folder, then loaded its model and built: all of them could pass the look first,
    and a later one then emptied what an earlier one made."""
    made, refused = [], []
    start = threading.Barrier(4)

    def make(path: Path, encoder: Encoder | None) -> None:
        SearchEngine.create(path, encoder=Encoder(tiny_model)).close()
        made.append(path)

    def create() -> None:
        start.wait()
        try:
            held.create("twin", make, str(tiny_model))
        except SearchEngineError as exc:
            refused.append(str(exc))

    threads = [threading.Thread(target=create) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1 and len(refused) == 3
    assert all("a collection named 'twin' exists already" in message for message in refused)


def test_a_create_that_loads_its_model_holds_up_no_create_of_another_name(held: Collections, tiny_model: Path) -> None:
    """One lock for every create: a create loading (or downloading) its model kept all others waiting."""
    loading, loaded = threading.Event(), threading.Event()

    def slow(path: Path, encoder: Encoder | None) -> None:
        loading.set()
        loaded.wait(30)
        SearchEngine.create(path, encoder=Encoder(tiny_model)).close()

    slow_create = threading.Thread(target=held.create, args=("slow", slow, str(tiny_model)))
    slow_create.start()
    try:
        assert loading.wait(30)
        quick = threading.Thread(target=held.create, args=("quick", lambda path, encoder: SearchEngine.create(
            path, encoder=Encoder(tiny_model)).close(), str(tiny_model)))  # fmt: skip
        quick.start()
        quick.join(15)
        assert not quick.is_alive() and "quick" in held.names()
    finally:
        loaded.set()
        slow_create.join()
    assert {"slow", "quick"} <= set(held.names())


def test_a_collection_deleted_while_it_opens_is_unknown_not_a_broken_index(folder: Path) -> None:
    """A request that opened a collection as DELETE removed its folder got a 400 about an interrupted build."""
    def deleted_as_it_opens(path: Path, encoder: Encoder | None) -> ServedIndex:
        shutil.rmtree(path)  # as DELETE does, between the request's look for the index and its opening
        return ServedIndex(path, encoder=encoder, readers=1)

    collections = Collections(folder, deleted_as_it_opens, idle_close_s=None)
    try:
        with pytest.raises(UnknownCollectionError, match="no collection named 'plants'"):
            with collections.opened("plants"):
                pass  # pragma: no cover
    finally:
        collections.close()


def test_a_deleted_collection_leaves_nothing_and_its_name_can_be_made_again(held: Collections, tiny_model: Path) -> None:
    with held.opened("plants") as plants:
        assert plants.reader.run(len).result() == 6
    held.delete("plants")  # open: closed, then removed
    assert sorted(path.name for path in held.folder.iterdir()) == ["animals", "not-an-index", "other"]
    held.create("plants", lambda path, encoder: SearchEngine.create(path, model=tiny_model).close(), str(tiny_model))
    with held.opened("plants") as plants:
        assert plants.reader.run(len).result() == 0


def test_a_collection_deleted_while_it_opens_is_not_kept_open_to_serve_its_name_made_again(
    folder: Path, tiny_model: Path, other_tiny_model: Path
) -> None:
    """The open ended after DELETE had removed the folder and kept its collection open: the name made again (on
    another model) was served by the deleted collection's state, its model and last generation."""
    opened, go = threading.Event(), threading.Event()

    def slow_open(path: Path, encoder: Encoder | None) -> ServedIndex:
        index = ServedIndex(path, encoder=encoder, readers=1)
        opened.set()
        go.wait(30)
        return index

    collections = Collections(folder, slow_open, idle_close_s=None)
    try:

        def request() -> None:
            with collections.opened("plants"):
                pass

        asked = threading.Thread(target=request)
        asked.start()
        assert opened.wait(30)
        delete = threading.Thread(target=collections.delete, args=("plants",))
        delete.start()
        delete.join(1.0)  # the code before deleted here, the open still under way
        go.set()
        asked.join()
        delete.join()
        assert collections.open_names == []
        make = lambda path, encoder: SearchEngine.create(path, model=other_tiny_model).close()  # noqa: E731
        collections.create("plants", make, str(other_tiny_model))
        with collections.opened("plants") as plants:
            assert plants.reader.run(len).result() == 0
            assert plants.encoder.source.path == other_tiny_model
    finally:
        collections.close()


def test_a_delete_a_crash_cut_short_is_finished_at_the_next_start(held: Collections, folder: Path) -> None:
    """DELETE renames the folder away, then removes it: a crash between the two left the renamed folder, the whole
    index, where no listing shows it."""
    left = folder / ".removed-plants-0123456789abcdef0123456789abcdef"
    (folder / "plants").rename(left)
    (folder / ".removed-mine").mkdir()  # not of that form: never removed from here
    assert held.names() == ["animals", "other"]
    again = served_collections(folder, idle_close_s=None)
    try:
        assert not left.exists()
        assert sorted(path.name for path in folder.iterdir()) == [".removed-mine", "animals", "not-an-index", "other"]
    finally:
        again.close()


def httpx_error(response: httpx.Response) -> None:
    """Raise the one-line error a refused response carries."""
    raise SearchEngineError(response.json()["error"])


def test_a_model_two_collections_share_is_loaded_once(held: Collections) -> None:
    with held.opened("animals") as animals, held.opened("plants") as plants, held.opened("other") as other:
        assert animals.encoder is plants.encoder
        assert other.encoder is not animals.encoder


def test_idle_collections_close_and_open_again(folder: Path) -> None:
    collections = served_collections(folder, idle_close_s=0.2)
    try:
        with collections.opened("animals") as index:
            assert index.reader.run(len).result() == 6
            time.sleep(0.5)
            assert collections.open_names == ["animals"]  # in use: never closed under a request
        deadline = time.monotonic() + 10
        while collections.open_names and time.monotonic() < deadline:
            time.sleep(0.05)
        assert collections.open_names == []
        with collections.opened("animals") as index:
            assert index.reader.run(len).result() == 6
    finally:
        collections.close()


def test_a_collection_is_let_go_once_a_request_is_answered(folder: Path) -> None:
    """The search routes hold a collection open while they answer (its users counted on a worker thread), and let
    it go after, a refused request too: else it never closes when idle."""
    collections = served_collections(folder, idle_close_s=0.2)
    try:
        with TestClient(create_app(None, ServerSettings(), collections)) as client:
            found = client.post("/collections/animals/search", json={"queries": ["cat"], "k": 1})
            assert found.status_code == 200, found.text
            refused = client.get("/collections/plants/search", params={"q": "cat", "rerank": "none-such"})
            assert refused.status_code == 400 and "--rerank none-such" in refused.json()["error"]
            assert collections.open_names == ["animals", "plants"]
            deadline = time.monotonic() + 10
            while collections.open_names and time.monotonic() < deadline:
                time.sleep(0.05)
            assert collections.open_names == []
    finally:
        collections.close()


def test_a_key_of_one_collection_cannot_read_or_write_another(held: Collections) -> None:
    keys = collection_keys({"animals": {"read": ["ra"], "read-write": ["wa"]}, "plants": {"read-write": ["wp"]}})
    settings = ServerSettings(api_key="admin", collection_keys=keys)
    with running(create_app(None, settings, held)) as url:
        def on(key: str | None, name: str) -> Client:
            return Client(url, api_key=key or "").collection(name)

        assert on("ra", "animals").search("cat", k=1) and on("wa", "animals").get(ids=["a1"])
        on("wa", "animals").add(ids=["new"], documents=["a new animal"])
        with pytest.raises(SearchEngineError, match="read-only"):
            on("ra", "animals").add(documents=["refused"])
        for key, name in (("wa", "plants"), ("ra", "plants"), ("wp", "animals"), (None, "animals"), ("x", "plants")):
            with pytest.raises(SearchEngineError, match="API key"):
                on(key, name).search("cat")
            with pytest.raises(SearchEngineError, match="API key"):
                on(key, name).add(documents=["refused"])
        assert on("admin", "plants").search("cat", k=1) and on("admin", "animals").get(ids=["new"])
        assert on(None, "other").search("note", k=1)  # no keys of its own: reads open, as the server's key says
        with pytest.raises(SearchEngineError, match="API key"):
            on(None, "other").add(documents=["refused"])
        refused = httpx.post(f"{url}/collections", json={"name": "mine"}, headers={"Authorization": "Bearer wa"})
        assert refused.status_code == 401 and not (held.folder / "mine").exists()
        assert len(on("admin", "animals")) == 7


def test_serve_collections_as_a_real_process(folder: Path, tmp_path: Path) -> None:
    with serve_process(["--collections", str(folder), "--idle-close", "30"], tmp_path / "serve.log") as url:
        client = Client(url)
        assert [c["name"] for c in client.collections()] == ["animals", "other", "plants"]
        assert client.collection("plants").search("piano song", k=1)[0].text == SENTENCES[9]
    assert "Serving 3 collections" in (tmp_path / "serve.log").read_text()


def test_v1_embeddings_picks_the_collection_by_the_requests_model(held: Collections, folder: Path) -> None:
    """The official `openai` client against a server of collections: /v1/models lists each collection's model once,
    /v1/embeddings answers a model with the vectors of the first collection built with it, a model none has is
    refused in OpenAI's shape naming those offered, and /collections/NAME/v1 answers for one collection."""
    import openai

    manifests = held.manifests()
    tiny, other = manifests["animals"].model.name, manifests["other"].model.name
    with running(create_app(None, ServerSettings(), held)) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        assert sorted(model.id for model in client.models.list()) == sorted([tiny, other])
        assert client.models.retrieve(other).id == other
        for name, model in (("animals", tiny), ("other", other)):
            got = client.embeddings.create(input=[SENTENCES[0]], model=model, encoding_format="float")
            with SearchEngine.open(folder / name) as engine:
                np.testing.assert_allclose(got.data[0].embedding, engine.encode([SENTENCES[0]])[0], atol=1e-4)
            assert got.model == model
        assert held.open_names == ["animals", "other"]  # the embeddings opened the collection that answered
        with pytest.raises(openai.BadRequestError) as caught:
            client.embeddings.create(input="x", model="text-embedding-3-small")
        assert caught.value.code == "model_not_found" and caught.value.param == "model"
        assert repr(tiny) in caught.value.message and repr(other) in caught.value.message
        with pytest.raises(openai.NotFoundError) as missing:
            client.models.retrieve("text-embedding-3-small")
        assert missing.value.code == "model_not_found"
        own = openai.OpenAI(base_url=f"{url}/collections/plants/v1", api_key="unused", max_retries=0)
        assert [model.id for model in own.models.list()] == [tiny]
        assert len(own.embeddings.create(input="a fern", model=tiny).data[0].embedding) == 32
        with pytest.raises(openai.BadRequestError, match="this server embeds with") as caught:
            own.embeddings.create(input="a fern", model=other)
        assert caught.value.code == "model_not_found"


def test_metrics_cover_every_collection_by_label(held: Collections) -> None:
    """GET /metrics on a server of collections: each collection's documents (closed ones from their manifests,
    none opened by the scrape), whether it is open, and its searches, labelled by collection; GET
    /collections/NAME/metrics keeps that one's series."""
    from prometheus_client.parser import text_string_to_metric_families

    def samples(text: str, name: str) -> dict[tuple, float]:
        return {
            tuple(sorted(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == name
        }

    with running(create_app(None, ServerSettings(), held)) as url:
        client = Client(url)
        client.collection("animals").search("cat", k=1, mode="keyword")
        client.collection("plants").add(documents=["a fern in the shade"])
        text = httpx.get(f"{url}/metrics", timeout=60).text
        assert samples(text, "searchengine_documents") == {
            (("collection", "animals"),): 6, (("collection", "other"),): 1, (("collection", "plants"),): 7
        }
        assert samples(text, "searchengine_collection_open") == {
            (("collection", "animals"),): 1, (("collection", "other"),): 0, (("collection", "plants"),): 1
        }
        assert samples(text, "searchengine_queries_total") == {(("collection", "animals"), ("mode", "keyword")): 1}
        assert held.open_names == ["animals", "plants"]  # the scrape opened no collection
        one = httpx.get(f"{url}/collections/plants/metrics", timeout=60).text
        assert samples(one, "searchengine_documents") == {(("collection", "plants"),): 7}
        assert samples(one, "searchengine_queries_total") == {}
        assert samples(one, "searchengine_requests_total")  # the server's requests are shown with it
        missing = httpx.get(f"{url}/collections/nope/metrics", timeout=60)
        assert missing.status_code == 404 and "no collection named 'nope'" in missing.json()["error"]
        client.delete_collection("plants")
        gone = httpx.get(f"{url}/metrics", timeout=60).text
        assert ("collection", "plants") not in {label for key in samples(gone, "searchengine_documents") for label in key}


def test_the_search_page_picks_a_collection(held: Collections) -> None:
    """The search page in a real headless Chromium on a server of collections: pick one, search it, pick another."""
    from tests.searchengine.server.conftest import CHROMIUM

    if CHROMIUM is None:
        pytest.skip("no Chromium on this machine: `apt-get install chromium` (Debian) runs the search page's test")
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    with running(create_app(None, ServerSettings(), held)) as url, playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = browser.new_page()
            page.set_default_timeout(30_000)
            page.goto(url + "/?collection=plants")
            page.wait_for_function("document.getElementById('summary').textContent.includes('documents')")
            assert "6 documents" in page.inner_text("#summary") and page.input_value("#collection") == "plants"
            assert page.locator("#collection option").all_inner_texts() == ["animals (6)", "other (1)", "plants (6)"]
            page.fill("#q", SENTENCES[9])
            page.press("#q", "Enter")
            page.wait_for_selector("li.hit")
            assert page.locator("li.hit .text").first.inner_text() == SENTENCES[9]
            assert "collection=plants" in page.url
            page.select_option("#collection", "other")
            page.wait_for_function("document.querySelectorAll('li.hit').length === 1")
            assert page.locator("li.hit .text").first.inner_text() == "a note on another model"
            assert "1 documents" in page.inner_text("#summary")
        finally:
            browser.close()


def test_the_lock_of_a_name_is_let_go_once_no_request_holds_it(held: Collections) -> None:
    """Each name asked for made a lock kept for ever: a client asking for many names that are no collection grew
    the server without end. A name's lock lasts while a request holds or waits for it."""
    for n in range(200):
        with pytest.raises(UnknownCollectionError):
            with held.opened(f"nothing-{n}"):
                pass  # pragma: no cover
        with pytest.raises(UnknownCollectionError):
            held.delete(f"nothing-{n}")
    with held.opened("animals") as animals:
        assert animals.path.name == "animals"
    assert len(held._naming) == 0  # noqa: SLF001 (what grew)
