"""The index directory: a manifest naming the current files, swapped atomically, and a writer lock.

Layout (txtai-style, one directory that loads back whole):
    manifest.json               what the index holds and which files are current
    vectors.<generation>.faiss  the FAISS index (or vectors.<shard>.<generation>.faiss, one per shard)
    documents.<generation>.db   the SQLite document store
    whitening.<generation>.safetensors  the fitted whitening-k transform, when there is one
    spool.<generation>.tmp      embeddings on disk while whitening is fitted or the index trained
    .lock                       held by the one process writing

A write puts a new generation's files beside the current ones and then replaces manifest.json in one
os.replace. A run that is interrupted or killed leaves the old manifest, which still names the old files:
readers never see a half-written index. Files no manifest names (the replaced generation, leftovers of an
interrupted run) are removed right after the next commit, so a write that fails changes nothing.

The manifest records each file's size and sha256. Every open checks sizes, and the checksums of files up to
VERIFY_ON_OPEN_BYTES (the whitening always, and the store and vectors of small indexes); a writer changing an
existing index checks every file's checksum before it touches anything; `verify` checks them all on demand.
File names are plain names in the directory, and a name that is a symbolic link out of it is refused.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from searchengine.indexer.commit.crash_points import crash_point
from searchengine.indexer.commit.durable_files import file_checksum, fsync_path, in_use
from searchengine.indexer.commit.file_check import FileCheck
from searchengine.indexer.commit.manifest import SEGMENT_ROLE, TEMPLATE_ROLE, Manifest, StoredFile, named_files
from searchengine.indexer.commit.model_folders import named_model_folder, remove_entries, unreferenced_model_entries
from searchengine.indexer.commit.writer_lock import LOCK, writer_lock
from searchengine.indexer.errors import IndexerError

if TYPE_CHECKING:
    from searchengine.indexer.tables.store import DocumentStore

MANIFEST = "manifest.json"
READ_ATTEMPTS = 10
"""How often a reader starts over when writers keep committing while it reads (each retry follows a commit)."""
VERIFY_ON_OPEN_BYTES = 8 << 20
"""Files up to this size have their checksum checked on every open (a short hash: the README gives its cost); larger
ones by writers, which read them whole anyway, and by `searchengine verify`."""
_T = TypeVar("_T")
_GENERATION_FILE = re.compile(
    r"^((vectors(\.\d+)?|documents|whitening|spool|segment|template)\.\d+\.(faiss|db|safetensors|tmp|npy))(-journal|-wal|-shm)?$"
)
"""Files a write makes: group 1 is the file a store's journal, write-ahead log or shared memory belongs to."""
_IMMUTABLE = (f"{SEGMENT_ROLE}.", f"{TEMPLATE_ROLE}.")
"""Files the store records (segments, their originals, the template), never changed once written."""
_SUFFIXES = {"vectors": "faiss", "documents": "db", "whitening": "safetensors", "spool": "tmp"}


class IndexDirectory:
    """Reads the manifest and hands out the paths it names; writers go through `writing()`."""

    def __init__(self, path: Path | str, *, verify_on_open_bytes: int = VERIFY_ON_OPEN_BYTES) -> None:
        self.path = Path(path)
        self.verify_on_open_bytes = verify_on_open_bytes
        """Files up to this size have their checksum checked on every open (VERIFY_ON_OPEN_BYTES)."""
        self._verified: set[tuple[str, str]] = set()
        """(name, checksum) of immutable files this object has read in full and found intact: a segment is
        checked once, not at every reopen."""

    def exists(self) -> bool:
        return (self.path / MANIFEST).is_file()

    def interrupted(self) -> bool:
        """Whether the directory holds no index, only what a build killed before its first commit left (the writer
        lock, files of a generation never committed): what a build over it replaces, nothing else in it."""
        return (
            self.path.is_dir() and not self.exists() and any(self.path.iterdir()) and not _foreign_entries(self.path)
        )

    def read_manifest(self) -> Manifest:
        """The current manifest, checked against the files it names (sizes, and checksums of small files); for
        format 2 filled in from the store's latest commit (counts, segments: indexer/commit/index_state.py)."""
        return self.read_consistently(lambda manifest: manifest)

    def read_settings(self) -> Manifest:
        """The manifest as on disk, its own files checked, without reading the store: what a write in place needs
        (model, dimension, whitening, passages), at a cost that does not grow with the index."""
        return self._read_manifest_once(self.verify_on_open_bytes, with_state=False)

    def read_consistently(
        self,
        read: Callable[[Manifest], _T],
        with_state: bool = True,
        commit_number: Callable[[], object] | None = None,
    ) -> _T:
        """`read(manifest)` on the current manifest, started over whenever a writer commits meanwhile.

        `with_state` False: a format-2 manifest as on disk, for a `read` that reads the store's state itself.
        A writer may replace the manifest and remove the files it named between our reading it and opening them;
        an IndexerError raised while the manifest changed underneath is that, not damage, so the read is made
        again on the new manifest. The same error with the manifest unchanged is real and raised.
        `commit_number`: reads the store's newest commit number on a connection the caller keeps open
        (CommitProbe.newest), instead of a new connection at each look (see `state_stamp`).
        """
        for attempt in range(READ_ATTEMPTS):
            stamp = self.state_stamp(commit_number)
            try:
                return read(self._read_manifest_once(self.verify_on_open_bytes, with_state))
            except IndexerError:
                if attempt == READ_ATTEMPTS - 1 or self.state_stamp(commit_number) == stamp:
                    raise
        raise AssertionError("unreachable")

    def manifest_stamp(self) -> tuple[int, int] | None:
        """Changes whenever a writer commits (each commit is a new file renamed into place)."""
        try:
            status = (self.path / MANIFEST).stat()
        except OSError:
            return None
        return status.st_ino, status.st_mtime_ns

    def state_stamp(self, commit_number: Callable[[], object] | None = None) -> tuple:
        """Changes whenever a writer commits anything: a new manifest, or (format 2) a new commit number in the
        store. A stat and one small read, on a new connection unless `commit_number` reads it on one kept open (a
        reader of another store file than the manifest names is told apart by the manifest's stamp)."""
        return self.manifest_stamp(), (commit_number or self._commit_number)()

    def _commit_number(self) -> str | None:
        """The store's commit number (format 2), read without any check; None where there is none to read."""
        try:
            names = named_files(self.path / MANIFEST)
        except (IndexerError, OSError):
            return None
        for name in names:
            if name.startswith("documents."):
                path = self.path / name
                try:
                    connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
                    try:
                        row = connection.execute("SELECT value FROM index_state WHERE key = 'commit'").fetchone()
                    finally:
                        connection.close()
                except sqlite3.Error:
                    return None
                return None if row is None else str(row[0])
        return None

    def _read_manifest_once(self, verify_up_to: int | None, with_state: bool = True) -> Manifest:
        """The manifest, each file it names checked to be inside the directory and of its recorded size, and
        its checksum verified when it is at most `verify_up_to` bytes (every file when None); for format 2 (when
        `with_state`) filled in from the store, its segments checked the same way."""
        manifest_path = self.path / MANIFEST
        if self.path.exists() and not self.path.is_dir():
            raise IndexerError(
                f"{self.path} is a file, not an index directory: give the directory of an index (-d DIR), or build "
                "one with `searchengine index FILE -d DIR`"
            )
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
            problem = self.check_file(stored, verify=lambda size: verify_up_to is None or size <= verify_up_to)
            if problem:
                raise IndexerError(f"{problem}; rebuild the index")
        if not manifest.segmented or not with_state:
            return manifest
        from searchengine.indexer.commit.index_state import with_store_state

        manifest = with_store_state(self.path, manifest)
        for stored in manifest.segment_files.values():
            problem = self.check_file(stored, verify=lambda size: verify_up_to is None or size <= verify_up_to)
            if problem:
                raise IndexerError(f"{problem}; rebuild the index")
        return manifest

    def check_file(self, stored: StoredFile, verify: Callable[[int], bool] = lambda size: True) -> str | None:  # noqa: ARG005
        """What is wrong with one file the manifest names, or None: outside the directory, missing, another size,
        or (when `verify(size)`) other bytes than its recorded checksum."""
        file = self.path / stored.name
        if file.is_symlink() and file.resolve().parent != self.path.resolve():
            return f"index file {file} is a symbolic link out of the index directory, which is refused"
        try:  # one stat: a writer may remove an old generation's file at any moment
            size = file.stat().st_size
        except OSError:
            return f"index file {file} is missing"
        if stored.in_place:
            return None
        if size != stored.size:
            return f"index file {file} has {size} bytes but {_recorder(stored)} says {stored.size}: it is truncated or was changed"
        if stored.checksum and verify(size) and (stored.name, stored.checksum) not in self._verified:
            try:
                found = file_checksum(file)
            except OSError as exc:
                return f"index file {file} cannot be read ({exc.strerror or exc})"
            if found == stored.checksum and stored.name.startswith(_IMMUTABLE):
                self._verified.add((stored.name, stored.checksum))
            if found != stored.checksum:
                return (
                    f"index file {file} is corrupt: its checksum is {found[:19]}…, {_recorder(stored)} records "
                    f"{stored.checksum[:19]}… (same size, other bytes)"
                )
        return None

    def verify(self) -> list[FileCheck]:
        """Every file of the current index checked in full (checksums of all sizes), one result per file; for a
        format-2 index every live segment too, the store by SQLite's own check, each document row against its checksum,
        and the segments against the store's counts."""
        manifest = Manifest.read(self.path / MANIFEST) if self.exists() else self.read_manifest()
        if not manifest.segmented:
            return [
                FileCheck(role, stored.name, stored.checksum is not None, self.check_file(stored))
                for role, stored in manifest.files.items()
            ]
        from searchengine.indexer.commit.index_state import with_store_state
        from searchengine.indexer.commit.manifest_check import check_manifest
        from searchengine.indexer.commit.row_check import check_rows
        from searchengine.indexer.commit.store_check import check_store  # SQLite's checks: loaded to verify only

        self._verified.clear()
        store = manifest.files["documents"]
        problem = self.check_file(store)
        if problem is None:
            try:
                manifest = with_store_state(self.path, manifest)
            except IndexerError as exc:
                problem = str(exc)
        if problem is not None:
            return [FileCheck("store", store.name, False, problem, unreadable=_may_not_read(self.path / store.name))]
        checks = [
            FileCheck(role, stored.name, stored.checksum is not None, self.check_file(stored))
            for role, stored in manifest.own_files.items()
            if role != "documents"
        ] + [
            FileCheck(role, stored.name, True, self.check_file(stored), "size and sha256 match the store's record")
            for role, stored in manifest.segment_files.items()
        ]
        checks = [
            replace(check, unreadable=True) if check.problem and _may_not_read(self.path / check.name) else check
            for check in checks
        ]
        if any(check.problem for check in checks):
            return checks
        return [
            *check_store(self.path, manifest),
            check_rows(self.path, manifest),
            check_manifest(self.path, manifest),
            *checks,
        ]

    def file(self, manifest: Manifest, role: str) -> Path | None:
        """The path of the current file for `role` ('vectors', 'documents', 'whitening'), if it has one."""
        stored = manifest.files.get(role)
        return self.path / stored.name if stored else None

    @contextmanager
    def writing(self, existing: bool = False) -> Iterator[Generation]:
        """Hold the writer lock and yield a new generation; its files count only once it is committed.

        `existing`: the write changes the index there, which must exist and pass every check (each file's
        checksum included) before anything in the directory is touched; so a write that fails on a broken index
        changes nothing. A build over a directory (`existing` False) replaces whatever index is there.
        """
        if existing:  # sizes only here (nothing is created for a missing index); checksums once locked
            self._read_manifest_once(verify_up_to=0)
        if self.path.exists() and not self.path.is_dir():
            raise IndexerError(f"{self.path} is a file, not an index directory; choose another index directory")
        if self.path.is_dir() and not self.exists() and _foreign_entries(self.path):
            raise IndexerError(
                f"{self.path} already exists and is not a searchengine index; choose another index directory "
                "so nothing in it is overwritten"
            )
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file on the way (NotADirectoryError), a folder this user may not write
            raise IndexerError(
                f"cannot make the index directory {self.path} ({exc.strerror or exc}); choose another index directory"
            ) from None
        with self.locked():
            if existing:  # every checksum, under the lock so no writer commits meanwhile, before anything changes
                self._read_manifest_once(verify_up_to=None)
            generation = Generation(self)
            try:
                yield generation
            finally:
                if not generation.committed:
                    generation.discard()

    def locked(self, wait: float = 0.0) -> AbstractContextManager[None]:
        """Hold the writer lock: one process writes an index at a time (writer_lock.py). `wait`: seconds to wait
        for another writer to finish (0: fail at once with IndexLockedError naming it)."""
        return writer_lock(self.path, wait)

    def live_file_names(self, writer: DocumentStore | None = None) -> set[str]:
        """The files the committed state names: the manifest's, and for format 2 the store's segments (with their
        originals files) and its trained template. `writer`: the store a writer just committed through, still
        holding the writer lock, read instead of opening the store again (each new connection parses the schema)."""
        return self._live_file_names(*self._current_manifest(), writer)

    def _current_manifest(self) -> tuple[set[str], Manifest | None]:
        """The names of the files the manifest on disk names (`named_files`: checked plain first), and the
        manifest; (set(), None) where there is none."""
        if not self.exists():
            return set(), None
        return named_files(self.path / MANIFEST), Manifest.read(self.path / MANIFEST)

    def _live_file_names(self, names: set[str], manifest: Manifest | None, writer: DocumentStore | None) -> set[str]:
        """`live_file_names`, given the current manifest and the names it names (read once by a caller that needs
        more of it)."""
        if names and manifest is not None and manifest.segmented:
            from searchengine.indexer.tables.store import DocumentStore

            path = self.path / manifest.files["documents"].name
            if writer is not None and not writer.closed and Path(writer.path) == path:
                return names | writer.segments.file_names()  # under the lock, after its commit: no one else commits
            store = DocumentStore(path)
            try:
                store.read_snapshot()
                names |= store.segments.file_names()
            finally:
                store.close()
        return names

    def remove_if_uncommitted(self, name: str) -> None:
        """Remove the file `name` that a write or merge made, unless the committed state names it (it failed after
        its commit point). Where the committed state cannot be read, the file stays: the next clean-up decides."""
        try:
            named = self.live_file_names()
        except Exception:  # noqa: BLE001 (called while another error is raised: never mask it)
            return
        if name not in named:
            (self.path / name).unlink(missing_ok=True)

    def remove_unreferenced(self, writer: DocumentStore | None = None, manifest: Manifest | None = None) -> None:
        """Remove the files no committed state names: those of replaced generations, segments merged away, orphans
        of interrupted writes, and adapted models no adapt in progress claims (indexer/commit/model_folders.py). Only
        under the writer lock, after a commit; never a file a commit names. `writer` as in `live_file_names`;
        `manifest`: the manifest on disk as the caller read it (`read_settings`) under this same hold of the writer
        lock, which no other writer can replace meanwhile (a write in place never does), so it is not read again."""
        models, files = self._unreferenced(writer, manifest)
        remove_entries(models)
        for removed, entry in enumerate(files, start=1):
            entry.unlink(missing_ok=True)
            if removed == 1:
                crash_point("cleanup")

    def has_unreferenced(self) -> bool:
        """Whether the directory holds anything `remove_unreferenced` would remove (a listing, nothing read)."""
        models, files = self._unreferenced()
        return bool(models or files)

    def _unreferenced(
        self, writer: DocumentStore | None = None, manifest: Manifest | None = None
    ) -> tuple[list[Path], list[Path]]:
        """The adapted-model entries and the generation files no committed state names, nor a live process claims;
        `manifest`: the current one, as read under the writer lock held (else read here)."""
        if manifest is None:
            names, manifest = self._current_manifest()
        else:
            names = {stored.name for stored in manifest.files.values()}  # what `named_files` reads of the same file
        keep = self._live_file_names(names, manifest, writer)
        entries = sorted(os.listdir(self.path))  # names, listed once (Path objects for every entry cost a write more)
        models = []
        if manifest is not None:
            named = named_model_folder(manifest.model.spec, self.path)
            models = unreferenced_model_entries(self.path, named, entries)
        files = []
        for name in entries:
            match = _GENERATION_FILE.match(name)
            if match and match.group(1) not in keep or name == f"{MANIFEST}.tmp":
                if match and in_use(self.path / match.group(1)):  # a merge in another process is making it
                    continue
                files.append(self.path / name)
        return models, files


class Generation:
    """The files of one write; `commit` makes them current by replacing the manifest."""

    def __init__(self, directory: IndexDirectory) -> None:
        self.directory = directory
        self.number = time.time_ns()
        self.committed = False
        self.created: list[Path] = []

    def path(self, role: str) -> Path:
        """A fresh path for this generation's file of `role` (documents, whitening or spool; vectors and
        vectors.<shard> in format 1)."""
        path = self.directory.path / f"{role}.{self.number}.{_SUFFIXES[role.partition('.')[0]]}"
        self.created.append(path)
        return path

    def commit(self, manifest: Manifest, paths: dict[str, Path | None]) -> None:
        """Name `paths` (role -> file) in `manifest` with their sizes and checksums, write it to a temporary file
        (with the old manifest's permissions), fsync, swap it into place, then remove the files it replaced."""
        files = {}
        for role, path in paths.items():
            if path is not None:
                file = self.directory.path / path.name
                fsync_path(file)
                if manifest.segmented and role == "documents":  # changed in place from now on
                    files[role] = StoredFile(path.name, None, None, in_place=True)
                else:
                    files[role] = StoredFile(path.name, file.stat().st_size, file_checksum(file))
        manifest = manifest.with_files(files)
        temporary = self.directory.path / f"{MANIFEST}.tmp"
        temporary.write_text(manifest.to_json(), encoding="utf-8")
        if self.directory.exists():
            shutil.copymode(self.directory.path / MANIFEST, temporary)
        fsync_path(temporary)
        os.replace(temporary, self.directory.path / MANIFEST)
        self.committed = True  # first thing after the swap: from here on these files are the index
        fsync_path(self.directory.path)
        self.directory.remove_unreferenced()

    def created_file(self, name: str) -> None:
        """Count a file made in the directory under its own name (a segment) among this generation's."""
        self.created.append(self.directory.path / name)

    def discard(self) -> None:
        """Remove this generation's files, except any the current manifest names: an interrupt that lands after
        the manifest swap but before `committed` is set must not delete the index it just committed."""
        try:
            named = self.directory.live_file_names()
        except IndexerError:
            named = set()
        for path in self.created:
            if path.name not in named:
                path.unlink(missing_ok=True)
                for suffix in ("-journal", "-wal", "-shm"):
                    Path(f"{path}{suffix}").unlink(missing_ok=True)


def _may_not_read(file: Path) -> bool:
    """Whether opening `file` (or, for a SQLite store, its -wal or -shm beside it) is refused for permissions. Only
    regular files are opened (a FIFO would block)."""
    for path in (file, Path(f"{file}-wal"), Path(f"{file}-shm")):
        try:
            if path.is_file():
                path.open("rb").close()
        except PermissionError:
            return True
        except OSError:
            continue
    return False


def _recorder(stored: StoredFile) -> str:
    """Where a file's size and checksum are recorded: the store for a segment, else the manifest."""
    return "the store" if stored.name.startswith(_IMMUTABLE) else "the manifest"


def _foreign_entries(path: Path) -> bool:
    return any(
        entry.name not in (LOCK, f"{MANIFEST}.tmp") and not _GENERATION_FILE.match(entry.name)
        for entry in path.iterdir()
    )
