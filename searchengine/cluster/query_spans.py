"""Where a cluster search's time goes in the process that fans it out (the driver, or the Serve ingress): encoding
the queries, waiting for the shards' answers, and the rest (planning, merging, building the hits: the fan-out's own
work), summed by mode with perf_counter spans, so a benchmark reads the ingress's own work per query apart from the
shards' (ClusterIngress.spans; benchmarks/scale/cluster_fanout.py)."""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass


@dataclass
class SearchSpan:
    """One search request's spans, filled in as it runs (a request may hold a batch of queries)."""

    started: float
    encode_s: float = 0.0
    starting_s: float = 0.0
    shards_s: float = 0.0
    calls: int = 0
    statistics_rounds: int = 0

    def starting(self, since: float) -> None:
        """Count the time from `since` to now as starting calls to the shards (handing them to Ray Serve)."""
        self.starting_s += time.perf_counter() - since

    def waiting(self, since: float) -> None:
        """Count the time from `since` to now as waiting for the shards."""
        self.shards_s += time.perf_counter() - since


@dataclass
class SpanTotals:
    """The sums over the searches of one mode."""

    searches: int = 0
    queries: int = 0
    seconds: float = 0.0
    encode_s: float = 0.0
    starting_s: float = 0.0
    shards_s: float = 0.0
    calls: int = 0
    statistics_rounds: int = 0


class QuerySpans:
    """The spans of every search this process fanned out, summed by mode; thread-safe (the ingress's reader threads
    search at once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[str, SpanTotals] = {}

    @staticmethod
    def start() -> SearchSpan:
        return SearchSpan(time.perf_counter())

    def record(self, mode: str, queries: int, span: SearchSpan) -> None:
        """Add a finished search of `queries` queries in `mode` to the sums."""
        seconds = time.perf_counter() - span.started
        with self._lock:
            totals = self._totals.setdefault(mode, SpanTotals())
            totals.searches += 1
            totals.queries += queries
            totals.seconds += seconds
            totals.encode_s += span.encode_s
            totals.starting_s += span.starting_s
            totals.shards_s += span.shards_s
            totals.calls += span.calls
            totals.statistics_rounds += span.statistics_rounds

    def totals(self) -> dict[str, dict[str, float]]:
        """The sums so far, by mode (a caller compares two readings to time a stretch of searches)."""
        with self._lock:
            return {mode: asdict(totals) for mode, totals in self._totals.items()}
