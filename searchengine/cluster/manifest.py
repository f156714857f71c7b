"""The cluster manifest: a small JSON file that says what a cluster index is (its shards, fixed at creation; where
each shard's copies live, as a node and a folder on that node's own disk; the model and the build's settings) and
which build is current. It is written last and whole (a temporary file, fsynced, renamed over the old one), so a
reader sees the cluster as of one commit: a build that dies leaves the previous manifest, or none."""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from searchengine.cluster.errors import ClusterError
from searchengine.indexer.commit.durable_files import fsync_path
from searchengine.indexer.commit.manifest_object import ManifestObject
from searchengine.indexer.errors import IndexerError

FORMAT = 1
REBUILD_CLUSTER = "rebuild the cluster (`searchengine cluster-index build`)"
"""The fix a message about a damaged cluster manifest ends with."""


@dataclass(frozen=True)
class CopyPlace:
    """Where one copy of a shard lives: a Ray node and an index directory on that node's local disk."""

    node: str
    folder: str


@dataclass(frozen=True)
class ClusterManifest:
    """What a cluster index is; `version` grows by one at every change of the manifest."""

    name: str
    shards: int
    copies: int
    """Copies of each shard asked for (R); a shard may hold fewer while a lost one is rebuilt."""
    local_root: str
    """The folder every node keeps its shard copies under (on its own disk), each node in its own subfolder."""
    model: str
    build: str
    """The build the copies' folders belong to (a new build writes new folders, so the old stay whole)."""
    placement: tuple[tuple[CopyPlace, ...], ...]
    """Each shard's copies."""
    encoder_options: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of the Encoder that embeds (e.g. {"precision": "fp32"})."""
    settings: dict[str, Any] = field(default_factory=dict)
    """The build's settings (index type, id field)."""
    version: int = 1

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, **asdict(self)}

    @classmethod
    def from_json(cls, data: object, path: Path) -> ClusterManifest:
        """The manifest in `data` (read from `path`, named in errors), every key checked: a missing key, a value of
        the wrong type, or a placement that does not give each of the `shards` at least one copy is one error naming
        the key (an IndexerError, which read_manifest says as a ClusterError), never a manifest that fails later:
        with a shard left out, its writes would go nowhere or to another shard."""
        top = ManifestObject(data, "", path, REBUILD_CLUSTER)
        found = top.get("format", "a whole number")
        if found != FORMAT:
            newer = isinstance(found, int) and not isinstance(found, bool) and found > FORMAT
            raise ClusterError(
                f"cluster manifest {path} has format {found!r}, this searchengine reads format {FORMAT}: "
                + ("it was written by a newer searchengine; upgrade searchengine (pip install -U searchengine)"
                   if newer else REBUILD_CLUSTER)
            )  # fmt: skip
        shards = top.integer("shards", minimum=1)
        local_root = top.string("local_root")
        placement = top.typed("placement", list, "a list of each shard's copies")
        if len(placement) != shards:
            top.fail("placement", f"lists {len(placement)} shards; it should list the copies of each of the {shards}")
        return cls(
            name=top.string("name"),
            shards=shards,
            copies=top.integer("copies", minimum=1),
            local_root=local_root,
            model=top.string("model"),
            build=top.string("build"),
            placement=tuple(_shard_places(top, shard, copies, local_root) for shard, copies in enumerate(placement)),
            encoder_options=top.object("encoder_options").data,
            settings=top.object("settings").data,
            version=top.integer("version", minimum=1),
        )

    def with_placement(self, placement: tuple[tuple[CopyPlace, ...], ...]) -> ClusterManifest:
        """The manifest with its copies moved, one version later."""
        return replace(self, placement=placement, version=self.version + 1)


def _shard_places(top: ManifestObject, shard: int, copies: object, local_root: str) -> tuple[CopyPlace, ...]:
    """The copies of `shard` as the manifest `top` lists them: at least one, each a node and a folder under that
    node's folder of `local_root` (a shard with none has no copy to answer for it, nor one to rebuild a copy from;
    a copy refuses any other folder, so one named elsewhere could never be started, and heal said nothing)."""
    key = f"placement.{shard}"
    if not isinstance(copies, list) or not copies:
        top.fail(key, "should list at least one copy of the shard, each a node and a folder", copies)
    places = []
    for copy, listed in enumerate(copies):
        place = ManifestObject(listed, f"{key}.{copy}", top.path, top.fix)
        node, folder = place.string("node"), place.string("folder")
        own = os.path.normpath(node_root(local_root, node))
        if os.path.normpath(folder) == own or not os.path.normpath(folder).startswith(own + os.sep):
            place.fail("folder", f"should be a folder under {own}, node {node}'s folder of local_root", folder)
        places.append(CopyPlace(node, folder))
    return tuple(places)


def new_build_id() -> str:
    """A name for a build's folders that no earlier build used."""
    return uuid.uuid4().hex[:12]


def copy_folder(local_root: str, node: str, name: str, build: str, shard: int) -> str:
    """A new folder for a copy of `shard` on `node`: under the node's own subfolder of `local_root`, named so that
    two copies on one node never share it."""
    return str(Path(local_root) / node / name / build / f"shard-{shard}-{uuid.uuid4().hex[:8]}")


def of_build(manifest: ClusterManifest, folder: str) -> bool:
    """Whether `folder` is a copy's folder of `manifest`'s build, as copy_folder lays them out (LOCAL_ROOT/NODE/NAME/
    BUILD/shard-...): what tells this build's copies from another build's or another cluster index's on one Ray
    cluster."""
    root = Path(os.path.normpath(manifest.local_root)).parts
    parts = Path(os.path.normpath(folder)).parts
    return len(parts) == len(root) + 4 and parts[: len(root)] == root and parts[-3:-1] == (manifest.name, manifest.build)


def node_root(local_root: str, node: str) -> Path:
    """The folder that holds every copy on `node`: only an actor running on that node opens what is under it."""
    return Path(local_root) / node


def read_manifest(path: Path) -> ClusterManifest:
    """The manifest at `path`; one clear ClusterError when there is none, or it is not one (not JSON, a key
    missing or of the wrong type, a shard without copies, another format)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return ClusterManifest.from_json(data, Path(path))
    except (FileNotFoundError, NotADirectoryError):
        raise ClusterError(
            f"no cluster index at {path}: build one first (`searchengine cluster-index build`, or build_cluster)"
        ) from None
    except IsADirectoryError:
        raise ClusterError(f"{path} is a folder, not a cluster manifest: give the JSON file its build wrote") from None
    except ValueError as error:  # not UTF-8, or not JSON
        raise ClusterError(f"cluster manifest {path} cannot be read ({error}): {REBUILD_CLUSTER}") from None
    except IndexerError as error:  # a key missing or of the wrong type: said as a cluster's error
        raise ClusterError(str(error)) from None


def refuse_unwritable_manifest(path: Path) -> None:
    """ClusterError when no manifest can be written at `path`: a folder there, a file where one of its folders
    should be, or a folder this process may not write (or on a read-only disk). A build checks it before it starts
    any copy: a manifest it cannot write otherwise failed it only at its commit, after every copy was built, with the
    operating system's error and the copies' folders left behind."""
    path = Path(path)
    if path.is_dir():
        raise ClusterError(f"{path} is a folder: give the manifest a file's path, e.g. {path / 'cluster.json'}")
    folder = next(folder for folder in (path.parent, *path.parent.parents) if folder.exists())
    if not folder.is_dir():
        raise ClusterError(f"{folder} is a file, so the manifest {path} cannot be written under it: give another path")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ClusterError(
            f"the manifest {path} cannot be written: {folder} may not be written by this user (or is on a read-only "
            "disk); give a path in a folder this user may write"
        )


def write_manifest(path: Path, manifest: ClusterManifest) -> None:
    """Write `manifest` to `path` as one commit: a temporary file beside it, fsynced, renamed over the old one,
    and the folder fsynced, so a crash leaves the old manifest or the new one, never half of either."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with temporary.open("w", encoding="utf-8") as file:
        json.dump(manifest.to_json(), file, indent=1)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    fsync_path(path.parent)
