"""Deploy a cluster index on the Ray cluster this process is connected to: each copy a Serve application of its
own (copy_deployments.py), then the ingress (ingress.py), listening on a port of its own (direct_ingress.py) and
behind Serve's HTTP proxy; the cluster's status, from the running ingress when it serves that cluster; and stopping
it, its own Serve applications only."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchengine.cluster.errors import ClusterError
from searchengine.cluster.served import recorded_env, running_apps, served_copies
from searchengine.server.cluster import direct_ingress
from searchengine.server.listener import http_url
from searchengine.server.settings import ServerSettings

INGRESS_APP = "searchengine"
"""The Serve application of the ingress."""
MANIFEST_ENV = "SEARCHENGINE_CLUSTER_MANIFEST"
"""In the ingress replica's environment: the manifest it serves, so Serve's own record of the deployment names it
(stop_cluster reads it there, without asking an ingress that may be busy or hung)."""
STOP_TIMEOUT_S = 120.0
"""Seconds stop_cluster waits for the ingress's application to be gone, and then as long for the copies': Serve
waits for a replica's requests in flight, up to its graceful_shutdown_timeout_s (the ingress's: Serve's default, 20 s;
a copy's: COPY_SHUTDOWN_S, 3 s, the wait for one whose node is lost)."""


@dataclass(frozen=True)
class ServedAddresses:
    """Where a served cluster index answers."""

    proxy_url: str
    """Serve's HTTP proxy, which forwards to the ingress wherever it runs: the address that stays."""
    ingress_url: str | None
    """The ingress itself (Ray Serve's direct ingress, direct_ingress.py): the faster address, which moves when the
    ingress is started again after a crash (`cluster-index status` shows where it is). None where Serve was started
    earlier without direct ingress."""


def connect(address: str | None) -> None:
    """Connect this process to the Ray cluster at `address` (None: $RAY_ADDRESS or the one `ray start` runs here);
    one line when none is reachable."""
    import logging

    import ray

    if ray.is_initialized():
        return
    where = f"at {address}" if address else "on this machine (nor at $RAY_ADDRESS)"
    advice = "start one with `ray start --head`, or give its head's HOST:PORT with --address"
    if address and address != "auto" and "://" not in address:
        host, _, port = address.rpartition(":")
        try:  # ray.init retries an unreachable address for a minute or more; a refused connection answers at once
            socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=5).close()
        except (OSError, ValueError) as exc:
            raise ClusterError(f"no Ray cluster is reachable {where} ({exc}): {advice}") from None
    try:
        ray.init(address=address or "auto", logging_level=logging.WARNING, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ClusterError(f"no Ray cluster is reachable {where} ({str(exc).splitlines()[0][:120]}): {advice}") from None


def serve_cluster(
    manifest_path: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    ingress_port: int = direct_ingress.FIRST_PORT,
    settings: ServerSettings = ServerSettings(),
    readers: int = 2,
    heal_every_s: float | None = None,
    ingress_node: str | None = None,
    access_log: bool = False,
) -> ServedAddresses:
    """Start the copies of the cluster index at `manifest_path` (those whose nodes are live; heal starts the others
    later) and its ingress, behind Serve's HTTP proxy at http://HOST:PORT/ and listening itself on the first free port
    from `ingress_port` (direct_ingress.py); returns both addresses. The ingress reads (and, when heal moves a copy,
    rewrites) the manifest, so it is pinned to `ingress_node` (a node's `searchengine_node_<name>` name), by
    default the node this process runs on when it has a name. `access_log`: Serve logs a line per request (and
    per call to a copy) to its log files, off by default (SERVE_LOGGING)."""
    from ray import serve
    from ray.serve.context import _get_global_client

    from searchengine.cluster.manifest import read_manifest
    from searchengine.cluster.placement import live_nodes, node_resource
    from searchengine.server.cluster.copy_deployments import GRPC_ENV, SERVE_LOGGING, start_copy_deployments
    from searchengine.server.cluster.ingress import HEAL_EVERY_S, ClusterIngress

    path = Path(manifest_path).resolve()
    manifest = read_manifest(path)
    # One HTTP proxy, on the head: the address returned is the head's (a proxy on every node wants a load balancer
    # in front, and on one machine's simulated cluster they would share the port and die with their node).
    logging = {**SERVE_LOGGING, "enable_access_log": access_log}
    serve.start(
        proxy_location="HeadOnly", http_options={"host": host, "port": port}, logging_config=logging,
        controller_options={"runtime_env": {"env_vars": direct_ingress.controller_env(ingress_port)}},
    )  # fmt: skip
    nodes = live_nodes()
    copies = [(place, shard) for shard, places in enumerate(manifest.placement) for place in places]
    start_copy_deployments(
        [(place, shard) for place, shard in copies if place.node in nodes], manifest.local_root, logging=logging
    )
    node = ingress_node or _own_node_name(nodes)
    env = {**GRPC_ENV, **direct_ingress.replica_env(), MANIFEST_ENV: str(path)}
    options: dict[str, Any] = {"num_cpus": 0, "runtime_env": {"env_vars": env}}
    if node is not None:
        if node not in nodes:
            raise ClusterError(f"node {node} is not in the Ray cluster: name a live node for the ingress")
        options["resources"] = node_resource(node)
    ingress = serve.deployment(
        ClusterIngress,
        name="ingress",
        num_replicas=1,
        max_ongoing_requests=256,
        ray_actor_options=options,
        logging_config=logging,
    )
    bound = ingress.bind(str(path), settings, readers, 64, HEAL_EVERY_S if heal_every_s is None else heal_every_s)
    serve.run(bound, name=INGRESS_APP, route_prefix="/")
    # Serve started earlier keeps its own HTTP options (a new host or port is ignored, with Serve's warning)
    listening = _get_global_client().http_config
    proxy_url = http_url(listening.host, listening.port, every_interface_as="127.0.0.1")
    return ServedAddresses(proxy_url, direct_ingress.ingress_address(INGRESS_APP))


def _own_node_name(nodes: dict[str, str]) -> str | None:
    """The name of the node this process runs on, when it is a Ray node that declares one."""
    import ray

    own = ray.get_runtime_context().get_node_id()
    return next((name for name, node_id in nodes.items() if node_id == own and name != node_id), None)


def cluster_status(manifest_path: str | Path, timeout_s: float = 60.0) -> dict[str, Any]:
    """The cluster's shards, copies, nodes, documents per shard and each copy's lag: from the running ingress when
    it serves this manifest (its replica's environment names it, MANIFEST_ENV; it knows every acknowledged write),
    with the address it listens on itself (`ingress_url`, None without direct ingress), else from the copies
    themselves, started as Ray actors for the question: an ingress serving another manifest is not asked.
    ClusterError when the ingress does not answer within `timeout_s`."""
    from ray import serve

    from searchengine.cluster.manifest import read_manifest

    path = Path(manifest_path).resolve()
    read_manifest(path)  # refused in one line when there is none, before Ray is asked anything
    if _ingress_manifest() == str(path):
        asked = serve.get_deployment_handle("ingress", app_name=INGRESS_APP).status.remote()
        try:
            status = asked.result(timeout_s=timeout_s)
        except TimeoutError:
            asked.cancel()
            raise ClusterError(
                f"the cluster's ingress did not answer within {timeout_s:g} s (busy or hung): `serve status` shows "
                "its state; Serve restarts it once its health check fails"
            ) from None
        # the ingress answered, so it runs; Serve's controller lists its port within a round of its control loop
        return {**status, "ingress_url": direct_ingress.ingress_address(INGRESS_APP, timeout_s=5)}
    import ray

    from searchengine.cluster.cluster_index import ClusterIndex

    index = ClusterIndex.open(path)
    try:
        return index.status()
    finally:
        for states in index.copies:
            for state in states:
                if state.handle is not None:
                    ray.kill(state.handle)


def stop_cluster(manifest_path: str | Path, timeout_s: float = STOP_TIMEOUT_S) -> list[str]:
    """Stop serving the cluster index at `manifest_path` on the connected Ray cluster: delete its ingress's Serve
    application (when the running ingress serves this manifest), then its copies' (the ingress's heal would start
    one again), each waited for until Serve no longer lists it. Returns the applications stopped, none when it was
    not served. Other Serve applications go on (`serve shutdown` stops them all); the manifest and the copies'
    folders stay, so `serve_cluster` serves it again. ClusterError when the ingress, or the copies, are not gone
    within `timeout_s`."""
    from searchengine.cluster.manifest import read_manifest

    path = Path(manifest_path).resolve()
    read_manifest(path)  # refused in one line when there is none
    ingress = [INGRESS_APP] if _ingress_manifest() == str(path) else []
    _delete_apps(ingress, path, timeout_s)
    copies = served_copies(read_manifest(path))  # read again: the ingress's heal may have moved a copy
    _delete_apps(copies, path, timeout_s)
    return ingress + copies


def _delete_apps(apps: list[str], path: Path, timeout_s: float) -> None:
    """Delete the Serve applications `apps` of the cluster index at `path` at once, and wait until Serve no longer
    lists them; ClusterError when some are still listed after `timeout_s`."""
    from ray import serve

    deadline = time.monotonic() + timeout_s
    for app in apps:
        serve.delete(app, _blocking=False)
    while left := sorted(set(apps) & running_apps()):
        if time.monotonic() > deadline:
            raise ClusterError(
                f"{len(left)} Serve applications of the cluster index at {path} were still stopping after "
                f"{timeout_s:g} s ({', '.join(left)}): `serve status` shows their state; run the stop again"
            )
        time.sleep(0.2)


def _ingress_manifest() -> str | None:
    """The manifest the running ingress serves, as Serve records its replica's environment (MANIFEST_ENV); None
    when no ingress runs."""
    if INGRESS_APP not in running_apps():
        return None
    return recorded_env("ingress").get(INGRESS_APP, {}).get(MANIFEST_ENV)
