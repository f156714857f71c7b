"""`searchengine cluster-index build` on a simulated three-node Ray cluster (ray.cluster_utils.Cluster, the fixture of
tests/searchengine/cluster/conftest.py): a folder of two corpus files built from the command line equals the same
documents built from Python with build_cluster, in its report, in `cluster-index status` and in search in every
mode; the ids the command gives documents without their own are NAME#LINE, as its help says; and a build from
standard input prints its report."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from searchengine.indexer.query.filter_sql import Condition
from searchengine.indexer.tables.documents import Document
from typer.testing import CliRunner

from searchengine.cli import app
from tests.conftest import WORDS
from tests.searchengine.cluster.conftest import ray_cluster  # noqa: F401 (the simulated cluster, a fixture)

ray = pytest.importorskip("ray")

SHARDS = 3
QUERIES = ["the cat sat on the mat", "stock market price fell", "rain and snow in the cold city"]


def write_corpus(folder: Path) -> list[Document]:
    """Two .txt corpus files of 20 lines each (a blank line in each), and their documents as Python would give
    them to build_cluster: the ids the command's help promises."""
    folder.mkdir()
    documents = []
    for file, offset in (("part-a.txt", 0), ("part-b.txt", 5)):
        lines = [
            " ".join(WORDS[(offset + line * 7 + word * 3) % len(WORDS)] for word in range(3 + line % 9))
            for line in range(20)
        ]
        lines[4] = ""
        (folder / file).write_text("\n".join(lines) + "\n")
        documents += [Document(text, external_id=f"{file}#{line + 1}") for line, text in enumerate(lines) if text]
    return documents


def kill_copies(index: Any) -> None:  # noqa: ANN401 (a ClusterIndex)
    for states in index.copies:
        for state in states:
            if state.handle is not None:
                ray.kill(state.handle)


@pytest.fixture(scope="module")
def builds(ray_cluster: Any, tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:  # noqa: ANN401, F811
    """The same 38 documents built by the command (cli.json) and by build_cluster (python.json), 3 shards x 2 copies."""
    from searchengine.cluster import ClusterBuildSettings, build_cluster

    folder = tmp_path_factory.mktemp("builds")
    documents = write_corpus(folder / "corpus")
    command = ["cluster-index", "build", str(folder / "corpus"), str(folder / "cli.json"), "--shards", str(SHARDS)]
    options = [
        "--copies",
        "2",
        "--local-root",
        str(folder / "nodes"),
        "--model",
        str(tiny_model),
        "--precision",
        "fp32",
    ]
    result = CliRunner().invoke(app, [*command, *options, "--json"])
    assert result.exit_code == 0, result.output
    settings = ClusterBuildSettings(
        shards=SHARDS,
        copies=2,
        model=str(tiny_model),
        local_root=str(folder / "nodes"),
        encoder_options={"precision": "fp32"},
    )
    index, report = build_cluster(folder / "python.json", documents, settings)
    return {
        "folder": folder,
        "cli": json.loads(result.output),
        "python": index,
        "report": report,
        "model": str(tiny_model),
    }


def test_the_command_reports_what_build_cluster_reports(builds: dict) -> None:
    printed, report = builds["cli"], builds["report"]
    assert (printed["shards"], printed["copies"], printed["documents"]) == (SHARDS, 2, 38)
    assert printed["shard_documents"] == report.shard_documents and sum(report.shard_documents) == 38
    assert all(count > 0 for count in report.shard_documents)
    assert printed["driver_rows_written"] == 0 and printed["seconds"] > 0


def test_status_of_the_commands_build_equals_the_python_builds(builds: dict) -> None:
    result = CliRunner().invoke(app, ["cluster-index", "status", str(builds["folder"] / "cli.json"), "--json"])
    assert result.exit_code == 0, result.output
    found, expected = json.loads(result.output), builds["python"].status()
    assert found["name"] == "cli" and found["documents"] == expected["documents"] == 38
    assert [shard["documents"] for shard in found["shards"]] == [shard["documents"] for shard in expected["shards"]]
    for shard in found["shards"]:
        assert len(shard["copies"]) == 2 and all(copy["serving"] and copy["lag"] == 0 for copy in shard["copies"])
        assert len({copy["node"] for copy in shard["copies"]}) == 2


def test_search_of_the_commands_build_equals_the_python_builds(builds: dict) -> None:
    from searchengine.cluster import ClusterIndex

    built = ClusterIndex.open(builds["folder"] / "cli.json")
    try:
        for mode in ("dense", "keyword", "hybrid"):
            mine = built.search_batch(QUERIES, 10, mode=mode)
            theirs = builds["python"].search_batch(QUERIES, 10, mode=mode)
            assert (mine.answered, mine.partial) == (SHARDS, False)
            for ours, reference in zip(mine.hits, theirs.hits, strict=True):
                assert [hit.external_id for hit in ours] == [hit.external_id for hit in reference], mode
                assert [hit.score for hit in ours] == pytest.approx([hit.score for hit in reference], abs=1e-5)
        wanted = ("part-a.txt#1", "part-b.txt#20")  # the ids the help promises, looked up
        looked_up, _ = built.documents([Condition("external_id", "in", wanted)])
        assert sorted(document.external_id for document in looked_up) == list(wanted)
    finally:
        kill_copies(built)
        kill_copies(builds["python"])


def test_a_build_from_standard_input_prints_its_report(builds: dict) -> None:
    folder = builds["folder"]
    command = ["cluster-index", "build", "-", str(folder / "stdin.json"), "--shards", "2", "--local-root"]
    text = (folder / "corpus" / "part-a.txt").read_text()
    result = CliRunner().invoke(app, [*command, str(folder / "nodes"), "--model", builds["model"]], input=text)
    assert result.exit_code == 0, result.output
    report = re.fullmatch(
        rf"Built {re.escape(str(folder / 'stdin.json'))}: 19 documents in 2 shards x 1 copies in [\d.]+ s; documents "
        r"per shard: (\d+), (\d+); rows written by this machine: 0\.\nServe it with `searchengine cluster-index serve "
        r".*stdin\.json`\.",
        result.output.strip(),
    )
    assert report is not None, result.output
    assert int(report[1]) + int(report[2]) == 19


def test_a_build_that_fails_inside_ray_is_one_line(builds: dict) -> None:
    """Each copy's build fails on its node (its --local-root is a file there, not a folder): Ray raises the copy's
    error with its traceback, the command says it in one line, and no manifest is written."""
    folder = builds["folder"]
    blocked = folder / "a-file"
    blocked.write_text("not a folder\n")
    command = ["cluster-index", "build", str(folder / "corpus"), str(folder / "failed.json"), "--shards", "2"]
    result = CliRunner().invoke(app, [*command, "--local-root", str(blocked), "--model", builds["model"]])
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: the cluster build failed in Ray ("), (lines, result.exception)
    assert "cannot make the index directory" in lines[0] and "nothing was committed" in lines[0]
    assert not (folder / "failed.json").exists()
