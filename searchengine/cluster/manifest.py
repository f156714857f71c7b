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

FORMAT = 1


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
    def from_json(cls, data: dict[str, Any]) -> ClusterManifest:
        if data.get("format") != FORMAT:
            raise ClusterError(f"cluster manifest format {data.get('format')!r} is not {FORMAT}: rebuild the cluster")
        fields = {key: value for key, value in data.items() if key != "format"}
        fields["placement"] = tuple(tuple(CopyPlace(**place) for place in shard) for shard in fields["placement"])
        return cls(**fields)

    def with_placement(self, placement: tuple[tuple[CopyPlace, ...], ...]) -> ClusterManifest:
        """The manifest with its copies moved, one version later."""
        return replace(self, placement=placement, version=self.version + 1)


def new_build_id() -> str:
    """A name for a build's folders that no earlier build used."""
    return uuid.uuid4().hex[:12]


def copy_folder(local_root: str, node: str, name: str, build: str, shard: int) -> str:
    """A new folder for a copy of `shard` on `node`: under the node's own subfolder of `local_root`, named so that
    two copies on one node never share it."""
    return str(Path(local_root) / node / name / build / f"shard-{shard}-{uuid.uuid4().hex[:8]}")


def node_root(local_root: str, node: str) -> Path:
    """The folder that holds every copy on `node`: only an actor running on that node opens what is under it."""
    return Path(local_root) / node


def read_manifest(path: Path) -> ClusterManifest:
    """The manifest at `path`; a clear error when there is none."""
    try:
        return ClusterManifest.from_json(json.loads(Path(path).read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise ClusterError(f"no cluster index at {path}: build one first (ClusterIndex.build)") from None
    except (json.JSONDecodeError, TypeError, KeyError) as error:
        raise ClusterError(f"cluster manifest {path} cannot be read ({error}): rebuild the cluster") from None


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
