"""The errors of a cluster index, each a SearchEngineError whose message names the problem and the fix."""

from __future__ import annotations

from searchengine.errors import SearchEngineError


class ClusterError(SearchEngineError):
    """A cluster index cannot do what was asked (no manifest, a bad setting, a write no copy took)."""


class ShardsUnavailableError(ClusterError):
    """A request that asked for every shard found some shard without a live copy."""

    def __init__(self, missing: list[int], total: int) -> None:
        self.missing = missing
        shards = ", ".join(map(str, missing))
        super().__init__(
            f"{len(missing)} of {total} shards have no live copy (shard {shards}): retry once their nodes are back "
            "or their copies are rebuilt (ClusterIndex.heal), or search without all_shards=True for a partial answer"
        )


class CopyBehindError(ClusterError):
    """A shard copy was sent a write while it lacks earlier ones: it must catch up from a live copy first."""


class CopyFolderError(ClusterError):
    """A shard copy was asked to open a folder that does not belong to the node it runs on."""
