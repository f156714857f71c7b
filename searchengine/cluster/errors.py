"""The errors of a cluster index, each a SearchEngineError whose message names the problem and the fix."""

from __future__ import annotations

from searchengine.errors import SearchEngineError, UnavailableError


class ClusterError(SearchEngineError):
    """A cluster index cannot do what was asked (no manifest, a bad setting, a write no copy took)."""


class ShardsUnavailableError(ClusterError, UnavailableError):
    """A request that asked for every shard, or a write, found some shard without a live copy (HTTP 503: retry once
    the shard has one). Made from its message, as every SearchEngineError is (searchengine.Client raises the class a
    server names); `of` writes a search's."""

    @classmethod
    def of(cls, missing: list[int], total: int) -> ShardsUnavailableError:
        """The error for the shards `missing` of `total`."""
        shards = ", ".join(map(str, missing))
        return cls(
            f"{len(missing)} of {total} shards have no live copy (shard {shards}): retry once their nodes are back "
            "or their copies are rebuilt (ClusterIndex.heal), or search without all_shards=True for a partial answer"
        )


class CopyBehindError(ClusterError):
    """A shard copy was sent a write while it lacks earlier ones: it must catch up from a live copy first."""


class CopyFolderError(ClusterError):
    """A shard copy was asked to open a folder that does not belong to the node it runs on."""


class WriteConflictError(ClusterError):
    """A shard copy holds a different write under the number it was sent: another ClusterIndex (another process, or
    one opened earlier) wrote the shard since this one read its sequence. Before, the copy took it as a write it held
    already, and the write was acknowledged but never stored."""
