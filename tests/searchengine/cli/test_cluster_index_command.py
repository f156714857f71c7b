"""`searchengine cluster-index`: without a reachable Ray cluster, one line and exit code 1 (the commands against a
running cluster are tested in tests/searchengine/server/cluster/test_ray_serve.py)."""

from __future__ import annotations

import socket
from pathlib import Path

from typer.testing import CliRunner

from searchengine.cli import app


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_no_ray_cluster_at_the_address_is_one_line(tmp_path: Path) -> None:
    for command in ("status", "serve"):
        address = f"127.0.0.1:{closed_port()}"
        result = CliRunner().invoke(app, ["cluster-index", command, str(tmp_path / "cluster.json"), "--address", address])
        assert result.exit_code == 1, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"Error: no Ray cluster is reachable at {address}"), lines
        assert "ray start --head" in lines[0]


def test_the_group_says_what_it_offers() -> None:
    result = CliRunner().invoke(app, ["cluster-index", "--help"])
    assert result.exit_code == 0 and "status" in result.output and "serve" in result.output
