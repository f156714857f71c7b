"""Shard copies as Ray Serve deployments: one application per copy (a deployment of one replica), pinned to the
copy's node by a sliver of that node's (placement.node_resource) `searchengine_node_<name>` resource, so Serve restarts a failed replica on
the same node, whose disk holds the copy's folder. A copy's calls run one at a time on one thread of the replica,
as on a Ray actor (its SQLite connections belong to the thread that opened them), and each is timed with Ray's own
metrics (ray.util.metrics): `searchengine_shard_seconds` by shard, node and call, exported by each node's metrics
agent (`ray metrics launch-prometheus`, or the dashboard's Grafana)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from searchengine.cluster.copy_calls import CALL_TIMEOUT, copy_failed
from searchengine.cluster.errors import ClusterError
from searchengine.cluster.manifest import ClusterManifest, CopyPlace, of_build
from searchengine.cluster.placement import NODE_RESOURCE, live_nodes, node_resource
from searchengine.cluster.served import COPY_APP_PREFIX, copy_app_name, recorded_env, running_apps

log = logging.getLogger("searchengine.server")
SHARD_SECONDS_BOUNDARIES = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0]
"""Seconds: a shard's term statistics take about a millisecond, a batch's candidates tens, a write seconds."""
SERVE_LOGGING = {"enable_access_log": False, "log_level": "WARNING"}
"""Serve's logging for the proxy, the ingress and the copies (ray.serve.schema.LoggingConfig): no line per request
or per call to a copy (a search makes one to three calls to every shard, each a line in a log file), warnings and
errors kept."""
SEARCH_CALLS = frozenset({"statistics", "candidates", "hits", "described", "ids_of"})
"""The calls of a search (and of /info), which another copy of the shard can answer instead."""
BY_VALUE_CALLS = SEARCH_CALLS | {"apply"}
"""The calls ServeCalls sends by value (over gRPC): a search's, and a write's `apply` (its documents and vectors
come from the ingress; a routed add of 10 documents took 0.86x and 0.77x the time by reference in two runs of
benchmarks/scale/routed_write_calls.py, docs/cluster.md)."""
SEARCH_TIMEOUT_S = 10.0
"""Seconds a search's call to one copy may take before that copy counts as failed (it stops serving until heal
brings it back). The shard's other copy is asked much sooner, once the call is late for its shard (shard_rounds.py's
hedge), so this bounds only a search whose shard has no other copy to ask."""
GRPC_ENV = {"RAY_SERVE_REPLICA_GRPC_MAX_MESSAGE_LENGTH": str(2**31 - 1)}
"""The environment of both ends of a call by value (the ingress replica, which makes ServeCalls, and every copy's
replica): a message over gRPC may be as large as gRPC allows (2 GiB), not Serve's default 4 MiB, which one batch
of many queries with a large k (up to 256 x 1,000 hits with their texts) would pass in a reply, and a write of one
long document in its request."""
COPY_SHUTDOWN_S = 3.0
"""Seconds Serve waits for a copy's replica to stop by itself (graceful_shutdown_timeout_s; Serve's default is 20)
before it kills it. An idle replica stops at the first look of its wait loop (every 2 s) for calls still running; a
replica that cannot stop by itself, the one Serve keeps trying to place on a lost node, is waited for until then
before its deleted application goes. Nothing needs a copy's last calls to finish: a copy is deleted once replaced
(its node lost, or its files moved and removed) or after the ingress (cluster-index stop), and a write cut short
counts as that copy's failure, which heal repairs."""
COPY_FOLDER_ENV = "SEARCHENGINE_COPY_FOLDER"
"""In each copy replica's environment: the copy's folder, so Serve's own record of the deployment says whose copy it
is (its cluster index and build: stop_unnamed_copies), without asking the replica."""
WRITE_TIMEOUT_S = 30.0
"""Seconds a write waits for its copies (those of all the shards it touches together) before a copy that has not
committed counts as failed (heal catches it up): a write reaches its copies already embedded, so storing even the
most documents one request may send takes far less. A copy whose node is lost counts as failed much sooner: once
Ray declares the node dead (routed_writes.py)."""


class CopyDeployment:
    """The body of a copy's deployment: a ShardCopy (searchengine.cluster.shard_copy) opened and called on one
    thread of its own, each call timed."""

    def __init__(self, folder: str, shard: int, local_root: str) -> None:
        from ray.util.metrics import Histogram

        from searchengine.cluster.shard_copy import ShardCopy

        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"shard-{shard}")
        self.copy = self._thread.submit(ShardCopy, folder, shard, local_root).result()
        self.shard = shard
        self._seconds = Histogram(
            "searchengine_shard_seconds",
            description="Time a shard copy took to answer a call (statistics, candidates, hits, apply...).",
            boundaries=SHARD_SECONDS_BOUNDARIES,
            tag_keys=("shard", "node", "call"),
        )

    async def call(self, method: str, *args: Any) -> Any:  # noqa: ANN401 (what the ShardCopy method returns)
        """`method(*args)` of the ShardCopy (or `described` here), after the calls before it, timed by shard, node
        and call."""
        target = self if method == "described" else self.copy
        if method.startswith("_") or not callable(getattr(target, method, None)):
            raise ClusterError(f"a shard copy has no call {method!r}")
        start = time.perf_counter()
        try:
            return await asyncio.wrap_future(self._thread.submit(getattr(target, method), *args))
        finally:
            tags = {"shard": str(self.shard), "node": self.copy.node, "call": method}
            self._seconds.observe(time.perf_counter() - start, tags=tags)


    def described(self) -> dict[str, Any]:
        """ShardCopy.status, with the bytes the copy's folder holds."""
        status = self.copy.status()
        status["size_bytes"] = sum(entry.stat().st_size for entry in self.copy.folder.iterdir() if entry.is_file())
        return status


class ServeCalls:
    """The cluster's CopyCalls (searchengine.cluster.copy_calls) over Serve deployment handles.

    A call to a replica whose node was lost never fails by itself: Serve's router retries a request its replica did
    not accept on another replica of the deployment, and a copy's deployment has one, which Serve cannot start again
    while its node (and so the node's resource) is gone, so the request waits for a replica that never comes. A
    search's calls therefore count as failed after `search_timeout_s` and a write's after `write_timeout_s`; a search
    asks another copy of a slow shard well before that (ClusterIndex's hedged rounds, shard_rounds.py), and gives up
    on a copy as soon as heal finds its node gone; a write gives up on a copy as soon as Ray no longer lists its node
    as alive (routed_writes.py), and is acknowledged by the shard's other live copies.

    With `by_value` (the default), a search's calls and a write's `apply` (BY_VALUE_CALLS) go by value, over the
    gRPC channel Serve keeps between replicas (the handle option `_by_reference=False`): their arguments and results
    come from and go to the ingress (a query's vector and words, a shard's candidates, a write's documents and
    vectors), and each call skips the Ray task, the object store and the streamed reply a call by reference makes.
    The copying of a copy's files stays by reference, so a call's result passed to another call goes from copy to
    copy, not through the ingress."""

    def __init__(
        self,
        search_timeout_s: float = SEARCH_TIMEOUT_S,
        write_timeout_s: float = WRITE_TIMEOUT_S,
        *,
        by_value: bool = True,
    ) -> None:
        self.search_timeout_s = search_timeout_s
        self.write_timeout_s = write_timeout_s
        self.by_value = by_value
        self._methods: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._callers: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_lock = threading.Lock()

    def start(self, handle: Any, method: str, *args: Any) -> Any:  # noqa: ANN401 (a handle, a DeploymentResponse)
        callers = self._callers.get(handle)
        if callers is None:  # made once per copy, not at every call (each options() copies the handle)
            by_reference = handle.options(method_name="call")
            by_value = handle.options(method_name="call", _by_reference=False) if self.by_value else by_reference
            callers = self._callers[handle] = (by_reference, by_value)
        pending = callers[method in BY_VALUE_CALLS].remote(method, *args)
        self._methods[pending] = method
        return pending

    def finish(self, pending: Any, timeout: float = CALL_TIMEOUT) -> Any:  # noqa: ANN401
        method = self._methods.get(pending, "")
        if method in SEARCH_CALLS or method == "apply":
            timeout = min(timeout, self.timeout(method))
        try:
            return pending.result(timeout_s=timeout)
        except Exception as error:
            if copy_failed(error):  # the cluster stops asking that copy until heal brings it back: say why
                log.warning("a shard copy's call failed: %s", f"{type(error).__name__}: {error}".splitlines()[0])
            raise

    def timeout(self, method: str) -> float:
        if method in SEARCH_CALLS:
            return self.search_timeout_s
        return self.write_timeout_s if method == "apply" else CALL_TIMEOUT

    def waitable(self, pending: Any) -> Future:  # noqa: ANN401
        """The response awaited on this process's waiting loop (a thread of its own): a DeploymentResponse has no
        future of its own to wait on beside others, and `.result()` waits for one response only."""
        return asyncio.run_coroutine_threadsafe(_awaited(pending), self._waiting_loop())

    def cancel(self, pending: Any) -> None:  # noqa: ANN401
        with contextlib.suppress(Exception):  # answered already, or its replica gone: nothing left to stop
            pending.cancel()

    def _waiting_loop(self) -> asyncio.AbstractEventLoop:
        with self._loop_lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="copy-calls", daemon=True).start()
            return self._loop


async def _awaited(pending: Any) -> Any:  # noqa: ANN401 (what the copy's call returns)
    return await pending


def start_copy_deployment(place: CopyPlace, shard: int, local_root: str) -> Any:  # noqa: ANN401 (a DeploymentHandle)
    """The handle of the copy at `place`'s deployment, deployed first unless it runs already (the cluster's
    CopyStarter). ClusterError when the copy's node is not live or declares no name resource to pin it by."""
    return start_copy_deployments([(place, shard)], local_root)[0]


def stop_copy_deployment(place: CopyPlace, shard: int) -> None:
    """Delete the Serve application of the copy at `place`, without waiting for it to go (the cluster's
    CopyStopper, for a copy heal or rebalance replaced elsewhere): else its replica stays pinned to its node, which
    Serve keeps trying to place when the node is lost, and starts again over a folder no manifest names should the
    node come back under its name. Deleting an application that does not run does nothing."""
    from ray import serve

    serve.delete(copy_app_name(place, shard), _blocking=False)


def stop_unnamed_copies(manifest: ClusterManifest) -> list[str]:
    """Delete, without waiting, the Serve applications of copies of `manifest`'s build that the manifest does not
    name, and return their names: what an ingress that died between writing the manifest (a copy moved) and deleting
    the replaced copy's application left running, for ever (its list of replaced copies was in its memory only). A
    copy's build is its folder's (COPY_FOLDER_ENV, as Serve records it), so the copies of another build or another
    cluster index are left alone, as are those deployed before copies recorded their folder."""
    from ray import serve

    named = {copy_app_name(place, shard) for shard, places in enumerate(manifest.placement) for place in places}
    unnamed = sorted(
        app
        for app, env in recorded_env("copy").items()
        if app.startswith(COPY_APP_PREFIX) and app not in named and of_build(manifest, env.get(COPY_FOLDER_ENV, ""))
    )
    for app in unnamed:
        serve.delete(app, _blocking=False)
    return unnamed


def start_copy_deployments(
    copies: list[tuple[CopyPlace, int]], local_root: str, logging: dict[str, Any] = SERVE_LOGGING
) -> list[Any]:
    """The handles of the deployments of `copies` (place, shard), deploying those not running yet all at once, with
    Serve's `logging` (a LoggingConfig as a dict)."""
    from ray import serve
    from ray.serve.api import RunTarget

    running = running_apps()
    nodes = live_nodes()
    targets = []
    for place, shard in copies:
        name = copy_app_name(place, shard)
        if name in running:
            continue
        if place.node not in nodes:
            raise ClusterError(f"node {place.node} is not in the Ray cluster: its copy of shard {shard} cannot start")
        if place.node == nodes[place.node]:
            raise ClusterError(
                f"node {place.node} declares no name, so Ray Serve cannot pin shard {shard}'s copy to it: start each "
                f"node with --resources '{{\"{NODE_RESOURCE}NAME\": 1}}' and build the cluster again"
            )
        deployment = serve.deployment(
            CopyDeployment,
            name="copy",
            num_replicas=1,
            max_ongoing_requests=64,
            graceful_shutdown_timeout_s=COPY_SHUTDOWN_S,
            ray_actor_options={
                "num_cpus": 0, "resources": node_resource(place.node),
                "runtime_env": {"env_vars": {**GRPC_ENV, COPY_FOLDER_ENV: place.folder}},
            },
            logging_config=logging,
        )
        targets.append(RunTarget(deployment.bind(place.folder, shard, local_root), name=name, route_prefix=None))
    if targets:
        serve.run_many(targets)
    return [serve.get_deployment_handle("copy", app_name=copy_app_name(place, shard)) for place, shard in copies]

