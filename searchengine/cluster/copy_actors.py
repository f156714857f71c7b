"""Shard copies as Ray actors, each pinned to the node whose disk holds its folder (a hard node affinity: it never
runs elsewhere). What ClusterIndex starts when it opens a cluster, rebuilds a lost copy or moves one; a Ray Serve
front end starts deployments instead (CopyStarter), and stops those of the copies it replaced (CopyStopper)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from searchengine.cluster.errors import ClusterError
from searchengine.cluster.manifest import CopyPlace
from searchengine.cluster.placement import live_nodes
from searchengine.cluster.shard_copy import ShardCopy

CopyStarter = Callable[[CopyPlace, int, str], Any]
"""Starts the copy of a shard at a place (under a local root) and returns the handle CopyCalls calls it by."""
CopyStopper = Callable[[CopyPlace, int], None]
"""Stops what still runs of the copy of a shard at a place the cluster replaced elsewhere (heal rebuilt it, rebalance
moved it), once the committed manifest no longer names that place: a Serve application outlives its handles. A Ray
actor ends with its node or its last handle, so a cluster of actors needs none."""


def start_copy_actor(place: CopyPlace, shard: int, local_root: str) -> Any:  # noqa: ANN401 (a Ray actor handle)
    """A ShardCopy actor over `place.folder`, on node `place.node`; ClusterError when that node is not live."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = live_nodes()
    if place.node not in nodes:
        raise ClusterError(f"node {place.node} is not in the Ray cluster: its copy of shard {shard} cannot start")
    strategy = NodeAffinitySchedulingStrategy(nodes[place.node], soft=False)
    actor = ray.remote(ShardCopy).options(num_cpus=0, max_restarts=0, scheduling_strategy=strategy)
    return actor.remote(place.folder, shard, local_root)
