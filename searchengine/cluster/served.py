"""Whether a cluster index is served on the Ray cluster this process is connected to: the names of its copies' Ray
Serve applications (searchengine.server.cluster deploys each copy under its own), and which of them run. What a
build asks before it replaces the cluster at its manifest path, whose folders it would remove under running
copies."""

from __future__ import annotations

import hashlib

from searchengine.cluster.manifest import ClusterManifest, CopyPlace

COPY_APP_PREFIX = "searchengine-copy-"
"""The name of every copy's Serve application begins so (`serve status` lists them together)."""


def copy_app_name(place: CopyPlace, shard: int) -> str:
    """The Serve application of the copy at `place`: named by its shard and a digest of its node and folder, so a
    copy rebuilt elsewhere is a new application and the old one's name stays its own."""
    digest = hashlib.blake2b(f"{place.node}\0{place.folder}".encode(), digest_size=6).hexdigest()
    return f"{COPY_APP_PREFIX}{shard}-{digest}"


def _serve_running() -> bool:
    """Whether Ray Serve runs on the connected cluster (asking serve.status() would start it)."""
    import ray

    try:
        ray.get_actor("SERVE_CONTROLLER_ACTOR", namespace="serve")
    except ValueError:
        return False
    return True


def running_apps() -> set[str]:
    """The names of the Serve applications running on the connected Ray cluster (none where Serve does not run:
    asking serve.status() then would start it)."""
    if not _serve_running():
        return set()
    from ray import serve

    return set(serve.status().applications)


def recorded_env(deployment: str) -> dict[str, dict[str, str]]:
    """The environment variables of the deployment named `deployment`, as Serve records it (its replicas'
    runtime_env), by the running application that has one (none where Serve does not run): what says whose a
    replica is without asking the replica, which may be busy, hung or on a lost node."""
    if not _serve_running():
        return {}
    from ray.serve.context import _get_global_client

    found = {}
    for name, application in _get_global_client().get_serve_details()["applications"].items():
        options = (application.get("deployments") or {}).get(deployment, {}).get("deployment_config", {})
        env = ((options.get("ray_actor_options") or {}).get("runtime_env") or {}).get("env_vars")
        if env is not None:
            found[name] = env
    return found


def served_copies(manifest: ClusterManifest) -> list[str]:
    """The Serve applications of `manifest`'s copies that run on the connected Ray cluster, by name (none where
    Serve does not run): a cluster index being served has them."""
    running = running_apps()
    names = [copy_app_name(place, shard) for shard, places in enumerate(manifest.placement) for place in places]
    return [name for name in names if name in running]
