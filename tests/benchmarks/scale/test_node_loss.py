"""benchmarks/scale/node_loss.py's record of a load: failed and partial searches counted, how long until full
answers came back, and the latency of searches and of acknowledged writes split at the loss."""

from __future__ import annotations

from benchmarks.scale.node_loss import Load, Searched, Wrote, summary


def load_of(*searches: tuple[float, float, bool, bool]) -> Load:
    return Load(searches=[Searched(*search) for search in searches], acknowledged=[("a-0", "amarker0x")])


def test_full_answers_come_back_when_the_last_partial_search_ends() -> None:
    load = load_of(
        (0.0, 0.1, False, False), (1.0, 0.2, False, False),  # before the loss at 2 s
        (1.9, 4.0, False, True),  # in flight at the loss, partial, ends at 5.9 s
        (3.0, 1.0, True, False),  # failed
        (6.0, 0.5, False, False), (13.0, 0.3, False, False),  # whole again; the last after the 10 s window
    )  # fmt: skip
    record = summary(load, lost_at=2.0, whole_from=2.0, whole_at=7.0)
    assert record["failed_searches"] == 1 and record["partial_answers"] == 1 and record["searches"] == 6
    assert record["full_again_s"] == 3.9  # from the loss to the end of the partial search
    assert record["latency_before"] == {"searches": 2, "p50_ms": 150.0, "p99_ms": 200.0}
    assert record["latency_during"]["searches"] == 2  # the failed search is not timed
    assert record["latency_after"] == {"searches": 1, "p50_ms": 300.0, "p99_ms": 300.0}
    assert record["acknowledged_writes"] == 1


def test_a_load_that_ends_partial_counts_until_a_full_answer_came_after_it() -> None:
    load = load_of((0.0, 0.1, False, False), (3.0, 0.5, False, True), (4.0, 0.5, False, True))
    record = summary(load, lost_at=1.0, whole_from=2.0, whole_at=9.5)
    assert record["full_again_s"] == 7.5  # from the node's return to the full answer after the load


def test_no_partial_or_failed_search_means_no_wait() -> None:
    record = summary(load_of((0.0, 0.1, False, False), (3.0, 0.1, False, False)), 1.0, 1.0, 4.0)
    assert record["full_again_s"] == 0.0 and record["failed_searches"] == 0


def test_acknowledged_writes_are_timed_before_during_and_after_the_loss() -> None:
    load = load_of((0.0, 0.1, False, False), (20.0, 0.1, False, False))
    load.writes = [
        Wrote(0.5, 0.02, False), Wrote(1.0, 0.04, False),  # before the loss at 2 s
        Wrote(1.99, 30.0, False),  # in flight at the loss: waited for the lost copy
        Wrote(3.0, 0.5, True),  # refused: not timed
        Wrote(4.0, 0.2, False),  # in the 10 s after the loss
        Wrote(13.0, 0.03, False),  # after
    ]  # fmt: skip
    record = summary(load, lost_at=2.0, whole_from=2.0, whole_at=2.0)
    assert record["write_latency_before"] == {"writes": 2, "p50_ms": 30.0, "p99_ms": 40.0}
    assert record["write_latency_during"] == {"writes": 2, "p50_ms": 15100.0, "p99_ms": 30000.0}
    assert record["write_latency_after"] == {"writes": 1, "p50_ms": 30.0, "p99_ms": 30.0}
    assert summary(load_of((0.0, 0.1, False, False)), 1.0, 1.0, 1.0)["write_latency_during"] == {"writes": 0}
