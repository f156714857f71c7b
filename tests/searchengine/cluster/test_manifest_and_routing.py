"""The cluster manifest (written whole, read back, refused when missing or of another format) and routing by a
stable hash (the same shard in every process, ids that name their shard)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from searchengine.cluster.errors import ClusterError
from searchengine.cluster.manifest import ClusterManifest, CopyPlace, read_manifest, write_manifest
from searchengine.cluster.routing import global_id, shard_of, shard_of_id


def _manifest() -> ClusterManifest:
    placement = ((CopyPlace("a", "/r/a/x/shard-0"), CopyPlace("b", "/r/b/x/shard-0")),)
    return ClusterManifest("x", 1, 2, "/r", "model", "build1", placement, {"precision": "fp32"}, {"index_type": "Flat"})


def test_manifest_round_trip_and_versions(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"
    manifest = _manifest()
    write_manifest(path, manifest)
    assert read_manifest(path) == manifest
    moved = manifest.with_placement(((CopyPlace("c", "/r/c/x/shard-0"),),))
    write_manifest(path, moved)
    assert read_manifest(path).version == manifest.version + 1
    assert [p.name for p in tmp_path.iterdir()] == ["cluster.json"]  # no temporary file left


def test_missing_or_foreign_manifest_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match="no cluster index"):
        read_manifest(tmp_path / "none.json")
    (tmp_path / "old.json").write_text(json.dumps({**_manifest().to_json(), "format": 99}), encoding="utf-8")
    with pytest.raises(ClusterError, match="format 99"):
        read_manifest(tmp_path / "old.json")


def test_routing_is_the_same_in_another_process() -> None:
    ids = [f"doc-{i}" for i in range(50)]
    here = [shard_of(i, 4) for i in ids]
    code = f"from searchengine.cluster.routing import shard_of; print([shard_of(i, 4) for i in {ids!r}])"
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(there) == here
    assert set(here) == {0, 1, 2, 3}


def test_cluster_ids_name_their_shard() -> None:
    for shard in range(3):
        for local in (0, 1, 17):
            assert shard_of_id(global_id(local, shard, 3), 3) == (shard, local)
