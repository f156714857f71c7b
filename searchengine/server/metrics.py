"""What GET /metrics shows, in Prometheus' text format (prometheus-client): requests and their latency by route,
searches and their latency by mode, and the index's documents, segments, merges and queued writes.

Each app keeps its own registry (not prometheus-client's global one), so two apps in one process (tests, the
cluster's ingress beside a local server) never share or clash over a series. Requests are counted by an ASGI
middleware after routing, by the route's path template (/documents/{document_id:path}, not each id), so the
number of series stays bounded; a path no route matches counts as "unmatched"."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from dataclasses import astuple, dataclass

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics_core import Metric
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Seconds: a cached keyword query answers in about a millisecond, a large batch or a write in seconds."""

CONTENT_TYPE = CONTENT_TYPE_LATEST
"""The media type of /metrics' answer: Prometheus' text format, as prometheus-client writes it."""


@dataclass(frozen=True)
class IndexGauges:
    """What an index holds and has queued when /metrics is read."""

    documents: int
    vectors: int
    segments: int
    queued_writes: int
    queued_searches: int


class ServerMetrics:
    """The counters, histograms and gauges of one app, in a registry of its own. For a server of collections
    (`per_collection`), the searches, queries and the index's gauges carry a `collection` label (the requests keep
    their route's, /collections/{collection}/search, so a name no collection has makes no series)."""

    def __init__(self, per_collection: bool = False) -> None:
        self.per_collection = per_collection
        by = ["collection"] if per_collection else []
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "searchengine_requests", "HTTP requests answered, by route, method and status code.",
            ["route", "method", "status"], registry=self.registry,
        )  # fmt: skip
        self.request_seconds = Histogram(
            "searchengine_request_seconds", "Time from a request's arrival to its answer's end, by route.",
            ["route", "method"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.search_seconds = Histogram(
            "searchengine_search_seconds", "Time to answer a search request (one or a batch of queries), by mode; "
            "its _count is the number of such requests.", [*by, "mode"], buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )  # fmt: skip
        self.queries = Counter(
            "searchengine_queries", "Queries answered (a batch counts each of its queries), by mode.", [*by, "mode"],
            registry=self.registry,
        )  # fmt: skip
        self.merges = Counter(
            "searchengine_merges", "Segment merges made after writes (the merge policy's).", by, registry=self.registry
        )
        self.documents = Gauge("searchengine_documents", "Documents the index holds.", by, registry=self.registry)
        self.vectors = Gauge("searchengine_vectors", "Searchable vectors the index holds.", by, registry=self.registry)
        self.segments = Gauge("searchengine_segments", "Vector segments the index is in.", by, registry=self.registry)
        self.queued_writes = Gauge(
            "searchengine_queued_writes", "Writes (and merges) waiting for or on the writer.", by, registry=self.registry
        )
        self.queued_searches = Gauge(
            "searchengine_queued_searches", "Searches and reads waiting for a reader.", by, registry=self.registry
        )
        self.open = None
        if per_collection:
            self.open = Gauge(
                "searchengine_collection_open", "1 while the collection is open (loaded), 0 while it is closed; "
                "a closed one shows its documents only.", by, registry=self.registry,
            )  # fmt: skip
        self._gauges = (self.documents, self.vectors, self.segments, self.queued_writes, self.queued_searches)

    def observe_search(self, mode: str, queries: int, seconds: float, collection: str | None = None) -> None:
        """Record one search request of `queries` queries in `mode` (to `collection` on a server of collections)
        that took `seconds`."""
        labels = [collection or ""] if self.per_collection else []
        self.search_seconds.labels(*labels, mode).observe(seconds)
        self.queries.labels(*labels, mode).inc(queries)

    def merged(self, merges: int, collection: str | None = None) -> None:
        """Count `merges` segment merges made after a write (to `collection` on a server of collections)."""
        (self.merges.labels(collection or "") if self.per_collection else self.merges).inc(merges)

    def render(self, gauges: IndexGauges) -> bytes:
        """The text /metrics answers, with the index's gauges as `gauges` says."""
        for gauge, value in zip(self._gauges, astuple(gauges)):
            gauge.set(value)
        return generate_latest(self.registry)

    def render_collections(
        self, open_gauges: Mapping[str, IndexGauges], documents: Mapping[str, int], only: str | None = None
    ) -> bytes:
        """The text /metrics answers on a server of collections: the gauges of each open collection
        (`open_gauges`), the `documents` of each collection as its manifest says, and the collections gone since
        the last scrape dropped; with `only`, that collection's series and the server's requests alone."""
        if self.open is None:
            raise TypeError("render_collections needs ServerMetrics(per_collection=True)")
        for gauge in (*self._gauges, self.open):
            gauge.clear()
        for name, count in documents.items():
            self.documents.labels(name).set(count)
            self.open.labels(name).set(0)
        for name, gauges in open_gauges.items():
            for gauge, value in zip(self._gauges, astuple(gauges)):
                gauge.labels(name).set(value)
            self.open.labels(name).set(1)
        return generate_latest(self.registry if only is None else _OneCollection(self.registry, only))


class _OneCollection:
    """A registry's metrics without the series of collections other than `name` (for /collections/NAME/metrics)."""

    def __init__(self, registry: CollectorRegistry, name: str) -> None:
        self.registry = registry
        self.name = name

    def collect(self) -> Iterator[Metric]:
        for family in self.registry.collect():
            samples = [sample for sample in family.samples if sample.labels.get("collection", self.name) == self.name]
            if samples:
                kept = Metric(family.name, family.documentation, family.type, family.unit)
                kept.samples = samples
                yield kept


class RequestMetrics:
    """An ASGI middleware counting every HTTP request and timing it, by the route that answered it."""

    def __init__(self, app: ASGIApp, metrics: ServerMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500  # what the client sees when the app raises before it answers

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            method = scope["method"]
            self.metrics.requests.labels(route, method, str(status)).inc()
            self.metrics.request_seconds.labels(route, method).observe(time.perf_counter() - start)
