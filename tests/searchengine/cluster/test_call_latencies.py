"""When a call to a shard's copy is late enough to ask another copy too (call_latencies.py): a multiple of the
shard's recent p99 for that call, never under the floor, a default until the shard is measured, and never past the
call's timeout."""

from __future__ import annotations

import pytest

from searchengine.cluster.call_latencies import (
    HEDGE_FLOOR_S,
    HEDGE_P99_MULTIPLE,
    HEDGE_UNMEASURED_S,
    LATENCY_SAMPLES_NEEDED,
    LATENCY_WINDOW,
    CallLatencies,
)


def test_a_shard_not_measured_yet_is_late_after_the_default() -> None:
    latencies = CallLatencies()
    for _ in range(LATENCY_SAMPLES_NEEDED - 1):
        latencies.add(0, "candidates", 0.2)
    assert latencies.p99(0, "candidates") is None
    assert latencies.hedge_delay(0, "candidates", timeout=10.0) == HEDGE_UNMEASURED_S


def test_the_delay_is_a_multiple_of_the_shards_own_p99_for_that_call() -> None:
    latencies = CallLatencies()
    for position in range(100):  # 0.01 .. 1.00 s: the p99 is 0.99 s
        latencies.add(1, "candidates", (position + 1) / 100)
        latencies.add(1, "statistics", 0.002)
    assert latencies.p99(1, "candidates") == pytest.approx(0.99)
    assert latencies.hedge_delay(1, "candidates", timeout=10.0) == pytest.approx(HEDGE_P99_MULTIPLE * 0.99)
    assert latencies.hedge_delay(1, "statistics", timeout=10.0) == HEDGE_FLOOR_S, "fast calls: the floor"
    latencies.add(2, "candidates", 0.1)
    assert latencies.hedge_delay(2, "candidates", timeout=10.0) == pytest.approx(HEDGE_P99_MULTIPLE * 0.99), (
        "a shard not measured yet: every shard's p99 for the call stands in"
    )
    for _ in range(LATENCY_SAMPLES_NEEDED):
        latencies.add(2, "candidates", 0.1)
    assert latencies.hedge_delay(2, "candidates", timeout=10.0) == pytest.approx(HEDGE_P99_MULTIPLE * 0.1), (
        "once measured, its own"
    )
    assert latencies.hedge_delay(1, "candidates", timeout=0.5) == 0.5, "never past the call's timeout"


def test_the_delay_follows_the_recent_calls_only() -> None:
    latencies = CallLatencies()
    for _ in range(LATENCY_WINDOW):
        latencies.add(0, "hits", 3.0)
    slow = latencies.hedge_delay(0, "hits", timeout=60.0)
    for _ in range(LATENCY_WINDOW):
        latencies.add(0, "hits", 0.1)
    assert slow == pytest.approx(HEDGE_P99_MULTIPLE * 3.0)
    assert latencies.hedge_delay(0, "hits", timeout=60.0) == pytest.approx(HEDGE_P99_MULTIPLE * 0.1)
