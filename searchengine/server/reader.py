"""The server's read side: reader threads, each owning a SearchEngine, answer queries from one queue.

Queries that arrive while the readers are busy wait in the queue; a reader's next turn takes all of them (up to
`max_batch` queries) and answers those with the same options in one `search_batch`, so one encoder call serves
many clients and throughput grows with concurrency. With several readers, one searches (FAISS and SQLite release
the GIL) while another encodes its batch. Torch and FAISS run on one thread here: the event loop needs a core,
and a batch on one thread is faster than on two that contend (docs/benchmarks.md, "Serving").

Before each turn a reader checks (one stat) whether a writer committed a new generation and reopens the index if
so; a reopen that fails leaves the previous generation serving, so no request fails during the swap. Each
engine's SQLite connection is only ever used from its own thread; the readers' engines are siblings
(SearchEngine.sibling) that share the model and the loaded segments, and the encoder, shared with the writer
thread too, serialises itself.
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
from searchengine.engine.query_request import QueryRequest
from searchengine.engine.search import Hit, one_thread
from searchengine.engine.search_engine import SearchEngine
from searchengine.errors import SearchEngineError
from searchengine.server.limits import MAX_READERS

T = TypeVar("T")
log = logging.getLogger("searchengine.server")
IDLE_REFRESH_S = 0.25
"""Seconds an idle reader waits before it refreshes anyway: writes from other processes show within about that
long, and a writer waiting to empty SQLite's log (indexer/tables/wal_upkeep.py) waits about twice that at most."""


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
    mode_options: tuple[tuple[str, Any], ...] = ()
    """The mode's own options (QueryRequest.mode_options), as pairs so that equal ones group."""
    rescore: int | None = None
    """Candidates rescored from the originals (SearchEngine.search's rescore); None: the library's default."""
    all_shards: bool = False
    """A whole answer or an error (QueryRequest.all_shards): a cluster index's shards must all answer."""


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
CLOSED = "this index was closed (close(), or the end of its with block); open it again to search or write"
"""What a read or write after close says: the threads that would answer it are gone."""


class BatchingReader:
    """Answers searches (and other reads) on `readers` threads: the first owns the SearchEngine `open_engine`
    returns, each other one a sibling of it."""

    def __init__(
        self,
        open_engine: Callable[[], SearchEngine],
        max_batch: int = 64,
        readers: int = 1,
        *,
        idle_refresh_s: float = IDLE_REFRESH_S,
    ) -> None:
        if isinstance(readers, bool) or not isinstance(readers, int) or not 1 <= readers <= MAX_READERS:
            raise SearchEngineError(f"a server answers on 1 to {MAX_READERS} reader threads, not {readers!r}")
        self._open_engine = open_engine
        self.max_batch = max_batch
        self.idle_refresh_s = idle_refresh_s
        """Seconds without a job after which a reader takes an empty turn and refreshes (IDLE_REFRESH_S)."""
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._serve, args=(number,), name=f"searchengine-reader-{number}", daemon=True)
            for number in range(readers)
        ]
        self._ready = [Future() for _ in range(readers)]
        self._first: SearchEngine | None = None
        self._problems: list[str | None] = [None] * readers
        """Per reader thread: why its last reopen failed (it still serves the previous generation); None: current."""
        self._counting = threading.Lock()
        self._closing = threading.Lock()
        self._closed = False
        self.batches = 0
        """Turns taken: with `queries`, how well concurrent queries were batched."""
        self.queries = 0
        self.default_mode: SearchMode = "dense"
        """The mode of a search that names none, as of the generation loaded (hybrid once it has a keyword index)."""

    @property
    def problem(self) -> str | None:
        """Why a reader's last reopen failed, while any reader still serves a previous generation (with how many of
        them do, where there are several); None when every reader is current. Each reader reopens on its own next
        turn, so one that succeeded says nothing of the others."""
        stale = [problem for problem in self._problems if problem]
        if not stale:
            return None
        return stale[0] if len(self._problems) == 1 else f"{stale[0]} ({len(stale)} of {len(self._problems)} readers)"

    @property
    def queued(self) -> int:
        """Searches and reads waiting for a reader thread's next turn."""
        return self._queue.qsize()

    @property
    def readers(self) -> int:
        """Reader threads answering queries."""
        return len(self._threads)

    def start(self) -> None:
        """Open the engines on their reader threads, the first one first; raises what opening raised (e.g. no
        index there), after stopping the readers already started."""
        for thread, ready in zip(self._threads, self._ready, strict=True):
            try:
                try:
                    thread.start()
                except RuntimeError as exc:  # the system's limit on threads (ulimit -u, memory)
                    raise SearchEngineError(
                        f"cannot start reader thread {thread.name} ({exc}): start the server with fewer --readers"
                    ) from None
                ready.result()
            except BaseException:
                self.close()
                raise

    def search(self, queries: Sequence[str], options: SearchOptions) -> Future[list[list[Hit]]]:
        """Hits for each query, answered in the reader thread's next turn."""
        job = _Search(list(queries), options)
        self._put(job)
        return job.future

    def run(self, function: Callable[[SearchEngine], T]) -> Future[T]:
        """`function(engine)` on the reader thread, e.g. to read `info()`."""
        job = _Call(function)
        self._put(job)
        return job.future

    def close(self) -> None:
        """Answer what is queued, then close the engines and stop the threads; what comes after is refused."""
        with self._closing:
            self._closed = True
            running = [thread for thread in self._threads if thread.is_alive()]
            for _ in running:
                self._queue.put(_STOP)  # each reader takes one and stops
        for thread in running:
            thread.join()

    def _put(self, job: _Search | _Call) -> None:
        """Queue `job`; refused once closed, where no reader would ever take it and its caller would wait forever."""
        with self._closing:
            if self._closed:
                raise SearchEngineError(CLOSED)
            self._queue.put(job)

    def _serve(self, number: int) -> None:
        try:
            engine = self._open_engine() if number == 0 else self._first.sibling()
        except BaseException as exc:  # noqa: BLE001 (handed to start(), which raises it in the caller's thread)
            self._ready[number].set_exception(exc)
            return
        if number == 0:
            self._first = engine
            self.default_mode = engine.default_mode
        self._ready[number].set_result(None)
        try:
            running = True
            while running:
                jobs, running = self._next_turn()
                with one_thread():
                    self._refresh(engine, number)
                    self._answer(engine, jobs)
        finally:
            engine.close()

    def _next_turn(self) -> tuple[list[_Search | _Call], bool]:
        """Wait for one job, then take whatever else is queued, up to `max_batch` queries. After `idle_refresh_s`
        seconds without one, an empty turn: the loop refreshes, so an idle server does not hold an old read
        snapshot of the store (which would keep SQLite from resetting its write-ahead log) or miss writes."""
        jobs: list[_Search | _Call] = []
        queued = 0
        try:
            job = self._queue.get(timeout=self.idle_refresh_s)
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

    def _refresh(self, engine: SearchEngine, number: int) -> None:
        try:
            if engine.refresh():
                self.default_mode = engine.default_mode
                log.info("reopened %s: a writer committed a new generation (%d texts)", engine.path, len(engine))
            self._problems[number] = None
        except Exception as exc:  # noqa: BLE001 (whatever went wrong, the generation loaded keeps answering)
            problem = str(exc) if isinstance(exc, SearchEngineError) else f"{type(exc).__name__}: {exc}"
            if problem != self._problems[number]:
                log.warning("still serving the previous generation of %s: %s", engine.path, problem)
            self._problems[number] = problem

    def _answer(self, engine: SearchEngine, jobs: list[_Search | _Call]) -> None:
        groups: dict[SearchOptions, list[_Search]] = {}
        for job in jobs:
            if not job.future.set_running_or_notify_cancel():
                continue  # its caller gave up waiting (e.g. the client went away)
            if isinstance(job, _Call):
                _settle(job.future, lambda job=job: job.function(engine))
            else:
                groups.setdefault(job.options, []).append(job)
        for options, searches in groups.items():
            with self._counting:
                self.batches += 1
                self.queries += sum(len(search.queries) for search in searches)
            try:
                request = QueryRequest(
                    [query for search in searches for query in search.queries],
                    options.k,
                    list(options.where) or None,
                    options.mode,
                    None,
                    options.rerank,
                    options.rerank_top,
                    options.min_score,
                    options.highlight,
                    dict(options.mode_options) or None,
                    options.rescore,
                    options.all_shards,
                )
                results = engine.answer(request)
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
