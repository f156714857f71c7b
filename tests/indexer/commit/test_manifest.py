"""The typed manifest: manifests written before it was typed still read, and every damaged key is one clear error."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from searchengine.indexer.commit.manifest import (
    Counts,
    Manifest,
    ModelIdentity,
    PassageSplitting,
    PromptRecord,
    StoredFile,
    VectorIndexSpec,
    WhiteningFit,
    named_files,
    vector_roles,
)
from searchengine.indexer.errors import IndexerError

WRITTEN_BEFORE_TYPING = {
    "format_version": 1,
    "model": {
        "name": "tiny",
        "spec": "/tmp/manifest-bench/tiny",
        "fingerprint": "62fb9f72e7d706df",
        "pooling": "prompt",
        "normalize": True,
        "dimension": 32,
        "max_seq_length": 64,
        "prompt": {"template": 'This sentence : "[X]" means [MASK] .', "denoise": False},
    },
    "whitening": {"k": 8, "fit_count": 12},
    "index": {"type": "HNSW8", "metric": "inner_product", "dimension": 8},
    "count": {"vectors": 11, "documents": 11, "tombstones": 1},
    "created_at": "2026-11-23T14:05:46+0000",
    "updated_at": "2026-11-23T14:05:46+0000",
    "versions": {"searchengine": "0.1.0", "faiss": "1.15.1", "torch": "2.13.0+cpu", "transformers": "5.23.0"},
    "files": {
        "vectors": "vectors.1795442746216365347.faiss",
        "documents": "documents.1795442746216365347.db",
        "whitening": "whitening.1795442745835659202.safetensors",
    },
    "sizes": {"vectors": 1807, "documents": 28672, "whitening": 1328},
}
"""manifest.json exactly as the code before the typed manifest (commit 71e681a) wrote it for a prompt-pooled,
whitened HNSW index with one deleted text."""

FIRST_RELEASE = {
    "format_version": 1,
    "model": {
        "name": "sentence-transformers/all-MiniLM-L6-v2",
        "spec": "default",
        "fingerprint": "e865f892767f5832",
        "pooling": "mean",
        "normalize": True,
        "dimension": 384,
        "max_seq_length": 256,
    },
    "whitening": None,
    "index": {"type": "Flat", "metric": "inner_product", "dimension": 384},
    "count": {"vectors": 1000, "documents": 1000},
    "created_at": "2026-11-23T14:00:38+0000",
    "updated_at": "2026-11-23T14:00:38+0000",
    "versions": {"searchengine": "0.1.0", "faiss": "1.15.1", "torch": "2.13.0+cpu", "transformers": "5.23.0"},
    "files": {"vectors": "vectors.1.faiss", "documents": "documents.1.db"},
    "sizes": {"vectors": 1544090, "documents": 253952},
}
"""The shape format 1 had at first (commit 200040f): no count.tombstones, no model.prompt or model.transforms."""

PATH = Path("/indexes/docs/manifest.json")


def _parse(data: object) -> Manifest:
    return Manifest.from_json(json.dumps(data), PATH)


def test_a_manifest_written_before_typing_reads_into_records() -> None:
    manifest = _parse(WRITTEN_BEFORE_TYPING)
    assert manifest.model == ModelIdentity(
        name="tiny",
        spec="/tmp/manifest-bench/tiny",
        fingerprint="62fb9f72e7d706df",
        pooling="prompt",
        normalize=True,
        dimension=32,
        max_seq_length=64,
        prompt=PromptRecord('This sentence : "[X]" means [MASK] .', False),
    )
    assert manifest.whitening == WhiteningFit(k=8, fit_count=12)
    assert manifest.index == VectorIndexSpec(type="HNSW8", metric="inner_product", dimension=8)
    assert manifest.count == Counts(vectors=11, documents=11, tombstones=1)
    assert manifest.files["whitening"] == StoredFile("whitening.1795442745835659202.safetensors", 1328)
    assert manifest.size_on_disk == 1807 + 28672 + 1328
    assert manifest.versions["faiss"] == "1.15.1"
    assert manifest.format_version == 1


def test_it_is_written_back_as_the_same_json() -> None:
    manifest = _parse(WRITTEN_BEFORE_TYPING)
    assert manifest.as_json_dict() == WRITTEN_BEFORE_TYPING
    assert list(manifest.as_json_dict()) == list(WRITTEN_BEFORE_TYPING)  # the same key order on disk
    assert Manifest.from_json(manifest.to_json(), PATH) == manifest


def test_whitening_and_its_file_go_together() -> None:
    whitened = _without(FIRST_RELEASE, "whitening", {"k": 8, "fit_count": 12})
    whitened = _without(_without(whitened, "files.whitening", "w.1.safetensors"), "sizes.whitening", 10)
    assert _parse(whitened).whitening == WhiteningFit(8, 12)
    assert "key 'whitening' and files.whitening disagree" in _one_line_error(_without(whitened, "whitening", None))


def test_the_first_format_1_shape_still_reads() -> None:
    manifest = _parse(FIRST_RELEASE)
    assert manifest.count.tombstones == 0
    assert manifest.model.prompt is None and manifest.model.transforms == ()
    assert manifest.whitening is None
    assert manifest.as_json_dict() == {**FIRST_RELEASE, "count": {"vectors": 1000, "documents": 1000, "tombstones": 0}}


def test_model_transforms_are_kept() -> None:
    data = copy.deepcopy(FIRST_RELEASE)
    data["model"]["transforms"] = ["Dense (2_Dense)", "Flow (3_Flow)"]
    manifest = _parse(data)
    assert manifest.model.transforms == ("Dense (2_Dense)", "Flow (3_Flow)")
    assert manifest.as_json_dict()["model"]["transforms"] == ["Dense (2_Dense)", "Flow (3_Flow)"]


def test_passage_splitting_is_kept_and_absent_means_none() -> None:
    assert _parse(FIRST_RELEASE).passages is None
    data = {**FIRST_RELEASE, "passages": {"tokens": 254, "overlap": 32}}
    manifest = _parse(data)
    assert manifest.passages == PassageSplitting(tokens=254, overlap=32)
    assert manifest.as_json_dict()["passages"] == {"tokens": 254, "overlap": 32}
    assert Manifest.from_json(manifest.to_json(), PATH) == manifest
    assert _parse({**FIRST_RELEASE, "passages": None}).passages is None


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (32, "key 'passages' should be a JSON object"),
        ({"tokens": 0, "overlap": 0}, "key 'passages.tokens' should be at least 1"),
        ({"tokens": 254, "overlap": "32"}, "key 'passages.overlap' should be a whole number"),
        ({"tokens": 254}, "key 'passages.overlap' is missing"),
    ],
)
def test_a_damaged_passage_splitting_is_named(value: object, problem: str) -> None:
    assert problem in _one_line_error({**FIRST_RELEASE, "passages": value})


def _required_keys(data: dict, prefix: str = "") -> list[str]:
    """Every dotted key of WRITTEN_BEFORE_TYPING a manifest cannot do without (inside optional objects too)."""
    optional = {"whitening", "model.prompt", "count.tombstones", "files.whitening", "sizes.whitening"}
    keys = []
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if dotted not in optional:
            keys.append(dotted)
        if isinstance(value, dict) and dotted != "versions":  # which libraries a version is recorded for is open
            keys.extend(_required_keys(value, f"{dotted}."))
    return keys


def _without(data: dict, dotted: str, replacement: object = ...) -> dict:
    """A copy of `data` with the dotted key removed (or set to `replacement`)."""
    changed = copy.deepcopy(data)
    *parents, last = dotted.split(".")
    target = changed
    for parent in parents:
        target = target[parent]
    if replacement is ...:
        del target[last]
    else:
        target[last] = replacement
    return changed


def _one_line_error(data: object) -> str:
    with pytest.raises(IndexerError) as error:
        _parse(data)
    message = str(error.value)
    assert "\n" not in message and str(PATH) in message and "rebuild" in message, message
    return message


@pytest.mark.parametrize("key", [key for key in _required_keys(WRITTEN_BEFORE_TYPING) if key != "format_version"])
def test_a_missing_key_is_named(key: str) -> None:
    assert f"key '{key}' is missing" in _one_line_error(_without(WRITTEN_BEFORE_TYPING, key))


@pytest.mark.parametrize("key", [key for key in _required_keys(WRITTEN_BEFORE_TYPING) if key != "format_version"])
def test_a_null_is_named(key: str) -> None:
    assert f"key '{key}' is null" in _one_line_error(_without(WRITTEN_BEFORE_TYPING, key, None))


@pytest.mark.parametrize("version", [3, 99])
def test_a_newer_format_version_says_so(version: object) -> None:
    with pytest.raises(IndexerError) as error:
        _parse(_without(WRITTEN_BEFORE_TYPING, "format_version", version))
    assert str(error.value) == (
        f"{PATH.parent} uses index format {version!r}, this searchengine reads formats 1, 2: it was written by a "
        "newer searchengine; upgrade searchengine (pip install -U searchengine), or rebuild the index with this "
        "version"
    )


@pytest.mark.parametrize("version", [0, -1, "1", "2", True, 1.0, 2.5])
def test_a_format_version_no_searchengine_writes_is_corrupt_not_newer(version: object) -> None:
    """A format below the first, or not a whole number, was never written by any searchengine: the manifest was
    damaged, and upgrading would not help."""
    message = _one_line_error(_without(WRITTEN_BEFORE_TYPING, "format_version", version))
    assert f"key 'format_version' should be one of the format numbers 1, 2 (it is {json.dumps(version)})" in message
    assert "newer" not in message


def test_a_null_format_version_is_corrupt() -> None:
    assert "key 'format_version' is null" in _one_line_error(_without(WRITTEN_BEFORE_TYPING, "format_version", None))


def test_no_format_version_is_corrupt() -> None:
    assert "key 'format_version' is missing" in _one_line_error(_without(WRITTEN_BEFORE_TYPING, "format_version"))


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("count.vectors", "11", "should be a whole number"),
        ("count.vectors", True, "should be a whole number"),
        ("count.vectors", 1.5, "should be a whole number"),
        ("count.documents", -1, "should be at least 0"),
        ("count.tombstones", "1", "should be a whole number"),
        ("index.dimension", 0, "should be at least 1"),
        ("model.normalize", 1, "should be true or false"),
        ("model.name", 7, "should be a string"),
        ("model.prompt", "a template", "should be a JSON object"),
        ("model.prompt.denoise", "no", "should be true or false"),
        ("model.transforms", "Dense", "should be a list of strings"),
        ("model.transforms", [1], "should be a list of strings"),
        ("whitening", [8], "should be a JSON object"),
        ("whitening.k", 0, "should be at least 1"),
        ("versions.faiss", 1.15, "should be a string"),
        ("files.vectors", ["v"], "should be a file name"),
        ("files.vectors", "../elsewhere.faiss", "should be a file name in the index directory"),
        ("files.notes", "notes.txt", "is not a file an index has"),
        ("sizes.documents", "28672", "should be a size in bytes"),
        ("sizes.whitening", ..., "key 'sizes.whitening' is missing"),
        ("files.documents", ..., "key 'files.documents' is missing"),
        ("files.whitening", ..., "key 'whitening' and files.whitening disagree"),
    ],
)
def test_a_value_of_the_wrong_kind_is_named(key: str, value: object, problem: str) -> None:
    message = _one_line_error(_without(WRITTEN_BEFORE_TYPING, key, value))
    assert problem in message
    assert key in message


@pytest.mark.parametrize("text", ["{not json", "", "[1, 2]", "null", '"text"'])
def test_text_that_is_no_json_object_is_corrupt(text: str) -> None:
    with pytest.raises(IndexerError, match="corrupt") as error:
        Manifest.from_json(text, PATH)
    assert "\n" not in str(error.value)


def test_read_names_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_bytes(b'{"format_version": 1, \xff}')
    with pytest.raises(IndexerError, match="not UTF-8"):
        Manifest.read(path)


def test_named_files_needs_only_the_files(tmp_path: Path) -> None:
    """A writer rebuilding over a damaged manifest still learns which files it must keep until its commit."""
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(_without(WRITTEN_BEFORE_TYPING, "model", None)), encoding="utf-8")
    assert named_files(path) == set(WRITTEN_BEFORE_TYPING["files"].values())
    path.write_text('{"files": ["a list"]}', encoding="utf-8")
    with pytest.raises(IndexerError, match="corrupt"):
        named_files(path)


SHARDED = {
    **FIRST_RELEASE,
    "index": {"type": "Flat", "metric": "inner_product", "dimension": 384, "shards": 2},
    "files": {"vectors.0": "vectors.0.1.faiss", "vectors.1": "vectors.1.1.faiss", "documents": "documents.1.db"},
    "sizes": {"vectors.0": 772045, "vectors.1": 772045, "documents": 253952},
}
"""A vector index in two shards: one file per shard, roles vectors.0 and vectors.1."""


def test_a_sharded_index_names_one_file_per_shard() -> None:
    manifest = _parse(SHARDED)
    assert manifest.index.shards == 2
    assert vector_roles(2) == ["vectors.0", "vectors.1"] and vector_roles(1) == ["vectors"]
    assert manifest.files["vectors.1"] == StoredFile("vectors.1.1.faiss", 772045)
    assert manifest.size_on_disk == 2 * 772045 + 253952
    assert Manifest.from_json(manifest.to_json(), PATH) == manifest
    assert "shards" not in _parse(FIRST_RELEASE).as_json_dict()["index"]  # unsharded manifests are as before


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("files.vectors.1", ..., "key 'files.vectors.1' is missing"),
        ("files.vectors", "vectors.1.faiss", "key 'files.vectors' is not a file an index has (those are vectors.0"),
        ("files.vectors.2", "vectors.2.1.faiss", "key 'files.vectors.2' is not a file an index has"),
        ("index.shards", 0, "key 'index.shards' should be at least 1"),
    ],
)
def test_shard_files_must_match_the_shard_count(key: str, value: object, problem: str) -> None:
    data = copy.deepcopy(SHARDED)
    role = key.removeprefix("files.")
    if value is ...:
        del data["files"][role], data["sizes"][role]
    elif key.startswith("files."):
        data["files"][role], data["sizes"][role] = value, 1
    else:
        data["index"]["shards"] = value
    assert problem in _one_line_error(data)


def test_an_unsharded_manifest_refuses_shard_files() -> None:
    data = copy.deepcopy(FIRST_RELEASE)
    data["files"]["vectors.0"], data["sizes"]["vectors.0"] = "vectors.0.1.faiss", 1
    assert "key 'files.vectors.0' is not a file an index has" in _one_line_error(data)
