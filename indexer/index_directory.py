"""The index directory: a manifest naming the current files, swapped atomically, and a writer lock.

Layout (txtai-style, one directory that loads back whole):
    manifest.json               what the index holds and which files are current
    vectors.<generation>.faiss  the FAISS index
    documents.<generation>.db   the SQLite document store
    whitening.<generation>.safetensors  the fitted whitening-k transform, when there is one
    spool.<generation>.tmp      embeddings on disk while whitening is fitted or the index trained
    .lock                       held by the one process writing

A write puts a new generation's files beside the current ones and then replaces manifest.json in one
os.replace. A run that is interrupted or killed leaves the old manifest, which still names the old files:
readers never see a half-written index. Files no manifest names are removed by the next writer.
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from searchengine.indexer.errors import IndexerError, IndexLockedError
from searchengine.indexer.manifest import Manifest, StoredFile, named_files

MANIFEST = "manifest.json"
LOCK = ".lock"
READ_ATTEMPTS = 3
_GENERATION_FILE = re.compile(r"^(vectors|documents|whitening|spool)\.\d+\.(faiss|db|safetensors|tmp)(-journal)?$")
_SUFFIXES = {"vectors": "faiss", "documents": "db", "whitening": "safetensors", "spool": "tmp"}


class IndexDirectory:
    """Reads the manifest and hands out the paths it names; writers go through `writing()`."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def exists(self) -> bool:
        return (self.path / MANIFEST).is_file()

    def read_manifest(self) -> Manifest:
        """The current manifest, checked against the files it names.

        A writer may replace the manifest and remove the files it named between our reading it and checking
        them; then the check is made again on the new manifest.
        """
        for attempt in range(READ_ATTEMPTS):
            stamp = self.manifest_stamp()
            try:
                return self._read_manifest_once()
            except IndexerError:
                if attempt == READ_ATTEMPTS - 1 or self.manifest_stamp() == stamp:
                    raise
        raise AssertionError("unreachable")

    def manifest_stamp(self) -> tuple[int, int] | None:
        """Changes whenever a writer commits (each commit is a new file renamed into place)."""
        try:
            status = (self.path / MANIFEST).stat()
        except OSError:
            return None
        return status.st_ino, status.st_mtime_ns

    def _read_manifest_once(self) -> Manifest:
        manifest_path = self.path / MANIFEST
        if not self.path.is_dir():
            raise IndexerError(
                f"no index at {self.path}: build one there with `searchengine index FILE`, or use the directory of "
                "an existing index"
            )
        if not manifest_path.is_file():
            raise IndexerError(
                f"{self.path} holds no searchengine index (no {MANIFEST}; an indexing run may have been "
                "interrupted before it finished): build one with `searchengine index FILE`"
            )
        manifest = Manifest.read(manifest_path)
        for stored in manifest.files.values():
            file = self.path / stored.name
            try:  # one stat: a writer may remove an old generation's file at any moment
                size = file.stat().st_size
            except OSError:
                raise IndexerError(f"index file {file} is missing; rebuild the index") from None
            if size != stored.size:
                raise IndexerError(
                    f"index file {file} has {size} bytes but the manifest says {stored.size}: "
                    "it is truncated or was changed; rebuild the index"
                )
        return manifest

    def file(self, manifest: Manifest, role: str) -> Path | None:
        """The path of the current file for `role` ('vectors', 'documents', 'whitening'), if it has one."""
        stored = manifest.files.get(role)
        return self.path / stored.name if stored else None

    @contextmanager
    def writing(self) -> Iterator[Generation]:
        """Hold the writer lock and yield a new generation; its files count only once it is committed."""
        if self.path.exists() and not self.path.is_dir():
            raise IndexerError(f"{self.path} is a file, not an index directory; choose another index directory")
        if self.path.is_dir() and not self.exists() and _foreign_entries(self.path):
            raise IndexerError(
                f"{self.path} already exists and is not a searchengine index; choose another index directory "
                "so nothing in it is overwritten"
            )
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / LOCK, "a+") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.seek(0)
                holder = lock.read().strip() or "another process"
                raise IndexLockedError(
                    f"index {self.path} is being written by {holder}; wait for it to finish and try again"
                ) from None
            lock.seek(0)
            lock.truncate()
            lock.write(f"process {os.getpid()}")
            lock.flush()
            current = self._current_files()
            self._remove_unreferenced(current)
            generation = Generation(self, current)
            try:
                yield generation
            finally:
                if not generation.committed:
                    generation.discard()

    def _current_files(self) -> set[str]:
        return named_files(self.path / MANIFEST) if self.exists() else set()

    def _remove_unreferenced(self, keep: set[str]) -> None:
        for entry in self.path.iterdir():
            if _GENERATION_FILE.match(entry.name) and entry.name not in keep or entry.name == f"{MANIFEST}.tmp":
                entry.unlink(missing_ok=True)


class Generation:
    """The files of one write; `commit` makes them current by replacing the manifest."""

    def __init__(self, directory: IndexDirectory, previous: set[str]) -> None:
        self.directory = directory
        self.previous = previous
        self.number = time.time_ns()
        self.committed = False
        self.created: list[Path] = []

    def path(self, role: str) -> Path:
        """A fresh path for this generation's file of `role` (vectors, documents, whitening or spool)."""
        path = self.directory.path / f"{role}.{self.number}.{_SUFFIXES[role]}"
        self.created.append(path)
        return path

    def commit(self, manifest: Manifest, paths: dict[str, Path | None]) -> None:
        """Name `paths` (role -> file) in `manifest`, write it to a temporary file, fsync, swap it into place."""
        files = {
            role: StoredFile(path.name, (self.directory.path / path.name).stat().st_size)
            for role, path in paths.items()
            if path is not None
        }
        manifest = manifest.with_files(files)
        for stored in files.values():
            _fsync(self.directory.path / stored.name)
        temporary = self.directory.path / f"{MANIFEST}.tmp"
        temporary.write_text(manifest.to_json(), encoding="utf-8")
        _fsync(temporary)
        os.replace(temporary, self.directory.path / MANIFEST)
        _fsync(self.directory.path)
        self.committed = True
        for name in self.previous - {stored.name for stored in files.values()}:
            (self.directory.path / name).unlink(missing_ok=True)

    def discard(self) -> None:
        for path in self.created:
            path.unlink(missing_ok=True)
            Path(f"{path}-journal").unlink(missing_ok=True)


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _foreign_entries(path: Path) -> bool:
    return any(
        entry.name not in (LOCK, f"{MANIFEST}.tmp") and not _GENERATION_FILE.match(entry.name)
        for entry in path.iterdir()
    )
