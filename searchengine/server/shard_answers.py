"""How many shards answered a query: a cluster index's ingress (searchengine.server.cluster) answers with
ShardedHits, and /search says so in each of its results; one index's answers say nothing (they are always whole,
and keep the keys of `searchengine query --json`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from searchengine.engine.search import Hit


class ShardedHits(list[Hit]):
    """A query's hits, best first, and how many of the index's shards answered it."""

    def __init__(self, hits: Iterable[Hit], *, shards: int, answered: int) -> None:
        super().__init__(hits)
        self.shards = shards
        self.answered = answered


def shards_record(hits: list[Hit]) -> dict[str, Any]:
    """{"shards": {"asked", "answered", "partial"}} for ShardedHits, {} for one index's hits."""
    if not isinstance(hits, ShardedHits):
        return {}
    return {"shards": {"asked": hits.shards, "answered": hits.answered, "partial": hits.answered < hits.shards}}
