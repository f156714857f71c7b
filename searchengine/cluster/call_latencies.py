"""How long each shard's calls have taken lately, by shard and call, and from that when a call is late enough to ask
another copy of its shard too: a hedged request (Dean and Barroso, "The Tail at Scale", 2013). A copy whose node was
lost, or that stalls, then costs a search a few of its shard's slowest calls rather than the whole call timeout."""

from __future__ import annotations

import math
import threading
from collections import deque

LATENCY_WINDOW = 200
"""Calls kept per shard and call: the last 200, so the p99 is the 2nd slowest of them and follows the load within a
few seconds of searching."""
LATENCY_SAMPLES_NEEDED = 20
"""Calls a shard must have answered before its p99 is trusted (hedge_delay says what stands in until then)."""
HEDGE_P99_MULTIPLE = 2.0
"""A call is late once it has taken twice its shard's recent p99 for the call: fewer than 1 call in 100 is, so
hedging adds well under 1% of calls (Dean and Barroso hedge at the p95 for 5% more load), and a copy merely busy
with the same load as the others is not asked twice."""
HEDGE_FLOOR_S = 0.05
"""Seconds a call may always take before it is late: a shard's term statistics answer in about a millisecond, and
on a loaded machine the scheduler alone delays a call by tens of milliseconds now and then, which must not double
the calls."""
HEDGE_UNMEASURED_S = 1.0
"""Seconds before a call of a shard not measured yet (fewer than LATENCY_SAMPLES_NEEDED calls) is late: about the
slowest whole search seen under 8 clients on 2 loaded cores (benchmarks/scale/node_loss.py's p99 before a loss)."""
RECOMPUTE_EVERY = 10
"""Calls between two computations of a shard's hedge delay (a sort of LATENCY_WINDOW numbers)."""
ANY_SHARD = -1
"""The key under which every shard's calls are kept together too."""


class CallLatencies:
    """The recent latencies of the calls to each shard's copies, by shard and call (thread-safe: every search
    thread adds to them), and the hedge delay they give."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds: dict[tuple[int, str], deque[float]] = {}
        self._delays: dict[tuple[int, str], tuple[int, float]] = {}  # (calls when computed, delay)
        self._counts: dict[tuple[int, str], int] = {}

    def add(self, shard: int, method: str, seconds: float) -> None:
        """A call of `method` answered by a copy of `shard` in `seconds` (from its start to its answer)."""
        with self._lock:
            for key in ((shard, method), (ANY_SHARD, method)):
                self._seconds.setdefault(key, deque(maxlen=LATENCY_WINDOW)).append(seconds)
                self._counts[key] = self._counts.get(key, 0) + 1

    def p99(self, shard: int, method: str) -> float | None:
        """The 99th percentile of the shard's recent calls of `method` (None: fewer than LATENCY_SAMPLES_NEEDED)."""
        with self._lock:
            seconds = sorted(self._seconds.get((shard, method), ()))
        if len(seconds) < LATENCY_SAMPLES_NEEDED:
            return None
        return seconds[math.ceil(0.99 * len(seconds)) - 1]

    def hedge_delay(self, shard: int, method: str, timeout: float) -> float:
        """Seconds after which a call of `method` to a copy of `shard` is late and another copy is asked too:
        HEDGE_P99_MULTIPLE times the shard's recent p99 for the call, at least HEDGE_FLOOR_S, and never past the
        call's `timeout`. Until the shard is measured, the p99 of the call over every shard stands in for its own
        (the shards are alike in size: documents go to them by a hash), and until that is, HEDGE_UNMEASURED_S."""
        key = (shard, method)
        count = self._counts.get(key, 0)
        known = self._delays.get(key)
        if known is None or count - known[0] >= RECOMPUTE_EVERY:
            p99 = self.p99(shard, method)
            p99 = self.p99(ANY_SHARD, method) if p99 is None else p99
            delay = HEDGE_UNMEASURED_S if p99 is None else max(HEDGE_FLOOR_S, HEDGE_P99_MULTIPLE * p99)
            known = (count, delay)
            self._delays[key] = known
        return min(known[1], timeout)
