"""benchmarks/harness/rounds.py: the order variants take turns in, and latency percentiles in milliseconds."""

from __future__ import annotations

from benchmarks.harness.rounds import percentile_ms, rotation


def test_each_round_starts_one_variant_later_and_runs_every_variant_once() -> None:
    names = ("a", "b", "c")
    assert [rotation(names, number) for number in range(4)] == [
        ["a", "b", "c"],
        ["b", "c", "a"],
        ["c", "a", "b"],
        ["a", "b", "c"],
    ]


def test_percentiles_are_milliseconds_rounded() -> None:
    seconds = [0.001, 0.002, 0.003, 0.004, 0.1]
    assert percentile_ms(seconds, 50) == 3.0
    assert percentile_ms(seconds, 99) == 96.16
    assert percentile_ms([0.0012345], 50, digits=3) == 1.234
