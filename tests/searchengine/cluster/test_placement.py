"""Where a cluster's copies go (searchengine.cluster.placement): no Ray cluster is needed for the placement rules."""

from __future__ import annotations

from searchengine.cluster.placement import initial_placement, shared_nodes


def test_each_shard_s_copies_sit_on_different_nodes_where_there_are_enough() -> None:
    placement = initial_placement(["a", "b", "c"], shards=4, copies=2)
    assert placement == [["a", "b"], ["b", "c"], ["c", "a"], ["a", "b"]]
    assert shared_nodes(placement) == []


def test_copies_that_must_share_a_node_are_named_with_what_to_do() -> None:
    """More copies than nodes: the build still places them all (a copy still covers its process's failure), and
    says which shards a node's loss would take whole."""
    placement = initial_placement(["a", "b"], shards=2, copies=3)
    assert placement == [["a", "b", "a"], ["b", "a", "b"]]
    said = shared_nodes(placement)
    assert len(said) == 2
    assert said[0].startswith("shard 0: 3 copies on 2 node(s) (a, b);")
    assert "add Ray nodes and move copies onto them (ClusterIndex.rebalance())" in said[0]
    assert shared_nodes(initial_placement(["a"], shards=1, copies=1)) == []
