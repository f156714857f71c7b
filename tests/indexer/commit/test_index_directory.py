"""The index directory: manifest checks, atomic generations, clean-up of stale files and the writer lock."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from searchengine.indexer.commit.index_directory import MANIFEST, IndexDirectory, file_checksum
from searchengine.indexer.commit.manifest import (
    FORMAT_VERSION,
    Counts,
    Manifest,
    ModelIdentity,
    StoredFile,
    VectorIndexSpec,
    WhiteningFit,
)
from searchengine.indexer.commit.writer_lock import LOCK
from searchengine.indexer.errors import IndexerError, IndexLockedError

FIRST, SECOND = "2026-01-01T00:00:00+0000", "2026-01-02T00:00:00+0000"


def _manifest(updated_at: str = FIRST, whitened: bool = False) -> Manifest:
    """A format-1 manifest naming no files yet (the generation protocol builds, adapts and conversions still use);
    commits can be told apart by `updated_at`."""
    return Manifest(
        model=ModelIdentity("tiny", "default", "0123456789abcdef", "mean", True, 32, 64),
        whitening=WhiteningFit(k=8, fit_count=4) if whitened else None,
        index=VectorIndexSpec("Flat", "inner_product", 32),
        count=Counts(vectors=3, documents=4),
        created_at=FIRST,
        updated_at=updated_at,
        versions={"searchengine": "0.1.0"},
        format_version=1,
    )


def _commit(directory: IndexDirectory, contents: dict[str, bytes], updated_at: str = FIRST) -> Manifest:
    """Write one generation holding `contents` (role -> bytes), commit it and return the new manifest."""
    with directory.writing() as generation:
        paths = {}
        for role, data in contents.items():
            path = generation.path(role)
            path.write_bytes(data)
            paths[role] = path
        generation.commit(_manifest(updated_at, whitened="whitening" in contents), paths)
    return directory.read_manifest()


def _names(path: Path) -> set[str]:
    return {entry.name for entry in path.iterdir()}


def _file_names(manifest: Manifest) -> set[str]:
    return {stored.name for stored in manifest.files.values()}


@pytest.fixture
def index(tmp_path: Path) -> IndexDirectory:
    return IndexDirectory(tmp_path / "index")


@pytest.fixture
def committed(index: IndexDirectory) -> Manifest:
    """An index holding one committed generation with vectors and documents."""
    return _commit(index, {"vectors": b"V" * 100, "documents": b"D" * 37})


# ---------------------------------------------------------------------------------------------------------
# commit and read_manifest
# ---------------------------------------------------------------------------------------------------------


def test_commit_makes_the_files_current(index: IndexDirectory) -> None:
    assert not index.exists()
    manifest = _commit(index, {"vectors": b"v" * 10, "documents": b"d" * 20, "whitening": b"w" * 5})
    assert index.exists()
    assert manifest == _manifest(whitened=True).with_files(manifest.files)
    assert {role: stored.size for role, stored in manifest.files.items()} == {
        "vectors": 10,
        "documents": 20,
        "whitening": 5,
    }
    assert index.file(manifest, "vectors").read_bytes() == b"v" * 10
    assert index.file(manifest, "documents").read_bytes() == b"d" * 20
    assert index.file(manifest, "whitening").read_bytes() == b"w" * 5
    assert manifest.size_on_disk == 35
    # The manifest is plain JSON on disk, with no temporary left behind.
    on_disk = json.loads((index.path / MANIFEST).read_text(encoding="utf-8"))
    assert on_disk["format_version"] == 1  # written as given (a build writes FORMAT_VERSION, format 2)
    assert FORMAT_VERSION == 2
    assert on_disk["sizes"] == {"vectors": 10, "documents": 20, "whitening": 5}
    assert on_disk == manifest.as_json_dict()
    assert not (index.path / f"{MANIFEST}.tmp").exists()


def test_file_names_follow_the_layout(committed: Manifest) -> None:
    vectors, documents = committed.files["vectors"].name, committed.files["documents"].name
    assert vectors.startswith("vectors.") and vectors.endswith(".faiss")
    assert documents.startswith("documents.") and documents.endswith(".db")


def test_a_role_committed_as_none_is_not_named(index: IndexDirectory) -> None:
    with index.writing() as generation:
        vectors, documents = generation.path("vectors"), generation.path("documents")
        vectors.write_bytes(b"x")
        documents.write_bytes(b"y")
        unused = generation.path("whitening")  # asked for but never written
        generation.commit(_manifest(), {"vectors": vectors, "documents": documents, "whitening": None})
    manifest = index.read_manifest()
    assert set(manifest.files) == {"vectors", "documents"}
    assert index.file(manifest, "whitening") is None
    assert not unused.exists()


def test_only_what_a_first_write_killed_before_its_commit_left_is_interrupted(index: IndexDirectory) -> None:
    assert not index.interrupted()  # no folder
    index.path.mkdir()
    assert not index.interrupted()  # an empty folder: nothing left by a build
    (index.path / LOCK).write_text("")
    (index.path / "documents.1796050157199487021.db").write_bytes(b"D")  # a generation's store, never committed
    assert index.interrupted()
    (index.path / "notes.txt").write_text("mine")
    assert not index.interrupted()  # something else in it


def test_an_index_is_not_interrupted(index: IndexDirectory, committed: Manifest) -> None:
    assert not index.interrupted()


def test_read_manifest_of_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(IndexerError, match="no index at"):
        IndexDirectory(tmp_path / "nowhere").read_manifest()


def test_read_manifest_of_a_directory_without_manifest(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexerError, match="holds no searchengine index"):
        IndexDirectory(tmp_path / "empty").read_manifest()


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "",
        '{"format_version": 1, "files": {}}',  # no sizes
        '["a", "list"]',
        '"a string"',
        "null",
    ],
    ids=["syntax", "empty", "missing-key", "list", "string", "null"],
)
def test_read_manifest_of_a_corrupt_manifest(index: IndexDirectory, committed: Manifest, text: str) -> None:
    (index.path / MANIFEST).write_text(text, encoding="utf-8")
    with pytest.raises(IndexerError, match="corrupt"):
        index.read_manifest()


def test_read_manifest_of_a_manifest_that_is_not_utf8(index: IndexDirectory, committed: Manifest) -> None:
    (index.path / MANIFEST).write_bytes(b'{"format_version": 1, \xff\xfe}')
    with pytest.raises(IndexerError):
        index.read_manifest()


@pytest.mark.parametrize(
    ("key", "value"),
    [("files", ["vectors.1.faiss"]), ("files", "vectors.1.faiss"), ("files", 42), ("sizes", [100, 37])],
    ids=["files-list", "files-string", "files-number", "sizes-list"],
)
def test_read_manifest_with_a_field_of_the_wrong_type(
    index: IndexDirectory, committed: Manifest, key: str, value
) -> None:
    manifest = json.loads((index.path / MANIFEST).read_text(encoding="utf-8"))
    manifest[key] = value
    (index.path / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(IndexerError, match=f"corrupt: key '{key}'"):
        index.read_manifest()


@pytest.mark.parametrize("version", [0, 3, "1", None, True])
def test_read_manifest_of_another_format_version(index: IndexDirectory, committed: Manifest, version) -> None:
    manifest = json.loads((index.path / MANIFEST).read_text(encoding="utf-8"))
    manifest["format_version"] = version
    (index.path / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(IndexerError, match="format"):
        index.read_manifest()


def test_read_manifest_with_a_referenced_file_missing(index: IndexDirectory, committed: Manifest) -> None:
    missing = index.file(committed, "documents")
    missing.unlink()
    with pytest.raises(IndexerError, match="missing") as error:
        index.read_manifest()
    assert missing.name in str(error.value)


@pytest.mark.parametrize("data", [b"D" * 36, b"", b"D" * 38], ids=["truncated", "emptied", "grown"])
def test_read_manifest_with_a_referenced_file_of_the_wrong_size(
    index: IndexDirectory, committed: Manifest, data: bytes
) -> None:
    changed = index.file(committed, "documents")
    changed.write_bytes(data)
    with pytest.raises(IndexerError, match="truncated or was changed") as error:
        index.read_manifest()
    assert changed.name in str(error.value)
    assert str(len(data)) in str(error.value)


# ---------------------------------------------------------------------------------------------------------
# failed writes, generations and clean-up
# ---------------------------------------------------------------------------------------------------------


def test_exception_before_commit_discards_the_new_files_and_keeps_the_old_index(
    index: IndexDirectory, committed: Manifest
) -> None:
    before = _names(index.path)
    manifest_text = (index.path / MANIFEST).read_text(encoding="utf-8")
    with pytest.raises(RuntimeError, match="boom"):
        with index.writing() as generation:
            new_vectors = generation.path("vectors")
            new_documents = generation.path("documents")
            new_vectors.write_bytes(b"new")
            new_documents.write_bytes(b"new")
            Path(f"{new_documents}-journal").write_bytes(b"journal")  # as SQLite leaves mid-transaction
            raise RuntimeError("boom")
    assert not new_vectors.exists()
    assert not new_documents.exists()
    assert not Path(f"{new_documents}-journal").exists()
    assert _names(index.path) == before
    assert (index.path / MANIFEST).read_text(encoding="utf-8") == manifest_text
    assert index.read_manifest() == committed
    assert index.file(committed, "vectors").read_bytes() == b"V" * 100
    assert index.file(committed, "documents").read_bytes() == b"D" * 37


def test_exception_in_the_first_write_leaves_no_index(index: IndexDirectory) -> None:
    with pytest.raises(ValueError):
        with index.writing() as generation:
            generation.path("vectors").write_bytes(b"partial")
            raise ValueError("interrupted")
    assert not index.exists()
    assert _names(index.path) <= {LOCK}
    with pytest.raises(IndexerError):
        index.read_manifest()


def test_second_commit_removes_the_previous_generation(index: IndexDirectory, committed: Manifest) -> None:
    old_files = _file_names(committed)
    manifest = _commit(index, {"vectors": b"v2" * 3, "documents": b"d2"}, updated_at=SECOND)
    assert manifest.updated_at == SECOND
    assert not old_files & _file_names(manifest)
    for name in old_files:
        assert not (index.path / name).exists()
    assert _names(index.path) == {MANIFEST, LOCK, *_file_names(manifest)}
    assert index.file(manifest, "vectors").read_bytes() == b"v2" * 3


def test_commit_may_keep_a_file_of_the_previous_generation(index: IndexDirectory) -> None:
    """An append may reuse the old whitening file: a file named by the new manifest is not deleted."""
    first = _commit(index, {"vectors": b"1", "documents": b"D", "whitening": b"W"})
    whitening = index.file(first, "whitening")
    with index.writing() as generation:
        vectors, documents = generation.path("vectors"), generation.path("documents")
        vectors.write_bytes(b"22")
        documents.write_bytes(b"DD")
        paths = {"vectors": vectors, "documents": documents, "whitening": whitening}
        generation.commit(_manifest(whitened=True), paths)
    second = index.read_manifest()
    assert second.files["whitening"] == StoredFile(whitening.name, 1, file_checksum(whitening))
    assert whitening.read_bytes() == b"W"
    assert not index.file(first, "vectors").exists()


def test_files_left_by_a_killed_run_are_removed_by_the_next_commit(index: IndexDirectory, committed: Manifest) -> None:
    stale = [
        "vectors.123.faiss",
        "documents.123.db",
        "documents.123.db-journal",
        "whitening.123.safetensors",
        "spool.123.tmp",
        f"{MANIFEST}.tmp",
    ]
    for name in stale:
        (index.path / name).write_bytes(b"stale")
    for name in ("notes.txt", "x.tmp"):  # only index-shaped files are touched
        (index.path / name).write_bytes(b"not ours")
    with index.writing():  # a writer that fails (or commits nothing) changes nothing, leftovers included
        assert index.read_manifest() == committed
    assert all((index.path / name).exists() for name in stale)
    _commit(index, {"vectors": b"v2", "documents": b"d2"}, updated_at=SECOND)
    for name in stale:
        assert not (index.path / name).exists(), name
    assert (index.path / "notes.txt").exists() and (index.path / "x.tmp").exists()  # only index-shaped files go


def test_a_killed_first_run_does_not_block_the_next_one(index: IndexDirectory) -> None:
    """A run killed before its first commit leaves generation files and its spool but no manifest."""
    index.path.mkdir()
    (index.path / LOCK).write_text("process 1", encoding="utf-8")
    (index.path / "documents.123.db").write_bytes(b"half")
    (index.path / "spool.123.tmp").write_bytes(b"embeddings")
    manifest = _commit(index, {"vectors": b"v", "documents": b"d"})
    assert _names(index.path) == {MANIFEST, LOCK, *_file_names(manifest)}


def test_a_killed_first_run_leaving_only_generation_files_is_cleaned_up(index: IndexDirectory) -> None:
    index.path.mkdir()
    (index.path / "documents.123.db").write_bytes(b"half")
    (index.path / "documents.123.db-journal").write_bytes(b"j")
    (index.path / f"{MANIFEST}.tmp").write_bytes(b"{")
    manifest = _commit(index, {"vectors": b"v", "documents": b"d"})
    assert _names(index.path) == {MANIFEST, LOCK, *_file_names(manifest)}


# ---------------------------------------------------------------------------------------------------------
# the writer lock
# ---------------------------------------------------------------------------------------------------------


def test_a_second_writer_is_refused_while_the_first_holds_the_lock(index: IndexDirectory, committed: Manifest) -> None:
    """flock locks belong to an open file description, so a second open in this process conflicts too."""
    with index.writing() as first:
        kept = first.path("vectors")
        kept.write_bytes(b"in progress")
        with pytest.raises(IndexLockedError, match=rf"by this process \({os.getpid()}\)"):
            with IndexDirectory(index.path).writing():
                pass  # pragma: no cover
        # The refused writer removed nothing: neither the first writer's file nor the current index.
        assert kept.exists()
        assert index.read_manifest() == committed
        documents = first.path("documents")
        documents.write_bytes(b"documents")
        first.commit(_manifest(), {"vectors": kept, "documents": documents})
    assert _file_names(index.read_manifest()) == {kept.name, documents.name}


def test_the_lock_is_released_after_a_write(index: IndexDirectory, committed: Manifest) -> None:
    with index.writing():
        pass
    with pytest.raises(KeyError):
        with index.writing():
            raise KeyError("fails inside")
    with index.writing() as generation:  # neither a plain exit nor an exception left the lock held
        assert generation.committed is False


def test_reading_is_not_blocked_by_a_writer(index: IndexDirectory, committed: Manifest) -> None:
    with index.writing():
        assert IndexDirectory(index.path).read_manifest() == committed


# ---------------------------------------------------------------------------------------------------------
# refusing paths that are not index directories
# ---------------------------------------------------------------------------------------------------------


def test_writing_into_a_foreign_directory_is_refused_and_deletes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "my documents"
    target.mkdir()
    contents = {"report.txt": b"important", "x.tmp": b"mine", "vectors.1.faiss": b"looks like ours"}
    for name, data in contents.items():
        (target / name).write_bytes(data)
    (target / "sub").mkdir()
    with pytest.raises(IndexerError, match="not a searchengine index"):
        with IndexDirectory(target).writing():
            pass  # pragma: no cover
    assert _names(target) == {*contents, "sub"}
    for name, data in contents.items():
        assert (target / name).read_bytes() == data


def test_writing_into_an_existing_empty_directory_works(tmp_path: Path) -> None:
    target = tmp_path / "empty"
    target.mkdir()
    manifest = _commit(IndexDirectory(target), {"vectors": b"v", "documents": b"dd"})
    assert manifest.size_on_disk == 3


def test_writing_creates_missing_parent_directories(tmp_path: Path) -> None:
    index = IndexDirectory(tmp_path / "a" / "b" / "index")
    _commit(index, {"vectors": b"v", "documents": b"d"})
    assert index.exists()


def test_writing_to_a_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "index"
    target.write_bytes(b"a file")
    with pytest.raises(IndexerError, match="is a file"):
        with IndexDirectory(target).writing():
            pass  # pragma: no cover
    assert target.read_bytes() == b"a file"


def test_index_directory_accepts_a_string_path(tmp_path: Path) -> None:
    index = IndexDirectory(str(tmp_path / "index"))
    assert index.path == tmp_path / "index"
    assert not index.exists()


# ---------------------------------------------------------------------------------------------------------
# commit safety, names inside the directory, the lock file, checksums (issue 11)
# ---------------------------------------------------------------------------------------------------------


def _interrupt_after(monkeypatch: pytest.MonkeyPatch, name: str, when=lambda *args: True) -> None:  # noqa: ANN001
    """Make `index_directory.<name>` do its work and then raise KeyboardInterrupt (a Ctrl-C landing right after)."""
    import searchengine.indexer.commit.index_directory as module

    real = module.os.replace if name == "replace" else getattr(module, name)  # os.replace, or fsync_path

    def interrupted(*args: object) -> None:
        real(*args)
        if when(*args):
            raise KeyboardInterrupt

    if name == "replace":
        monkeypatch.setattr(module.os, "replace", interrupted)
    else:
        monkeypatch.setattr(module, name, interrupted)


@pytest.mark.parametrize("where", ["replace", "fsync_path"])
def test_a_ctrl_c_right_after_the_manifest_swap_keeps_the_files_it_names(
    index: IndexDirectory, committed: Manifest, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """The interrupt lands after os.replace (inside it, or at the directory fsync that follows): the new manifest
    is current, so the files it names must survive the discard that follows an interrupted write."""
    _interrupt_after(monkeypatch, where, when=lambda path, *rest: where == "replace" or Path(path).is_dir())
    with pytest.raises(KeyboardInterrupt):
        _commit(index, {"vectors": b"v2" * 3, "documents": b"d2"}, updated_at=SECOND)
    monkeypatch.undo()
    current = index.read_manifest()  # checks that every file it names exists, with its size and checksum
    assert current.updated_at == SECOND
    assert index.file(current, "vectors").read_bytes() == b"v2" * 3


@pytest.mark.parametrize("name", ["..", ".", "../outside.faiss", "/etc/passwd", "a/b.faiss"])
def test_manifest_names_outside_the_directory_are_refused(
    index: IndexDirectory, committed: Manifest, name: str
) -> None:
    manifest_path = index.path / MANIFEST
    data = json.loads(manifest_path.read_text(encoding="utf-8"))
    data["files"]["vectors"] = name
    manifest_path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(IndexerError, match="files.vectors' should be a file name in the index directory") as error:
        index.read_manifest()
    assert "\n" not in str(error.value)


def test_a_writer_never_deletes_what_a_hostile_manifest_names_outside(
    index: IndexDirectory, committed: Manifest, tmp_path: Path
) -> None:
    victim = tmp_path / "victim.faiss"
    victim.write_bytes(b"keep me")
    manifest_path = index.path / MANIFEST
    data = json.loads(manifest_path.read_text(encoding="utf-8"))
    data["files"]["vectors"] = "../victim.faiss"
    manifest_path.write_text(json.dumps(data), encoding="utf-8")
    _commit(index, {"vectors": b"v2", "documents": b"d2"}, updated_at=SECOND)  # a build over the broken index
    assert victim.read_bytes() == b"keep me"


def test_a_file_that_is_a_symlink_out_of_the_directory_is_refused(
    index: IndexDirectory, committed: Manifest, tmp_path: Path
) -> None:
    vectors = index.file(committed, "vectors")
    outside = tmp_path / "elsewhere.faiss"
    outside.write_bytes(vectors.read_bytes())
    vectors.unlink()
    vectors.symlink_to(outside)
    with pytest.raises(IndexerError, match="symbolic link out of the index directory"):
        index.read_manifest()


def test_the_manifest_keeps_its_permissions_across_commits(index: IndexDirectory, committed: Manifest) -> None:
    (index.path / MANIFEST).chmod(0o640)
    _commit(index, {"vectors": b"v2", "documents": b"d2"}, updated_at=SECOND)
    assert (index.path / MANIFEST).stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize("role", ["vectors", "documents", "whitening"])
def test_a_flipped_byte_in_a_small_file_is_caught_on_open(index: IndexDirectory, role: str) -> None:
    manifest = _commit(index, {"vectors": b"V" * 100, "documents": b"D" * 37, "whitening": b"W" * 20})
    assert all(stored.checksum and stored.checksum.startswith("sha256:") for stored in manifest.files.values())
    path = index.file(manifest, role)
    data = bytearray(path.read_bytes())
    data[5] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(IndexerError, match=f"index file {path} is corrupt: its checksum .*same size, other bytes"):
        index.read_manifest()
    checks = {check.role: check.problem for check in index.verify()}
    assert checks[role] and all(problem is None for other, problem in checks.items() if other != role)


def test_large_files_are_checked_by_writers_and_verify_not_on_open(index: IndexDirectory, committed: Manifest) -> None:
    index = IndexDirectory(index.path, verify_on_open_bytes=10)  # every file here counts as large
    path = index.file(committed, "vectors")
    path.write_bytes(b"X" + path.read_bytes()[1:])
    assert index.read_manifest() == committed  # sizes only on open
    assert [check.role for check in index.verify() if check.problem] == ["vectors"]
    before = {entry.name: entry.read_bytes() for entry in index.path.iterdir()}
    with pytest.raises(IndexerError, match="is corrupt: its checksum"):
        with index.writing(existing=True):
            pass
    assert {entry.name: entry.read_bytes() for entry in index.path.iterdir()} == before


def test_a_manifest_without_checksums_still_opens_and_the_next_commit_records_them(
    index: IndexDirectory, committed: Manifest
) -> None:
    manifest_path = index.path / MANIFEST
    data = json.loads(manifest_path.read_text(encoding="utf-8"))
    del data["checksums"]
    manifest_path.write_text(json.dumps(data), encoding="utf-8")
    assert all(stored.checksum is None for stored in index.read_manifest().files.values())
    assert [(check.has_checksum, check.problem) for check in index.verify()] == [(False, None), (False, None)]
    assert all(stored.checksum for stored in _commit(index, {"vectors": b"2", "documents": b"3"}).files.values())


def test_shard_files_are_generation_files_removed_once_replaced(index: IndexDirectory) -> None:
    shards = {"vectors.0": b"0", "vectors.1": b"1", "documents": b"D"}
    with index.writing() as generation:
        paths = {role: generation.path(role) for role in shards}
        for role, path in paths.items():
            path.write_bytes(shards[role])
        sharded = Manifest(**{**_manifest().__dict__, "index": VectorIndexSpec("Flat", "inner_product", 32, 2)})
        generation.commit(sharded, paths)
    shard = index.file(index.read_manifest(), "vectors.1")
    assert shard.name.startswith("vectors.1.") and shard.suffix == ".faiss"
    second = _commit(index, {"vectors": b"V", "documents": b"d"}, updated_at=SECOND)
    assert _names(index.path) - {LOCK} == _file_names(second) | {MANIFEST}
