"""The simulated multi-node Ray cluster the scale benchmarks run on (ray.cluster_utils.Cluster): one machine's
processes as named nodes, each with its own CPU and its `searchengine_node_<name>` resource, which the cluster
index places copies by."""

from __future__ import annotations

from typing import Any


def simulated_cluster(names: list[str], system_config: dict | None = None) -> tuple[Any, dict[str, Any]]:
    """Start a head named `names[0]` and one node per further name, one CPU each, connect this process to them and
    wait for every node; Ray's `system_config` (e.g. worker niceness, health checks) goes to the head. The cluster
    and its added nodes by name (for removing one)."""
    import ray
    from ray.cluster_utils import Cluster

    head = {"num_cpus": 1, "resources": {f"searchengine_node_{names[0]}": 1}, "include_dashboard": False}
    cluster = Cluster(
        initialize_head=True, head_node_args=head | ({"_system_config": system_config} if system_config else {})
    )
    try:
        nodes = {name: cluster.add_node(num_cpus=1, resources={f"searchengine_node_{name}": 1}) for name in names[1:]}
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
        cluster.wait_for_nodes()
    except BaseException:
        cluster.shutdown()
        raise
    return cluster, nodes
