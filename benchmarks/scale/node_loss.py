"""A node lost under load, for the cluster's quick check (issue 41's "node loss" row; cluster_check.py calls it).

`clients` threads search through the cluster's HTTP ingress (one hybrid query a request) and one thread writes
(one document a request, each with a word of its own) for `seconds`, while the driver runs the events of the run
at their times: remove a node of the simulated cluster (ray.cluster_utils.Cluster.remove_node, as the fault
tests do) at a seeded random point, and, with one copy per shard, add it back later under the same name (the
ingress's heal starts its copies again from the node's own folders). Every search is timed and kept: whether it
failed or was flagged partial, and when it started, so the record gives the latency before the loss, during it
and after full answers came back, and how long that took; every write is timed too, until it was acknowledged or
refused (the acknowledged ones' latency split likewise). Every acknowledged write is then looked for by its own
word (a keyword search that must return its id).
"""

from __future__ import annotations

import json
import random
import statistics
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

K = 10
ERRORS_KEPT = 5
AWAY_AT_MOST_S = 60.0
"""How long a node lost with one copy per shard waits, at most, for an answer flagged partial before it returns."""


def post(url: str, body: Any, timeout: float = 120.0) -> Any:  # noqa: ANN401
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


@dataclass
class Searched:
    """One search of the load: when it started (seconds from the load's start), how long it took, and how it
    ended."""

    started: float
    seconds: float
    failed: bool
    partial: bool


@dataclass
class Wrote:
    """One write of the load: when it started (seconds from the load's start), how long it took to be
    acknowledged or refused, and whether it was refused."""

    started: float
    seconds: float
    refused: bool


@dataclass
class Load:
    """What the load did: every search, every write (timed), the acknowledged writes (id and word), the refused
    ones, and the first few distinct errors (to say why a request failed)."""

    begun: float = 0.0
    """When the load started (time.perf_counter)."""
    searches: list[Searched] = field(default_factory=list)
    acknowledged: list[tuple[str, str]] = field(default_factory=list)
    writes_refused: int = 0
    writes: list[Wrote] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def run_load(
    url: str, queries: list[str], seconds: float, events: list[tuple[float, Callable[[], None]]], clients: int = 8,
    prefix: str = "ack",
) -> Load:  # fmt: skip
    """`clients` searching threads and one writer for `seconds`; each event's action runs in this thread at its
    time (seconds from the start, in order)."""
    load = Load(begun=time.perf_counter())
    lock = threading.Lock()
    stop = threading.Event()
    begun = load.begun

    def noted(error: Exception) -> None:
        text = f"{type(error).__name__}: {error}"
        if isinstance(error, urllib.error.HTTPError):
            text += " " + error.read().decode("utf-8", "replace")[:300]
        with lock:
            if text not in load.errors and len(load.errors) < ERRORS_KEPT:
                load.errors.append(text)

    def searcher(offset: int) -> None:
        turn = offset
        while not stop.is_set():
            query = queries[turn % len(queries)]
            turn += clients
            started = time.perf_counter()
            failed, partial = False, False
            try:
                answer = post(url + "/search", {"queries": [query], "k": K, "mode": "hybrid"}, timeout=60)
                partial = bool(answer["results"][0]["shards"]["partial"])
            except (urllib.error.URLError, OSError, KeyError, ValueError) as error:
                noted(error)
                failed = True
            ended = time.perf_counter()
            with lock:
                load.searches.append(Searched(started - begun, ended - started, failed, partial))

    def writer() -> None:
        number = 0
        while not stop.is_set():
            external_id, word = f"{prefix}-{number}", f"{prefix}marker{number}x"
            body = {"documents": [{"id": external_id, "text": f"an acknowledged write {word}"}], "id_field": "id"}
            started = time.perf_counter()
            refused = False
            try:
                post(url + "/documents", body, timeout=120)
                load.acknowledged.append((external_id, word))
            except (urllib.error.URLError, OSError, ValueError) as error:
                noted(error)
                load.writes_refused += 1
                refused = True
            load.writes.append(Wrote(started - begun, time.perf_counter() - started, refused))
            number += 1

    threads = [threading.Thread(target=searcher, args=(n,)) for n in range(clients)] + [threading.Thread(target=writer)]
    for thread in threads:
        thread.start()
    try:
        for at, action in events:
            time.sleep(max(0.0, at - (time.perf_counter() - begun)))
            action()
        time.sleep(max(0.0, seconds - (time.perf_counter() - begun)))
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    return load


def writes_missing(url: str, acknowledged: list[tuple[str, str]]) -> int:
    """Acknowledged writes that a keyword search for their own word does not return (32 words a request)."""
    missing = 0
    for start in range(0, len(acknowledged), 32):
        batch = acknowledged[start : start + 32]
        answers = post(url + "/search", {"queries": [word for _, word in batch], "k": 3, "mode": "keyword"})
        for (external_id, _), answer in zip(batch, answers["results"]):
            missing += external_id not in {hit["external_id"] for hit in answer["hits"]}
    return missing


def whole_again(url: str, query: str, timeout: float = 180.0) -> float:
    """When (time.perf_counter) a search first answered in full, asking once a second for up to `timeout` s."""
    deadline = time.perf_counter() + timeout
    while True:
        try:
            answer = post(url + "/search", {"queries": [query], "k": K, "mode": "hybrid"}, timeout=60)
            if not answer["results"][0]["shards"]["partial"]:
                return time.perf_counter()
        except (urllib.error.URLError, OSError, KeyError, ValueError):
            pass
        if time.perf_counter() > deadline:
            raise SystemExit(f"no search answered in full for {timeout:.0f} s after the load")
        time.sleep(1.0)


def milliseconds(searches: list[Searched]) -> dict[str, float | int]:
    """p50 and p99 of the searches that did not fail, and how many there were."""
    return percentiles([search.seconds for search in searches if not search.failed], "searches")


def write_milliseconds(writes: list[Wrote]) -> dict[str, float | int]:
    """p50 and p99 of the writes that were acknowledged (until their acknowledgement), and how many there were."""
    return percentiles([write.seconds for write in writes if not write.refused], "writes")


def percentiles(seconds: list[float], counted: str) -> dict[str, float | int]:
    """p50 and p99 of `seconds`, in milliseconds, and how many there were (as `counted`)."""
    times = sorted(1000 * value for value in seconds)
    if not times:
        return {counted: 0}
    p99 = times[min(len(times) - 1, round(0.99 * (len(times) - 1)))]
    return {counted: len(times), "p50_ms": round(statistics.median(times), 1), "p99_ms": round(p99, 1)}


def summary(load: Load, lost_at: float, whole_from: float, whole_at: float) -> dict[str, Any]:
    """The load's record: searches, failed and partial ones; full_again_s, from `whole_from` (the loss, or the
    node's return) to the end of the last search that failed or was partial, of those that ended after the loss
    (0: none did), or, if the load ended before a full answer came back, to `whole_at` (seconds from the load's
    start: when one first did after it); the latency of the searches that ended before the loss, of those in
    flight at it or started until full answers came back (at least 10 s after it), and of those started after; and
    the same three for the acknowledged writes (write_latency_*)."""
    after_loss = sorted((s for s in load.searches if s.started + s.seconds >= lost_at), key=lambda s: s.started)
    bad = [search.started + search.seconds for search in after_loss if search.failed or search.partial]
    ended_whole = bool(after_loss) and not (after_loss[-1].failed or after_loss[-1].partial)
    full_again = max(bad, default=whole_from) if ended_whole or not bad else whole_at
    during_until = max(full_again, lost_at + 10.0)
    return {
        "searches": len(load.searches),
        "failed_searches": sum(search.failed for search in load.searches),
        "partial_answers": sum(search.partial for search in load.searches),
        "full_again_s": round(max(0.0, full_again - whole_from), 1),
        "latency_before": milliseconds([s for s in load.searches if s.started + s.seconds < lost_at]),
        "latency_during": milliseconds([s for s in load.searches if s.started + s.seconds >= lost_at
                                        and s.started < during_until]),  # fmt: skip
        "latency_after": milliseconds([search for search in load.searches if search.started >= during_until]),
        "acknowledged_writes": len(load.acknowledged),
        "writes_refused": load.writes_refused,
        "write_latency_before": write_milliseconds([w for w in load.writes if w.started + w.seconds < lost_at]),
        "write_latency_during": write_milliseconds([w for w in load.writes if w.started + w.seconds >= lost_at
                                                    and w.started < during_until]),  # fmt: skip
        "write_latency_after": write_milliseconds([w for w in load.writes if w.started >= during_until]),
        "errors": load.errors,
    }


def node_loss(
    url: str, cluster: Any, node: Any, queries: list[str], seconds: float, seed: int, clients: int = 8  # noqa: ANN401
) -> dict:
    """Copies on other nodes (R >= 2): `node` removed at a seeded random point of the load's first half (from a
    fifth of it on). Every search must answer in full, and every acknowledged write be there afterwards."""
    lost_at = random.Random(seed).uniform(0.2, 0.5) * seconds
    load = run_load(url, queries, seconds, [(lost_at, lambda: cluster.remove_node(node))], clients)
    whole_at = whole_again(url, queries[0]) - load.begun
    return {"lost_at_s": round(lost_at, 1), **summary(load, lost_at, lost_at, whole_at),
            "acknowledged_writes_lost": writes_missing(url, load.acknowledged)}  # fmt: skip


def node_away_and_back(
    url: str, cluster: Any, node: Any, resources: dict[str, float], queries: list[str], seconds: float, seed: int,
    clients: int = 8,
) -> tuple[dict, Any]:  # fmt: skip
    """One copy per shard: `node` removed at a seeded random point of the load's first half, and a node with the
    same `resources` (so the same name) added a quarter of the load later, or once an answer was flagged partial if
    that comes later (within AWAY_AT_MOST_S: a short load must see the shards missing before they return). Answers
    are partial (flagged) while it is away, none may fail, and full answers must come back. Returns the record and
    the node added."""
    rng = random.Random(seed)
    lost_at = rng.uniform(0.2, 0.4) * seconds
    added: list[Any] = []
    returned: list[float] = []

    def back() -> None:
        deadline = time.perf_counter() + AWAY_AT_MOST_S
        while not partial_now(url, queries[0]) and time.perf_counter() < deadline:
            time.sleep(0.5)
        returned.append(time.perf_counter())
        added.append(cluster.add_node(num_cpus=1, resources=resources))
        cluster.wait_for_nodes()

    load = run_load(url, queries, seconds, [(lost_at, lambda: cluster.remove_node(node)),
                                            (lost_at + seconds / 4, back)], clients, prefix="one")  # fmt: skip
    whole_at = whole_again(url, queries[0]) - load.begun
    back_at = returned[0] - load.begun if returned else lost_at
    record = {"lost_at_s": round(lost_at, 1), "back_at_s": round(back_at, 1),
              **summary(load, lost_at, back_at, whole_at)}  # fmt: skip
    record["acknowledged_writes_lost"] = writes_missing(url, load.acknowledged)
    return record, added[0] if added else None


def partial_now(url: str, query: str) -> bool:
    """Whether a search answers flagged partial now (a failed one counts as not)."""
    try:
        answer = post(url + "/search", {"queries": [query], "k": K, "mode": "hybrid"}, timeout=60)
        return bool(answer["results"][0]["shards"]["partial"])
    except (urllib.error.URLError, OSError, KeyError, ValueError):
        return False
