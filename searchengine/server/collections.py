"""Collections: the index directories directly under one folder, served by one process under their folder names
(`searchengine serve --collections FOLDER`). Each is opened on its first request as a ServedIndex of its own (its
model, settings, reader and writer threads); a model two collections share is loaded once; a collection no request
used for `idle_close_s` seconds is closed, so memory follows the collections in use, and opened again when asked."""

from __future__ import annotations

import contextlib
import re
import shutil
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchengine.errors import SearchEngineError, UnknownCollectionError
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.server.limits import IDLE_CLOSE_S
from searchengine.server.served_index import ServedIndex

if TYPE_CHECKING:
    from searchengine.encoding.encoder import Encoder, EncoderSpeed
    from searchengine.indexer.commit.manifest import Manifest

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""A collection's name: its folder's, letters, digits, '_', '.' and '-', 64 at most, not starting with '.' or '-'."""
REMOVED = re.compile(r"\.removed-.+-[0-9a-f]{32}")
"""A deleted collection's folder, renamed so before it is removed (`.removed-NAME-UUID`: no collection's name starts
with '.'); one a crash left is removed when collections are next served (`Collections`)."""


def checked_name(name: str) -> str:
    """`name` when it can name a collection's folder; else SearchEngineError saying what a name may hold."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise SearchEngineError(
            f"{name!r} cannot name a collection: use up to 64 letters, digits, '_', '.' and '-', starting with a "
            "letter or digit (the folder's name)"
        )
    return name


class _NameLock:
    """The lock of one collection's name, weakly kept by `Collections._naming`: it lasts while a request holds it
    (a `with` block keeps its manager) or waits for it."""

    __slots__ = ("_lock", "__weakref__")

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> _NameLock:
        self._lock.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


@dataclass
class _Open:
    index: ServedIndex
    users: int = 0
    last_used: float = field(default_factory=time.monotonic)


class Collections:
    """The collections under `folder`; `opened(name)` lends one to a request, `close()` closes them all.

    open_index: how a collection is opened (path, a loaded Encoder of its model or None), e.g. with the server's
    speed, rerankers and reader count; idle_close_s: how long an unused collection stays open (None: forever)."""

    def __init__(
        self,
        folder: Path,
        open_index: Callable[[Path, Encoder | None], ServedIndex],
        idle_close_s: float | None = IDLE_CLOSE_S,
    ) -> None:
        if not folder.is_dir():
            raise SearchEngineError(f"{folder} is not a folder: make it, or name the folder that holds the indexes")
        self.folder = folder
        for leftover in folder.iterdir():  # a DELETE that a crash stopped between its rename and its removal
            if REMOVED.fullmatch(leftover.name):
                shutil.rmtree(leftover, ignore_errors=True)
        self._open_index = open_index
        self.idle_close_s = idle_close_s
        self._open: dict[str, _Open] = {}
        self._models: weakref.WeakValueDictionary[tuple, Encoder] = weakref.WeakValueDictionary()
        """Loaded models by identity, kept while an open collection uses them."""
        self._lock = threading.Lock()
        self._naming: weakref.WeakValueDictionary[str, _NameLock] = weakref.WeakValueDictionary()
        """One lock a name (`_name_lock`), held while its collection is opened, made or deleted: of two creates of one
        name one makes it and the other is refused, and a request waits for an open, a create or a delete under way
        (the makes of other names go on meanwhile: a create may load, or download, its model). Kept only while a
        request holds or waits for it: a lock for every name ever asked for grew without end."""
        self._stop = threading.Event()
        self._reaper = None
        if idle_close_s is not None:
            self._reaper = threading.Thread(target=self._close_idle_loop, name="searchengine-idle-close", daemon=True)
            self._reaper.start()

    def names(self) -> list[str]:
        """The collections there are: the index directories directly under the folder, by name."""
        return sorted(p.name for p in self.folder.iterdir() if NAME.fullmatch(p.name) and IndexDirectory(p).exists())

    def listing(self) -> list[dict[str, Any]]:
        """Each collection's name and documents, read from its manifest (opening none)."""
        return [{"name": name, "documents": manifest.count.documents} for name, manifest in self.manifests().items()]

    def manifests(self) -> dict[str, Manifest]:
        """Each collection's manifest (its model, counts, when it was built) by name, opening none."""
        read = {}
        for name in self.names():
            with contextlib.suppress(SearchEngineError, OSError):  # removed or being replaced meanwhile
                read[name] = IndexDirectory(self.folder / name).read_manifest()
        return read

    @property
    def open_names(self) -> list[str]:
        """The collections open now."""
        with self._lock:
            return sorted(self._open)

    @contextlib.contextmanager
    def opened(self, name: str) -> Iterator[ServedIndex]:
        """The collection `name`, opened if it is not (UnknownCollectionError, a 404, when there is none), kept open
        until the block ends."""
        entry = self._acquire(checked_name(name))
        try:
            yield entry.index
        finally:
            with self._lock:
                entry.users -= 1
                entry.last_used = time.monotonic()

    @contextlib.contextmanager
    def held_open(self) -> Iterator[dict[str, ServedIndex]]:
        """The collections open now by name, kept open until the block ends; opens none, and does not count as a
        use (a /metrics scrape keeps no collection from closing when idle)."""
        with self._lock:
            entries = dict(self._open)
            for entry in entries.values():
                entry.users += 1
        try:
            yield {name: entry.index for name, entry in entries.items()}
        finally:
            with self._lock:
                for entry in entries.values():
                    entry.users -= 1

    def _acquire(self, name: str) -> _Open:
        with self._lock:
            entry = self._open.get(name)
            if entry is not None:
                entry.users += 1
                return entry
        with self._name_lock(name):  # one thread opens a collection; others asking for it meanwhile wait for that one
            with self._lock:
                entry = self._open.get(name)
                if entry is not None:
                    entry.users += 1
                    return entry
            entry = _Open(self._load(name), users=1)
            with self._lock:
                self._open[name] = entry
            return entry

    def _load(self, name: str) -> ServedIndex:
        """Open the collection `name`, with its model loaded once per process (shared with the collections that
        use the same one)."""
        path = self.folder / name
        directory = IndexDirectory(path)
        if not directory.exists():
            raise UnknownCollectionError(f"no collection named {name!r}; GET /collections lists them")
        key = _model_key(directory)
        try:
            index = self._open_index(path, self._models.get(key))
        except SearchEngineError:
            if not directory.exists():  # deleted while it opened
                raise UnknownCollectionError(f"no collection named {name!r}; GET /collections lists them") from None
            raise
        with self._lock:  # create reads _models under it: a dict changing size while read raises
            self._models.setdefault(key, index.encoder)
        return index

    def create(self, name: str, make: Callable[[Path, Encoder | None], None], model: str | None) -> None:
        """Make the empty collection `name` with `make(path, a loaded Encoder of `model` or None)`; refused when
        there is one, or when something else has its name (a create that a crash killed before its commit is made
        over: it left the name refused by create, and unknown to DELETE)."""
        path = self.folder / checked_name(name)
        directory = IndexDirectory(path)
        with self._name_lock(name):
            if directory.exists():
                raise SearchEngineError(
                    f"a collection named {name!r} exists already; delete it first or pick another name"
                )
            # Something else of the name (no collection: DELETE answers 404, and never removes it from here), but for
            # what a create killed before its commit left, which the build replaces.
            if path.exists() and not directory.interrupted():
                raise SearchEngineError(
                    f"{name!r} is taken by something in the collections' folder that holds no index (a folder or file "
                    f"of that name); remove it on the server, or pick another name"
                )
            with self._lock:
                loaded = next((encoder for key, encoder in self._models.items() if key[0] == (model or "default")), None)
            make(path, loaded)

    def delete(self, name: str) -> None:
        """Close the collection `name` and remove its folder (UnknownCollectionError when there is none). The folder is
        renamed out of the way first, so that from then on a request for the collection gets a 404 (it got a 400
        about an interrupted build while the folder was being removed) and its name can be made again. An open of it
        under way ends first and is closed here (it was kept open: a collection made again under the name was served
        by the deleted one's state, its model and last generation)."""
        path = self.folder / checked_name(name)
        with self._name_lock(name):  # an open under way ends first, and is closed here: else it was kept, and served on
            if not IndexDirectory(path).exists():
                raise UnknownCollectionError(f"no collection named {name!r}; GET /collections lists them")
            removed = path.with_name(f".removed-{name}-{uuid.uuid4().hex}")  # of the form REMOVED
            path.rename(removed)
            with self._lock:
                entry = self._open.pop(name, None)
        if entry is not None:
            entry.index.close()
        shutil.rmtree(removed)

    def _name_lock(self, name: str) -> _NameLock:
        """The lock of the collection `name` (`_naming`): the one a request holds or waits for, else a new one."""
        with self._lock:
            held = self._naming.get(name)
            if held is None:
                held = self._naming[name] = _NameLock()
            return held

    def close_idle(self, now: float | None = None) -> list[str]:
        """Close the collections no request has used for idle_close_s seconds; returns their names."""
        if self.idle_close_s is None:
            return []
        now = time.monotonic() if now is None else now
        with self._lock:
            idle = [
                name
                for name, entry in self._open.items()
                if entry.users == 0 and now - entry.last_used >= self.idle_close_s
            ]
            closing = [self._open.pop(name) for name in idle]
        for entry in closing:
            entry.index.close()
        return idle

    def _close_idle_loop(self) -> None:
        interval = max(0.05, min(30.0, (self.idle_close_s or 0) / 4))
        while not self._stop.wait(interval):
            self.close_idle()

    def close(self) -> None:
        """Stop closing idle collections and close every open one."""
        self._stop.set()
        if self._reaper is not None:
            self._reaper.join()
        with self._lock:
            entries = list(self._open.values())
            self._open.clear()
        for entry in entries:
            entry.index.close()


def _model_key(directory: IndexDirectory) -> tuple:
    """What tells one loaded model from another: the spec ("default", a directory, a Hub id) where it names the
    same model for every index, with the fingerprint, pooling and prompt the index was built with."""
    model = directory.read_settings().model
    spec = model.spec if not model.spec.startswith("./") else str(directory.path / model.spec)
    return (spec, model.fingerprint, model.pooling, model.prompt, model.normalize)


def served_collections(
    folder: Path,
    *,
    speed: EncoderSpeed | None = None,
    rerank: Sequence[str] = (),
    max_batch: int = 64,
    readers: int = 1,
    idle_close_s: float | None = IDLE_CLOSE_S,
) -> Collections:
    """The collections under `folder`, each opened as `searchengine serve` opens an index with these options."""

    def open_index(path: Path, encoder: Encoder | None) -> ServedIndex:
        return ServedIndex(path, speed=speed, encoder=encoder, rerank=rerank, max_batch=max_batch, readers=readers)

    return Collections(folder, open_index, idle_close_s)
