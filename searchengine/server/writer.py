"""The server's write side: one thread adds and deletes through a SearchEngine of its own, one write at a time.

Each write takes the index directory's lock, as `searchengine add` does, so a writer in another process and
this one never overlap (the loser gets IndexLockedError). Readers keep answering from the generation they have
until the write commits; the reader thread then notices the new manifest and reopens."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from searchengine.engine.search_engine import SearchEngine
from searchengine.errors import SearchEngineError
from searchengine.server.reader import CLOSED

T = TypeVar("T")
log = logging.getLogger("searchengine.server")


class SerialWriter:
    """Runs writes on one thread that owns the SearchEngine `open_engine` returns (opened at the first write)."""

    def __init__(self, open_engine: Callable[[], SearchEngine]) -> None:
        self._open_engine = open_engine
        self._engine: SearchEngine | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="searchengine-writer")
        self._closed = False
        self._pending = 0
        self._counting = threading.Lock()

    @property
    def queued(self) -> int:
        """Writes (and background work) submitted and not yet finished, the one running included."""
        return self._pending

    def submit(self, function: Callable[[SearchEngine], T]) -> Future[T]:
        """`function(engine)` on the writer thread, after the writes submitted before it."""
        if self._closed:
            raise SearchEngineError(CLOSED)
        with self._counting:
            self._pending += 1
        future = self._executor.submit(self._write, function)
        future.add_done_callback(self._finished)
        return future

    def _finished(self, _future: Future) -> None:
        with self._counting:
            self._pending -= 1

    def submit_background(self, function: Callable[[SearchEngine], object]) -> None:
        """`function(engine)` on the writer thread after the writes before it, answering nobody: a failure is
        logged (a merge that fails leaves the index as it was, and the next write's merge tries again)."""

        def logged(engine: SearchEngine) -> None:
            try:
                function(engine)
            except Exception:  # noqa: BLE001 (nobody waits for it; the server goes on)
                log.exception("background work on %s failed", engine.path)

        self.submit(logged)

    def _write(self, function: Callable[[SearchEngine], T]) -> T:
        """`function(engine)` with a read snapshot of the newest commit, let go of afterwards: between writes the
        engine holds none, so writes from other processes can empty SQLite's log (indexer/tables/wal_upkeep.py)."""
        if self._engine is None:
            self._engine = self._open_engine()
        else:
            self._engine.refresh()
        try:
            return function(self._engine)
        finally:
            self._engine.release_snapshot()

    def close(self) -> None:
        """Finish the queued writes, then close the engine on its own thread; a second close does nothing."""
        if self._closed:
            return
        self._closed = True
        self._executor.submit(self._close_engine).result()
        self._executor.shutdown(wait=True)

    def _close_engine(self) -> None:
        if self._engine is not None:
            self._engine.close()
