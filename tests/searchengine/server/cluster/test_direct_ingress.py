"""Where the cluster's ingress listens itself, read from Serve's instance details as Ray Serve's own models write
them (direct_ingress.listed_ingress): the ingress's replica, never a proxy standing in for it; an IPv6 host in
brackets."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("ray.serve")

from ray.serve._private.common import ReplicaID, RequestProtocol  # noqa: E402
from ray.serve.schema import Target, TargetGroup  # noqa: E402

from searchengine.server.cluster.direct_ingress import listed_ingress  # noqa: E402
from searchengine.server.listener import http_url  # noqa: E402

APP = "searchengine"
PROXY = Target(ip="10.0.0.1", port=8000, instance_id="", name="SERVE_PROXY_ACTOR-0a1b")
REPLICA = Target(ip="10.0.0.2", port=30001, instance_id="", name="SERVE_REPLICA::searchengine#ingress#x1y2")


def _details(host: str, *groups: tuple[str, Target]) -> dict[str, Any]:
    """Serve's instance details as get_serve_details gives them: the HTTP options and the target groups."""
    listed = [
        TargetGroup(targets=[target], route_prefix="/", protocol=RequestProtocol.HTTP, app_name=app).model_dump()
        for app, target in groups
    ]
    return {"http_options": {"host": host, "port": 8000}, "target_groups": listed}


def test_the_ingress_replica_is_listed_not_a_proxy_standing_in_for_it() -> None:
    assert ReplicaID.is_full_id_str(REPLICA.name) and not ReplicaID.is_full_id_str(PROXY.name)
    assert listed_ingress(_details("127.0.0.1", (APP, REPLICA)), APP) == (True, "http://127.0.0.1:30001")
    assert listed_ingress(_details("0.0.0.0", (APP, REPLICA)), APP) == (True, "http://10.0.0.2:30001")
    # no replica of the ingress runs (it starts again after a crash): Serve lists its proxy under the application
    assert listed_ingress(_details("0.0.0.0", (APP, PROXY)), APP) == (False, None)
    assert listed_ingress(_details("0.0.0.0", ("other", REPLICA)), APP) == (False, None)
    assert listed_ingress({"http_options": {"host": "0.0.0.0"}}, APP) == (False, None)
    # Serve without direct ingress: only its proxies, under no application
    assert listed_ingress(_details("0.0.0.0", ("", PROXY)), APP) == (True, None)


def test_an_ipv6_host_is_written_in_brackets() -> None:
    assert listed_ingress(_details("::1", (APP, REPLICA)), APP) == (True, "http://[::1]:30001")
    ipv6 = Target(ip="fd00::2", port=30002, instance_id="", name=REPLICA.name)
    assert listed_ingress(_details("::", (APP, ipv6)), APP) == (True, "http://[fd00::2]:30002")
    assert http_url("127.0.0.1", 8000) == "http://127.0.0.1:8000"
