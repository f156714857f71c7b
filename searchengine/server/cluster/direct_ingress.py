"""The ingress's own HTTP port, by Ray Serve's direct ingress: the ingress replica runs an HTTP server of its own, so
a request to it skips Serve's HTTP proxy (a hop to another process) and the replica's call back to the proxy for the
request's body. Measured on a simulated 3-node cluster (benchmarks/scale/cluster_fanout.py, docs/cluster.md), that is
about 10 ms of a dense search's 31.

Direct ingress is a feature flag of Ray Serve's (RAY_SERVE_ENABLE_DIRECT_INGRESS), read by the Serve controller, which
hands out the replicas' ports, and by the ingress replica. Both are given it in their runtime environments here
(serve.start's `controller_options`, the deployment's `runtime_env`), so nothing has to be set when Ray starts.

The port can move: Serve binds it without SO_REUSEADDR, so an ingress started again after a crash cannot take its
predecessor's port while that port's closed connections wait out TCP's TIME_WAIT, and takes the next free one of its
range (Serve holds a released port out of use for a while, then gives it back). Serve's HTTP proxy stays at its own
port, forwarding to the ingress wherever it listens: the address that does not move."""

from __future__ import annotations

import time
from typing import Any

from searchengine.server.listener import http_url

PORTS = 1000
"""How many ports the ingress's range holds, from its first (as many as Serve's own default range, 30000 to 31000)."""
FIRST_PORT = 30000
"""Serve's default first port for an ingress; Ray's workers take 10002 to 19999 by default, so the two never meet."""
_ENABLED = "RAY_SERVE_ENABLE_DIRECT_INGRESS"


def replica_env() -> dict[str, str]:
    """The ingress replica's environment: listen on a port of its own, and stop at once when Serve stops it (no
    minimum draining period for an outside load balancer to forget it: in-flight requests are still waited for)."""
    return {_ENABLED: "1", "RAY_SERVE_DIRECT_INGRESS_MIN_DRAINING_PERIOD_S": "0"}


def controller_env(first_port: int) -> dict[str, str]:
    """The Serve controller's environment: direct ingress on, the ingress's HTTP ports from `first_port` on."""
    return {
        **replica_env(),
        "RAY_SERVE_DIRECT_INGRESS_MIN_HTTP_PORT": str(first_port),
        "RAY_SERVE_DIRECT_INGRESS_MAX_HTTP_PORT": str(first_port + PORTS),
    }


def ingress_address(app_name: str, timeout_s: float = 30.0) -> str | None:
    """http://HOST:PORT of the ingress of `app_name` itself, once Serve lists it (`listed_ingress`). None when Serve
    runs without direct ingress (a controller started earlier without it, whose only targets are its proxies) or
    lists no replica of the ingress within `timeout_s`."""
    from ray.serve.context import _get_global_client

    deadline = time.monotonic() + timeout_s
    while True:
        settled, url = listed_ingress(_get_global_client().get_serve_details(), app_name)
        if settled or time.monotonic() > deadline:
            return url
        time.sleep(0.1)


def listed_ingress(details: dict[str, Any], app_name: str) -> tuple[bool, str | None]:
    """From Serve's instance details (the HTTP target groups a load balancer in front of Serve reads): whether the
    answer is settled, and the address of the ingress of `app_name` itself, HOST as Serve was told to listen, or the
    node's address where that is every interface. Settled with None where Serve runs without direct ingress (its
    only targets are its proxies, under no application). Not settled while no replica of the ingress listens: Serve
    then lists its proxies under the application instead (while the ingress starts again after a crash), which are
    not the ingress's own address."""
    from ray.serve._private.common import ReplicaID

    groups = details.get("target_groups") or []
    if groups and all(group.get("app_name") == "" for group in groups):
        return True, None  # only proxies: Serve's controller runs without direct ingress
    targets = [
        target
        for group in groups
        if group.get("protocol") == "HTTP" and group.get("app_name") == app_name
        for target in group.get("targets", [])
        if ReplicaID.is_full_id_str(target.get("name", ""))
    ]
    if not targets:
        return False, None
    host = (details.get("http_options") or {}).get("host") or targets[0]["ip"]
    return True, http_url(host, targets[0]["port"], every_interface_as=targets[0]["ip"])
