"""Shard copies as Ray Serve deployments: one application per copy (a deployment of one replica), pinned to the
copy's node by a sliver of that node's (placement.node_resource) `searchengine_node_<name>` resource, so Serve
restarts a failed replica on the same node, whose disk holds the copy's folder.

Each replica starts the copy's process (CopyProcess, a Ray actor on the same node that the replica owns: it goes
with the replica, and the replica Serve starts again starts a new one). The copy's calls run there one at a time,
on the actor's thread, as its SQLite connections want, each timed with Ray's own metrics (ray.util.metrics):
`searchengine_shard_seconds` by shard, node and call, exported by each node's metrics agent (`ray metrics
launch-prometheus`, or the dashboard's Grafana). The ingress asks the replica once for its process's handle and
sends searches and writes to it directly (ServeCalls): a Ray actor call costs a fraction of a Serve call, and a
search makes one or two rounds of them."""

from __future__ import annotations

import hashlib
import logging
import time
import weakref
from typing import Any

from searchengine.cluster.copy_calls import CALL_TIMEOUT, copy_failed
from searchengine.cluster.errors import ClusterError
from searchengine.cluster.manifest import CopyPlace
from searchengine.cluster.placement import NODE_RESOURCE, live_nodes, node_resource
from searchengine.errors import SearchEngineError

log = logging.getLogger("searchengine.server")
SHARD_SECONDS_BOUNDARIES = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0]
"""Seconds: a shard's term statistics take about a millisecond, a batch's candidates tens, a write seconds."""
COPY_APP_PREFIX = "searchengine-copy-"
"""The name of every copy's Serve application begins so (`serve status` lists them together)."""
SEARCH_CALLS = frozenset({"statistics", "candidates", "hits", "described", "ids_of"})
"""The calls of a search (and of /info), which another copy of the shard can answer instead."""
DIRECT_CALLS = SEARCH_CALLS | {"apply"}
"""The calls the ingress sends straight to a copy's process, not through Serve."""
SEARCH_TIMEOUT_S = 10.0
"""Seconds a search's call to one copy may take before the shard's next copy is asked."""
WRITE_TIMEOUT_S = 30.0
"""Seconds a write may take on one copy before that copy counts as failed (heal catches it up): a write reaches its
copies already embedded, so storing even the most documents one request may send takes far less."""


class CopyProcess:
    """A shard copy's process: a ShardCopy (searchengine.cluster.shard_copy), each call timed."""

    def __init__(self, folder: str, shard: int, local_root: str) -> None:
        from ray.util.metrics import Histogram

        from searchengine.cluster.shard_copy import ShardCopy

        self.copy = ShardCopy(folder, shard, local_root)
        self.shard = shard
        self._seconds = Histogram(
            "searchengine_shard_seconds",
            description="Time a shard copy took to answer a call (statistics, candidates, hits, apply...).",
            boundaries=SHARD_SECONDS_BOUNDARIES,
            tag_keys=("shard", "node", "call"),
        )

    def ready(self) -> str:
        """The node it runs on, once the copy is open (a folder of another node is refused before)."""
        return self.copy.node

    def call(self, method: str, *args: Any) -> Any:  # noqa: ANN401 (what the ShardCopy method returns)
        """`method(*args)` of the ShardCopy (or `ids_of`, `described` here), timed by shard, node and call."""
        target = self if method in ("ids_of", "described") else self.copy
        if method.startswith("_") or not callable(getattr(target, method, None)):
            raise ClusterError(f"a shard copy has no call {method!r}")
        start = time.perf_counter()
        try:
            return getattr(target, method)(*args)
        finally:
            tags = {"shard": str(self.shard), "node": self.copy.node, "call": method}
            self._seconds.observe(time.perf_counter() - start, tags=tags)

    def ids_of(self, external_ids: list[str]) -> list[int]:
        """This shard's ids of the stored documents with `external_ids` (those a delete of them removes)."""
        self.copy.sequence()  # refreshes the copy's reader to its last commit
        found = self.copy.reader.store.documents.by_external_id(set(external_ids))
        return sorted(int(row[0]) for row in found.values())

    def described(self) -> dict[str, Any]:
        """ShardCopy.status, with the bytes the copy's folder holds."""
        status = self.copy.status()
        status["size_bytes"] = sum(entry.stat().st_size for entry in self.copy.folder.iterdir() if entry.is_file())
        return status


class CopyDeployment:
    """The body of a copy's deployment: it starts the copy's process on its own node, passes it the calls that
    come through Serve, and gives its handle (`process`) to the ingress, which calls it directly."""

    async def __init__(self, folder: str, shard: int, local_root: str) -> None:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        process = ray.remote(CopyProcess).options(num_cpus=0, max_restarts=0, scheduling_strategy=here)
        self._process = process.remote(folder, shard, local_root)
        await self._process.ready.remote()

    async def call(self, method: str, *args: Any) -> Any:  # noqa: ANN401 (what the ShardCopy method returns)
        """`method(*args)` of the copy (CopyProcess.call), after the calls before it."""
        return await self._process.call.remote(method, *args)

    def process(self) -> Any:  # noqa: ANN401 (a Ray actor handle)
        """The handle of the copy's process, which the ingress calls directly."""
        return self._process


class ServeCalls:
    """The cluster's CopyCalls (searchengine.cluster.copy_calls) over Serve deployment handles.

    A search's calls and a write go straight to the copy's process, whose handle each replica gives once (a Serve
    call costs several times a Ray actor call); the rest (a copy's sequence, its files) go through Serve. A call to
    a copy whose node was lost waits for an answer that never comes, so a search's calls wait at most
    `search_timeout_s`, after which the copy counts as failed and the shard's next copy is asked, and a write's at
    most `write_timeout_s`: a lost node costs the requests in flight seconds, not a failure. A failed call forgets
    the process's handle: the replica Serve starts again has a new process."""

    def __init__(self, search_timeout_s: float = SEARCH_TIMEOUT_S, write_timeout_s: float = WRITE_TIMEOUT_S) -> None:
        self.search_timeout_s = search_timeout_s
        self.write_timeout_s = write_timeout_s
        self._methods: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._processes: dict[str, Any] = {}

    def start(self, handle: Any, method: str, *args: Any) -> Any:  # noqa: ANN401 (a handle, a pending call)
        if method in DIRECT_CALLS:
            try:
                process = self._process_of(handle)
            except Exception as error:  # noqa: BLE001 (raised by finish, where a failed call is handled)
                return _Failed(error)
            return _Direct(process.call.remote(method, *args), handle.app_name, method)
        pending = handle.call.remote(method, *args)
        self._methods[pending] = method
        return pending

    def finish(self, pending: Any, timeout: float = CALL_TIMEOUT) -> Any:  # noqa: ANN401
        if isinstance(pending, _Failed):
            raise pending.error
        app, method = (
            (pending.app, pending.method) if isinstance(pending, _Direct) else (None, self._methods.get(pending))
        )
        if method in SEARCH_CALLS:
            timeout = min(timeout, self.search_timeout_s)
        elif method == "apply":
            timeout = min(timeout, self.write_timeout_s)
        try:
            if app is None:
                return pending.result(timeout_s=timeout)
            return _actor_result(pending.ref, timeout)
        except Exception as error:
            if copy_failed(error):  # the cluster stops asking that copy until heal brings it back: say why
                self._processes.pop(app or "", None)
                log.warning("a shard copy's call failed: %s", f"{type(error).__name__}: {error}".splitlines()[0])
            raise

    def _process_of(self, handle: Any) -> Any:  # noqa: ANN401 (a DeploymentHandle, a Ray actor handle)
        process = self._processes.get(handle.app_name)
        if process is None:
            process = handle.process.remote().result(timeout_s=self.search_timeout_s)
            self._processes[handle.app_name] = process
        return process


class _Direct:
    """A call sent straight to a copy's process: its object ref, the copy's Serve application and the call."""

    def __init__(self, ref: Any, app: str, method: str) -> None:  # noqa: ANN401 (a Ray object ref)
        self.ref, self.app, self.method = ref, app, method


class _Failed:
    """A call that could not start (its copy's process was not found): finish raises `error`."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _actor_result(pending: Any, timeout: float) -> Any:  # noqa: ANN401 (a Ray object ref, what the copy returned)
    """The result of a direct call; an error of the request itself (a SearchEngineError the copy raised) as the
    copy raised it, not wrapped in Ray's traceback."""
    import ray
    from ray.exceptions import RayTaskError

    try:
        return ray.get(pending, timeout=timeout)
    except RayTaskError as error:
        if isinstance(error.cause, SearchEngineError):
            raise error.cause from None
        raise


def copy_app_name(place: CopyPlace, shard: int) -> str:
    """The Serve application of the copy at `place`: named by its shard and a digest of its node and folder, so a
    copy rebuilt elsewhere is a new application and the old one's name stays its own."""
    digest = hashlib.blake2b(f"{place.node}\0{place.folder}".encode(), digest_size=6).hexdigest()
    return f"{COPY_APP_PREFIX}{shard}-{digest}"


def start_copy_deployment(place: CopyPlace, shard: int, local_root: str) -> Any:  # noqa: ANN401 (a DeploymentHandle)
    """The handle of the copy at `place`'s deployment, deployed first unless it runs already (the cluster's
    CopyStarter). ClusterError when the copy's node is not live or declares no name resource to pin it by."""
    return start_copy_deployments([(place, shard)], local_root)[0]


def start_copy_deployments(copies: list[tuple[CopyPlace, int]], local_root: str) -> list[Any]:
    """The handles of the deployments of `copies` (place, shard), deploying those not running yet all at once."""
    from ray import serve
    from ray.serve.api import RunTarget

    running = _running_apps()
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
            ray_actor_options={"num_cpus": 0, "resources": node_resource(place.node)},
        )
        targets.append(RunTarget(deployment.bind(place.folder, shard, local_root), name=name, route_prefix=None))
    if targets:
        serve.run_many(targets)
    return [serve.get_deployment_handle("copy", app_name=copy_app_name(place, shard)) for place, shard in copies]


def _running_apps() -> set[str]:
    from ray import serve

    return set(serve.status().applications)
