"""The cluster manifest (written whole, read back, refused when missing or of another format) and routing by a
stable hash (the same shard in every process, ids that name their shard)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from searchengine.cluster.errors import ClusterError
from searchengine.cluster.manifest import (
    ClusterManifest,
    CopyPlace,
    copy_folder,
    of_build,
    read_manifest,
    write_manifest,
)
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


def test_a_damaged_manifest_is_one_cluster_error_naming_what_is_wrong_and_opens_nothing(tmp_path: Path) -> None:
    from searchengine.cluster.cluster_index import ClusterIndex

    path = tmp_path / "cluster.json"
    data = _manifest().to_json()
    for text, said in [
        (b"\xff\xfe", "cannot be read ('utf-8' codec"),
        (b"null", "the manifest should be a JSON object, not null"),
        (
            json.dumps({**data, "shards": 2}).encode(),
            "key 'placement' lists 1 shards; it should list the copies of each",
        ),
        (json.dumps({**data, "placement": [[]]}).encode(), "key 'placement.0' should list at least one copy"),
        (json.dumps({**data, "placement": [[{"node": 1, "folder": "/r"}]]}).encode(), "'placement.0.0.node' should"),
        (json.dumps({**data, "version": None}).encode(), "key 'version' is null"),
        (
            json.dumps({**data, "placement": [[{"node": "a", "folder": "/r/a/../b/x/shard-0"}]]}).encode(),
            "key 'placement.0.0.folder' should be a folder under /r/a, node a's folder of local_root",
        ),
    ]:
        path.write_bytes(text)
        with pytest.raises(ClusterError, match=re.escape(said)):  # before Ray is asked anything: none runs here
            ClusterIndex.open(path)
    with pytest.raises(ClusterError, match="is a folder, not a cluster manifest"):
        read_manifest(tmp_path)
    with pytest.raises(ClusterError, match="no cluster index at"):
        read_manifest(path / "cluster.json")  # under a file


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


def test_a_folder_is_of_a_build_only_under_its_local_root_name_and_build() -> None:
    manifest = _manifest()
    assert of_build(manifest, copy_folder("/r", "c", "x", "build1", 3)) and of_build(manifest, "/r/./a/x/build1/s-0/")
    others = [
        copy_folder("/r", "c", "x", "build2", 3),  # another build of the cluster index
        copy_folder("/r", "c", "y", "build1", 3),  # another cluster index
        copy_folder("/elsewhere", "c", "x", "build1", 3),  # another local root
        "/r/c/x/build1",  # the build's folder itself
        "/r/c/x/build1/shard-0/inner",
        "",
    ]
    assert not any(of_build(manifest, folder) for folder in others)
