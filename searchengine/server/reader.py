"""The server's read side: one thread owns the SearchEngine that answers queries.

Queries that arrive while the thread is busy wait in a queue; the next turn takes all of them (up to
`max_batch` queries) and answers those with the same options in one `search_batch`, so one encoder call serves
many clients and throughput grows with concurrency. Torch and FAISS run on one thread here: the event loop needs
the other core, and a batch on one thread is faster than on two that contend (docs/benchmarks.md, "Serving").

Before each turn the thread checks (one stat) whether a writer committed a new generation and reopens the index
if so; a reopen that fails leaves the previous generation serving, so no request fails during the swap. The
engine's SQLite connection is only ever used from this thread; the encoder is shared with the writer thread and
serialises itself.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from searchengine.engine.modes import SearchMode
from searchengine.engine.search import Hit, one_thread
from searchengine.engine.search_engine import DEFAULT_RERANK_TOP, SearchEngine
from searchengine.errors import SearchEngineError

T = TypeVar("T")
log = logging.getLogger("searchengine.server")
IDLE_REFRESH_S = 5.0
"""Seconds an idle reader waits before it refreshes anyway."""


@dataclass(frozen=True)
class SearchOptions:
    """What a query asks for besides its text; queries with equal options are answered together."""

    k: int = 10
    where: tuple[str, ...] = ()
    mode: SearchMode | None = None
    """The name of a registered retrieval mode (dense, keyword, hybrid, ...); None: the engine's default mode."""
    rerank: str | None = None
    rerank_top: int | None = None
    """Candidates the cross-encoder rescores (at least k); None: the library's default."""
    min_score: float | None = None
    """Hits scored below it are left out (SearchEngine.search's min_score)."""
    highlight: bool = False
    """Give each hit its highlight (SearchEngine.search's highlight)."""


@dataclass
class _Search:
    queries: list[str]
    options: SearchOptions
    future: Future = field(default_factory=Future)


@dataclass
class _Call:
    function: Callable[[SearchEngine], Any]
    future: Future = field(default_factory=Future)


_STOP = object()


class BatchingReader:
    """Answers searches (and other reads) on one thread that owns the SearchEngine `open_engine` returns."""

    def __init__(self, open_engine: Callable[[], SearchEngine], max_batch: int = 64) -> None:
        self._open_engine = open_engine
        self.max_batch = max_batch
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._ready: Future = Future()
        self._thread = threading.Thread(target=self._serve, name="searchengine-reader", daemon=True)
        self._engine: SearchEngine | None = None
        self.problem: str | None = None
        """Why the last reopen failed (the previous generation is still served); None when current."""
        self.batches = 0
        """Turns taken: with `queries`, how well concurrent queries were batched."""
        self.queries = 0
        self.default_mode: SearchMode = "dense"
        """The mode of a search that names none, as of the generation loaded (hybrid once it has a keyword index)."""

    def start(self) -> None:
        """Open the engine on the reader thread; raises what opening raised (e.g. no index there)."""
        self._thread.start()
        self._ready.result()

    def search(self, queries: Sequence[str], options: SearchOptions) -> Future[list[list[Hit]]]:
        """Hits for each query, answered in the reader thread's next turn."""
        job = _Search(list(queries), options)
        self._queue.put(job)
        return job.future

    def run(self, function: Callable[[SearchEngine], T]) -> Future[T]:
        """`function(engine)` on the reader thread, e.g. to read `info()`."""
        job = _Call(function)
        self._queue.put(job)
        return job.future

    def close(self) -> None:
        """Answer what is queued, then close the engine and stop the thread."""
        if self._thread.is_alive():
            self._queue.put(_STOP)
            self._thread.join()

    def _serve(self) -> None:
        try:
            self._engine = self._open_engine()
        except BaseException as exc:  # noqa: BLE001 (handed to start(), which raises it in the caller's thread)
            self._ready.set_exception(exc)
            return
        self.default_mode = self._engine.default_mode
        self._ready.set_result(None)
        try:
            running = True
            while running:
                jobs, running = self._next_turn()
                with one_thread():
                    self._refresh()
                    self._answer(jobs)
        finally:
            self._engine.close()

    def _next_turn(self) -> tuple[list[_Search | _Call], bool]:
        """Wait for one job, then take whatever else is queued, up to `max_batch` queries. After IDLE_REFRESH_S
        seconds without one, an empty turn: the loop refreshes, so an idle server does not hold an old read
        snapshot of the store (which would keep SQLite from resetting its write-ahead log) or miss writes."""
        jobs: list[_Search | _Call] = []
        queued = 0
        try:
            job = self._queue.get(timeout=IDLE_REFRESH_S)
        except queue.Empty:
            return jobs, True
        while True:
            if job is _STOP:
                return jobs, False
            jobs.append(job)
            queued += len(job.queries) if isinstance(job, _Search) else 0
            if queued >= self.max_batch:
                return jobs, True
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                return jobs, True

    def _refresh(self) -> None:
        try:
            if self._engine.refresh():
                self.default_mode = self._engine.default_mode
                log.info(
                    "reopened %s: a writer committed a new generation (%d texts)", self._engine.path, len(self._engine)
                )
            self.problem = None
        except Exception as exc:  # noqa: BLE001 (whatever went wrong, the generation loaded keeps answering)
            problem = str(exc) if isinstance(exc, SearchEngineError) else f"{type(exc).__name__}: {exc}"
            if problem != self.problem:
                log.warning("still serving the previous generation of %s: %s", self._engine.path, problem)
            self.problem = problem

    def _answer(self, jobs: list[_Search | _Call]) -> None:
        groups: dict[SearchOptions, list[_Search]] = {}
        for job in jobs:
            if not job.future.set_running_or_notify_cancel():
                continue  # its caller gave up waiting (e.g. the client went away)
            if isinstance(job, _Call):
                _settle(job.future, lambda job=job: job.function(self._engine))
            else:
                groups.setdefault(job.options, []).append(job)
        for options, searches in groups.items():
            self.batches += 1
            self.queries += sum(len(search.queries) for search in searches)
            try:
                results = self._engine.search_batch(
                    [query for search in searches for query in search.queries],
                    options.k,
                    list(options.where) or None,
                    mode=options.mode,
                    rerank=options.rerank,
                    rerank_top=options.rerank_top or DEFAULT_RERANK_TOP,
                    min_score=options.min_score,
                    highlight=options.highlight,
                )
            except Exception as exc:  # noqa: BLE001 (each query of the group gets the error, in its caller)
                for search in searches:
                    search.future.set_exception(exc)
                continue
            start = 0
            for search in searches:
                search.future.set_result(results[start : start + len(search.queries)])
                start += len(search.queries)


def _settle(future: Future, function: Callable[[], Any]) -> None:
    try:
        future.set_result(function())
    except Exception as exc:  # noqa: BLE001 (raised again where the caller waits for the result)
        future.set_exception(exc)
