"""The nodes of the Ray cluster by name, and where copies go. A node's name is stable across restarts when the node
declares a custom resource `searchengine_node_<name>` (e.g. `ray start --resources '{"searchengine_node_a": 1}'`):
a copy's folder is kept under that name, so a node that comes back finds its copies again. A node without one is
named by its Ray node id (new at every start)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

NODE_RESOURCE = "searchengine_node_"
"""The prefix of the custom resource that names a node."""


def live_nodes() -> dict[str, str]:
    """The live nodes of the Ray cluster this process is connected to: name -> Ray node id."""
    import ray

    found = {}
    for node in ray.nodes():
        if node.get("Alive"):
            found[_name(node)] = node["NodeID"]
    return found


def node_name(node_id: str) -> str:
    """The name of the live node with Ray id `node_id` (its id, where it declares no name)."""
    import ray

    for node in ray.nodes():
        if node["NodeID"] == node_id and node.get("Alive"):
            return _name(node)
    return node_id


def _name(node: dict) -> str:
    named = sorted(key[len(NODE_RESOURCE) :] for key in node.get("Resources", {}) if key.startswith(NODE_RESOURCE))
    return named[0] if named else node["NodeID"]


def node_resource(name: str) -> dict[str, float]:
    """The resource that pins an actor or a Serve replica to the node called `name` (as ray_actor_options'
    `resources`); a node named by its Ray id is pinned by NodeAffinitySchedulingStrategy instead."""
    return {f"{NODE_RESOURCE}{name}": 0.001}


def initial_placement(nodes: list[str], shards: int, copies: int) -> list[list[str]]:
    """Each shard's copies' nodes: copy c of shard s on node (s + c) mod n, so a shard's copies sit on different
    nodes wherever there are enough, and each node holds about as many copies as the others."""
    return [[nodes[(shard + copy) % len(nodes)] for copy in range(copies)] for shard in range(shards)]


def shared_nodes(placement: list[list[str]]) -> list[str]:
    """One line for each shard of `placement` (its copies' nodes) whose copies share a node, as they must where
    there are more copies than nodes: losing that node loses those copies together."""
    return [
        f"shard {shard}: {len(nodes)} copies on {len(set(nodes))} node(s) ({', '.join(sorted(set(nodes)))}); losing "
        "it loses every copy it holds: add Ray nodes and move copies onto them (ClusterIndex.rebalance()), or "
        "build with fewer copies"
        for shard, nodes in enumerate(placement)
        if len(set(nodes)) < len(nodes)
    ]


def least_loaded(nodes: Iterable[str], placed: Iterable[str], avoid: Iterable[str] = ()) -> str | None:
    """The node of `nodes` holding fewest copies (`placed`: a node per copy), among those not in `avoid` if any
    is; None when there are no nodes."""
    nodes = sorted(nodes)
    if not nodes:
        return None
    load = Counter(placed)
    preferred = [node for node in nodes if node not in set(avoid)] or nodes
    return min(preferred, key=lambda node: (load[node], node))
