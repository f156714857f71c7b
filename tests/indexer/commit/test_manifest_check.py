"""`verify` compares the manifest with what the store and the segments say (issue 43, hostile finding 4): an index
type, metric, model or dimension edited by hand is one FAILED line naming the field and both values."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.manifest_check import BUILT_AS

from tests.indexer.small_index import build_small_index


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_small_index(tmp_path_factory.mktemp("built") / "index", 30).path


def _edited(built: Path, tmp_path: Path, section: str, key: str, value: object) -> IndexDirectory:
    copy = tmp_path / "index"
    shutil.copytree(built, copy)
    manifest = json.loads((copy / "manifest.json").read_text(encoding="utf-8"))
    manifest[section][key] = value
    (copy / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return IndexDirectory(copy)


def _manifest_problem(directory: IndexDirectory) -> str | None:
    (check,) = [check for check in directory.verify() if check.role == "manifest"]
    return check.problem


def test_an_unedited_manifest_agrees_with_the_store(built: Path) -> None:
    checks = IndexDirectory(built).verify()
    assert [check.problem for check in checks if check.problem] == []
    (manifest,) = [check for check in checks if check.role == "manifest"]
    assert "agree with the store's record of the build" in manifest.checked


@pytest.mark.parametrize(
    ("section", "key", "value", "said"),
    [
        ("index", "type", "HNSW32", "the manifest says index type 'HNSW32', the store recorded 'Flat'"),
        ("index", "type", "IVF99999,PQ7", "the manifest says index type 'IVF99999,PQ7', the store recorded 'Flat'"),
        ("index", "metric", "l2", "the manifest says metric 'l2', but every index compares by 'inner_product'"),
        ("model", "name", "/etc", "the manifest says model name '/etc', the store recorded 'tiny'"),
        ("model", "spec", "/etc", "the manifest says model spec '/etc', the store recorded 'default'"),
        ("model", "dimension", 384, "the manifest says dimension 8, but its model's dimension is 384"),
        ("model", "pooling", "cls", "the manifest says pooling 'cls', the store recorded 'mean'"),
    ],
)
def test_an_edited_manifest_fails_verify_naming_the_field(
    built: Path, tmp_path: Path, section: str, key: str, value: object, said: str
) -> None:
    problem = _manifest_problem(_edited(built, tmp_path, section, key, value))
    assert problem is not None and said in problem, problem
    assert problem.endswith("the manifest was edited or damaged; restore it or rebuild the index")


def test_an_index_built_before_the_record_is_checked_against_its_segments(built: Path, tmp_path: Path) -> None:
    directory = _edited(built, tmp_path, "index", "type", "Flat")  # unedited, in a copy
    store = directory.path / directory.read_settings().files["documents"].name
    with sqlite3.connect(store) as connection:
        connection.execute("DELETE FROM build_settings WHERE key = ?", [BUILT_AS])
        connection.execute("UPDATE segments SET factory = 'HNSW32'")  # as a build of a large HNSW index records
    (check,) = [check for check in directory.verify() if check.role == "manifest"]
    assert "the manifest says index type 'Flat', but the segments are of type HNSW32" in check.problem
    assert "no record of the build" in check.checked
