"""`searchengine cluster-index`: without a reachable Ray cluster, or with a bad setting or corpus, one line and exit
code 1 (the commands against a running cluster are tested in tests/searchengine/server/cluster/test_ray_serve.py
and, for build, test_cluster_build_command.py)."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchengine.cli import app
from searchengine.cluster.manifest import ClusterManifest, CopyPlace, write_manifest


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def manifest(tmp_path: Path) -> Path:
    """A readable manifest of a cluster of two shards, one copy each (never built: only its file is read)."""
    placement = tuple((CopyPlace(node, f"/r/{node}/x/b/shard-{shard}"),) for shard, node in enumerate("ab"))
    path = tmp_path / "cluster.json"
    write_manifest(path, ClusterManifest("x", 2, 1, "/r", "model", "b", placement, {}, {"index_type": "Flat"}))
    return path


def test_no_ray_cluster_at_the_address_is_one_line(tmp_path: Path) -> None:
    for command in ("status", "serve", "stop"):
        address = f"127.0.0.1:{closed_port()}"
        result = CliRunner().invoke(app, ["cluster-index", command, str(manifest(tmp_path)), "--address", address])
        assert result.exit_code == 1, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"Error: no Ray cluster is reachable at {address}"), lines
        assert "ray start --head" in lines[0]


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda data: json.dumps(data)[:40], "cannot be read (Expecting"),
        (lambda data: "[]", "the manifest should be a JSON object, not []"),
        (lambda data: json.dumps({**data, "shards": 3}), "key 'placement' lists 2 shards"),
        (lambda data: json.dumps({**data, "placement": data["placement"][:1]}), "key 'placement' lists 1 shards"),
        (lambda data: json.dumps({**data, "shards": "2"}), "key 'shards' should be a whole number"),
        (lambda data: json.dumps({**data, "placement": [[{"node": "a"}], []]}), "key 'placement.0.0.folder' is"),
        (lambda data: json.dumps({**data, "format": 2}), "written by a newer searchengine; upgrade"),
    ],
)
def test_status_and_serve_of_a_damaged_manifest_are_one_line_before_ray_is_asked(
    tmp_path: Path, damage: Callable[[dict], str], said: str
) -> None:
    path = manifest(tmp_path)
    path.write_text(damage(json.loads(path.read_text())))
    for command in ("status", "serve"):  # the address would fail otherwise: no Ray cluster is asked
        result = CliRunner().invoke(
            app, ["cluster-index", command, str(path), "--address", f"127.0.0.1:{closed_port()}"]
        )
        assert result.exit_code == 1, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: ") and said in lines[0], lines
    for folder in (tmp_path, path / "inside"):  # a folder, a path under a file: one line, not an OSError's traceback
        result = CliRunner().invoke(app, ["cluster-index", "status", str(folder), "--address", "127.0.0.1:1"])
        assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1, result.output


def build(tmp_path: Path, corpus: Path, *options: str) -> list[str]:
    """The lines a refused `cluster-index build` prints (checked: exit code 1)."""
    command = ["cluster-index", "build", str(corpus), str(tmp_path / "cluster.json"), "--local-root", str(tmp_path)]
    result = CliRunner().invoke(app, [*command, *options])
    assert result.exit_code == 1, result.output
    assert not (tmp_path / "cluster.json").exists()
    return result.output.strip().splitlines()


def test_build_refuses_in_one_line_before_asking_ray(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("one text\nanother text\n")
    address = f"127.0.0.1:{closed_port()}"
    lines = build(tmp_path, corpus, "--shards", "2", "--address", address)
    assert len(lines) == 1 and lines[0].startswith(f"Error: no Ray cluster is reachable at {address}"), lines
    for shards in ("0", "-3"):  # no Ray cluster is asked: the address would fail otherwise
        lines = build(tmp_path, corpus, "--shards", shards, "--address", address)
        assert lines == [f"Error: shards must be a whole number of at least 1, not {shards}"]
    lines = build(tmp_path, corpus, "--shards", "2", "--copies", "0", "--address", address)
    assert lines == ["Error: copies must be a whole number of at least 1, not 0"]
    corpus.write_text("\n\n")
    assert build(tmp_path, corpus, "--shards", "2", "--address", address) == [
        f"Error: {corpus} holds no documents; give a corpus with at least one non-blank line"
    ]
    records = tmp_path / "corpus.jsonl"
    records.write_text('{"id": "a", "text": "one"}\n{"text": "two"}\n')
    lines = build(tmp_path, records, "--shards", "2", "--id-field", "id", "--address", address)
    assert lines == [f'Error: {records} line 2 needs a string or integer "id" field (the id)'], lines


def test_build_refuses_a_manifest_path_it_cannot_write_before_asking_ray(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("one text\nanother text\n")
    (tmp_path / "file").write_text("not a folder")
    address = f"127.0.0.1:{closed_port()}"  # no Ray cluster is asked: the address would fail otherwise
    for target, said in [
        (tmp_path, f"Error: {tmp_path} is a folder: give the manifest a file's path"),
        (tmp_path / "file" / "deeper" / "cluster.json", f"Error: {tmp_path / 'file'} is a file, so the manifest"),
    ]:
        command = ["cluster-index", "build", str(corpus), str(target), "--shards", "2", "--local-root", str(tmp_path)]
        result = CliRunner().invoke(app, [*command, "--address", address])
        assert result.exit_code == 1, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(said), lines


def test_the_group_says_what_it_offers() -> None:
    result = CliRunner().invoke(app, ["cluster-index", "--help"])
    assert result.exit_code == 0 and all(name in result.output for name in ("build", "status", "serve", "stop"))


def test_builds_help_teaches_by_an_example() -> None:
    result = CliRunner().invoke(app, ["cluster-index", "build", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "searchengine cluster-index build corpus.jsonl cluster.json --shards 4" in result.output
    assert "NAME#LINE" in result.output  # how a document without an id of its own gets one


def test_build_refuses_a_name_that_is_not_one_folder_name_before_asking_ray(tmp_path: Path) -> None:
    """The name is a folder of every node's local root: "../other" or "/home/me" put the copies' folders (which a
    failed build removes) outside it; such a build failed in Ray with the copy's traceback, after starting copies."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("one text\nanother text\n")
    address = f"127.0.0.1:{closed_port()}"
    for name in ("../other", "/home/me", "a/b", "..", ".", "a\\b"):
        lines = build(tmp_path, corpus, "--shards", "2", "--name", name, "--address", address)
        assert lines == [
            f"Error: name must be one plain folder name (its copies' folders are LOCAL_ROOT/NODE/NAME/...), not "
            f"{name!r}: give a name without /, \\ or .., e.g. 'products'"
        ], lines
