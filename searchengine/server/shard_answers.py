"""How many shards answered a query: one index is one shard that always answers; a cluster index's ingress
(searchengine.server.cluster) answers with ShardedHits, and /search says so in every result."""

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
    """{"asked", "answered", "partial"} of a query's hits: 1 of 1 unless they are ShardedHits."""
    asked, answered = (hits.shards, hits.answered) if isinstance(hits, ShardedHits) else (1, 1)
    return {"asked": asked, "answered": answered, "partial": answered < asked}
