"""A cluster index: one index spread over the nodes of a Ray cluster, with nothing on a shared file system.

What it is (manifest.py): N shards, fixed when it is built, each an ordinary index directory (segments plus
SQLite) on one node's local disk, R copies of each on different nodes where there are enough. A document belongs to
the shard its external id hashes to (routing.shard_of, BLAKE2b), so an upsert or a delete touches one shard. A small
JSON manifest names the shards, each copy's node and folder, the model and the build's settings; it is written last
and whole, so it is the commit of a build and of every move of a copy.

The interface (names kept stable for the Ray Serve front end):

- `build_cluster(manifest_path, documents, ClusterBuildSettings(shards, copies, model, local_root, ...))` ->
  (ClusterIndex, ClusterBuildReport): embedding workers embed, each copy on its node stores its shard's rows and
  segments; the driver writes no rows (report.driver_rows_written, measured) and receives no vectors. With
  `vectors=` (blocks of float32 rows in the documents' order, checked by vector_blocks.VectorRows) the documents'
  own vectors go to the copies instead and nothing is embedded. A manifest path whose cluster is being served
  (served.py: its copies' Serve applications run) is refused before any copy starts.
- `cluster_corpus(corpus, jsonl, fields)` (corpus_reading.py): the documents of a corpus file or folder, read as
  `searchengine index` reads them, each with the id that picks its shard (its id field, else NAME#LINE); what
  `searchengine cluster-index build` gives build_cluster.
- `ClusterIndex.open(manifest_path, calls=..., starter=...)`: the copies started on their nodes.
- `ClusterIndex.search(query, k, where, mode=, fusion=, min_score=, all_shards=)` and `search_batch` ->
  ClusterAnswer(hits, shards, answered, missing, partial): the query encoded once here; for keyword and hybrid the
  shards' term statistics are summed first (dfs_query_then_fetch), so scores equal one index's; k and filters
  apply to the whole cluster. A shard without a live copy makes the answer partial, or raises
  ShardsUnavailableError with all_shards=True. Hit.id is the shard's id interleaved with the shard's number
  (routing.global_id).
- `ClusterIndex.add(documents)` (upserts by external id) and `delete(external_ids)` -> WriteReceipt: committed on
  every live copy of the owning shard, with the shard's next sequence number, before they return.
- `ClusterIndex.documents(where)`: stored documents meeting filters, over every shard (a lookup by external ids).
- `ClusterIndex.ask_shards(method, *args, shards=, per_shard=)`: any ShardCopy method on one serving copy of each
  shard, with fail-over; (copy, result) by shard.
- `ClusterIndex.status()` (shards, copies, nodes, documents, lag), `heal()` (restart, rebuild or catch up copies
  from a live one's committed files, sent through Ray) and `rebalance()` (move copies to nodes that hold fewer).

How copies are reached: `ShardCopy` (shard_copy.py) is a plain class over an IndexReader and the index's writes, so
it is a Ray actor (`ray.remote(ShardCopy)`, copy_actors.start_copy_actor) or the body of a Ray Serve deployment.
ClusterIndex calls copies only through a `CopyCalls` (copy_calls.py: `start(handle, method, *args)`,
`finish(pending, timeout)`, `timeout(method)`, `waitable(pending)` and `cancel(pending)`; ActorCalls for actor
handles; a search's reads are hedged over a shard's copies, shard_rounds.py) and starts them through a `CopyStarter` (`(place, shard,
local_root) -> handle`), so a Serve front end passes its own pair. A copy refuses (CopyFolderError) a folder that
is not under its own node's root. Nodes are named by a `searchengine_node_<name>` resource where they declare one
(placement.py), so a node that comes back finds its copies.
"""

from searchengine.cluster.cluster_build import ClusterBuildReport, ClusterBuildSettings, build_cluster
from searchengine.cluster.cluster_index import ClusterAnswer, ClusterIndex
from searchengine.cluster.copy_calls import ActorCalls, CopyCalls
from searchengine.cluster.errors import ClusterError, CopyFolderError, ShardsUnavailableError
from searchengine.cluster.routed_writes import WriteReceipt
from searchengine.cluster.shard_copy import ShardCopy

__all__ = [
    "ActorCalls",
    "ClusterAnswer",
    "ClusterBuildReport",
    "ClusterBuildSettings",
    "ClusterError",
    "ClusterIndex",
    "CopyCalls",
    "CopyFolderError",
    "ShardCopy",
    "ShardsUnavailableError",
    "WriteReceipt",
    "build_cluster",
]
