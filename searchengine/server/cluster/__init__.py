"""A cluster index (searchengine.cluster) served by Ray Serve with the HTTP API of `searchengine serve`.

- copy_deployments.py: each shard copy a Serve deployment of its own, pinned to its node by the node's
  `searchengine_node_<name>` resource, timing its calls with Ray's metrics (ray.util.metrics); ServeCalls, the
  cluster's CopyCalls over their handles.
- cluster_engine.py: ClusterEngine, the SearchEngine methods the server's reader and writer threads call,
  answered by a ClusterIndex: the existing routers serve a cluster unchanged.
- ingress.py: the ingress deployment: one replica holding the ClusterIndex (the one writer that numbers each
  shard's writes) and the FastAPI app of searchengine.server.app, so /search, /documents, /info, /health, the
  page, /v1/embeddings and /metrics are the same code as on one machine.
- serve_app.py: serve_cluster, which deploys both on a running Ray cluster; cluster_status, what
  `searchengine cluster-index status` prints; stop_cluster, which deletes one cluster's Serve applications
  (`searchengine cluster-index stop`).
"""
