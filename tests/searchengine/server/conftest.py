"""Fixtures for the server's tests: a small index built with the tiny test model, served in-process (FastAPI's
TestClient) or by a real uvicorn on a free 127.0.0.1 port."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from searchengine.indexer.tables.store import Document

from searchengine.encoding.encoder import Encoder
from searchengine.engine.search_engine import SearchEngine
from searchengine.server.app import ServerSettings, create_app
from searchengine.server.listener import listening_socket
from searchengine.server.served_index import ServedIndex
from tests.conftest import SENTENCES


def documents() -> list[Document]:
    """SENTENCES with an external id ("doc-N") and metadata (lang alternating en/de, year 2000+N)."""
    return [
        Document(text, "fixture.jsonl", n + 1, {"lang": "en" if n % 2 else "de", "year": 2000 + n}, f"doc-{n}")
        for n, text in enumerate(SENTENCES)
    ]


@pytest.fixture
def index_path(tmp_path: Path, tiny_encoder: Encoder) -> Path:
    SearchEngine.build(documents(), tmp_path / "index", encoder=tiny_encoder).close()
    return tmp_path / "index"


@pytest.fixture
def served(index_path: Path, tiny_encoder: Encoder) -> Iterator[ServedIndex]:
    index = ServedIndex(index_path, encoder=tiny_encoder)
    yield index
    index.close()


@contextmanager
def running(app: object) -> Iterator[str]:
    """A real uvicorn serving `app` on a free 127.0.0.1 port, in a thread; yields its base URL."""
    import uvicorn

    listener = listening_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listener.close()


@pytest.fixture
def live_url(served: ServedIndex) -> Iterator[str]:
    with running(create_app(served, ServerSettings())) as url:
        yield url


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
"""The browser the search page's tests drive: Debian's Chromium."""


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    """One headless Chromium for a module's page tests (a launch takes seconds); each test gets a fresh context."""
    if CHROMIUM is None:
        pytest.skip("no Chromium on this machine: `apt-get install chromium` (Debian) runs the search page's test")
    playwright_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed: pip install -e '.[dev]'"
    )
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium: object, served: ServedIndex) -> Iterator[object]:
    """The search page of this test's own index, in a browser context of its own (no cookies, storage or history
    shared with another test)."""
    with running(create_app(served, ServerSettings())) as url:
        context = chromium.new_context()
        try:
            browser_page = context.new_page()
            browser_page.set_default_timeout(30_000)
            browser_page.goto(url + "/")
            browser_page.wait_for_function("document.getElementById('summary').textContent.includes('documents')")
            yield browser_page
        finally:
            context.close()
