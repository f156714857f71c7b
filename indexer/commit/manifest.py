"""The index manifest (manifest.json) as typed records, read and written here only.

It says what an index holds (the model that made its vectors, the whitening, the FAISS type, counts, library
versions, build times) and which files are current, with their sizes and sha256 checksums. `Manifest.read` checks
every key and type (key by key: manifest_object.py), so a damaged or hand-edited manifest is one IndexerError naming
the file, the key and the fix, never a KeyError somewhere else. The JSON is format 1 as written since the first
release; the keys added later within it (count.tombstones, model.prompt, model.transforms, checksums, passages) are
optional, so every format-1 index still opens. File names must be plain names inside the index directory: no path
separators, no `.` or `..`.

A format-1 index built in shards (index.shards > 1, written only then) names one file per shard, roles `vectors.0` to
`vectors.<shards - 1>`, in place of `vectors`; each has its size and checksum like any other file. A reader
that predates shards refuses such a manifest (an unknown role) instead of searching part of the vectors.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from searchengine.indexer.commit.manifest_object import REBUILD, ManifestObject
from searchengine.indexer.errors import IndexerError

FORMAT_VERSION = 2
"""Format 2: the SQLite store, changed in place, is the commit point of every write and names the vector segments
(indexer/vectors/segments.py); the manifest names the store and the whitening. Format 1 (vector files named here, every
write a new generation) is still read, and converted on an index's first write."""
READABLE_FORMATS = (1, 2)
ROLES = ("vectors", "documents", "whitening")
"""The files a format-1 index may name; vectors and documents it always has (vectors as shards: `vector_roles`)."""
SEGMENT_ROLE = "segment"
"""Role prefix of a vector segment in a format-2 index's file list (`segment.<name>`), filled in from the store."""
ORIGINALS_ROLE = "originals"
"""The role of a segment's originals file is its segment's role and this: `segment.<n>.originals`."""
TEMPLATE_ROLE = "template"
"""The trained template's file name prefix (`template.<n>.faiss`) and, after SEGMENT_ROLE, its role:
`segment.template` (indexer/vectors/template.py)."""


@dataclass(frozen=True)
class PromptRecord:
    """The template of prompt pooling the index was built with (PromptBERT)."""

    template: str
    denoise: bool


INSIDE_INDEX = "./"
"""How a model spec names a model directory kept inside the index directory (an adapted model): relative to the
index, so the index can be moved or copied and still loads its own model."""


def model_location(spec: str, index: Path) -> str:
    """Where to load the model `spec` from: a spec relative to the index ("./adapted-...") joined to `index`;
    any other spec (a directory, a Hub id, 'default') as it is."""
    if spec.startswith(INSIDE_INDEX) and is_plain_name(spec[len(INSIDE_INDEX) :]):
        return str(index / spec[len(INSIDE_INDEX) :])
    return spec


def spec_inside(spec: str, index: Path) -> str:
    """`spec` as the manifest records it: relative to the index when it is a directory directly inside it."""
    path = Path(spec)
    if path.is_absolute() and path.parent.resolve() == index.resolve():
        return INSIDE_INDEX + path.name
    return spec


@dataclass(frozen=True)
class ModelIdentity:
    """The model that made the vectors: enough to load it again and to tell a different one apart."""

    name: str
    spec: str
    """How to find it again: 'default', an absolute directory, a Hub id, or './NAME' for a model directory inside
    the index directory (an adapted model; `model_location`)."""
    fingerprint: str
    pooling: str
    normalize: bool
    dimension: int
    """Size of the model's output vectors (before whitening)."""
    max_seq_length: int
    prompt: PromptRecord | None = None
    transforms: tuple[str, ...] = ()
    """The model's own post-processing modules, described ('whitening (2_Dense)')."""


@dataclass(frozen=True)
class WhiteningFit:
    """The whitening-k transform fitted for the index."""

    k: int
    fit_count: int
    """Distinct texts it was fitted on."""


@dataclass(frozen=True)
class PassageSplitting:
    """How the index splits a document longer than the model's limit: into passages of at most `tokens` tokens,
    each its own vector, consecutive ones sharing up to `overlap` tokens. Recorded at build, so `add` splits the
    same way."""

    tokens: int
    overlap: int
    headings: bool = False
    """Each passage is embedded after its heading (Document.headings), its window shortened by the heading's
    tokens; False in every index written before passage headings existed, which `add` and `sync` keep embedding
    as before."""


@dataclass(frozen=True)
class VectorIndexSpec:
    """The FAISS index: its factory string, metric and the dimension of the vectors it stores."""

    type: str
    metric: str
    dimension: int
    shards: int = 1
    """FAISS indexes the vectors are split over (document id d in shard d % shards); 1: one unsharded file."""


def vector_roles(shards: int) -> list[str]:
    """The manifest roles of the vector files: `vectors` for one index, `vectors.0` ... for shards."""
    return ["vectors"] if shards == 1 else [f"vectors.{shard}" for shard in range(shards)]


@dataclass(frozen=True)
class Counts:
    vectors: int
    """Searchable vectors: one per stored document, or per passage of a document split into passages (indexes
    older versions wrote: one per distinct text)."""
    documents: int
    """Documents stored, texts repeated by several documents included."""
    tombstones: int = 0
    """Vectors of deleted documents kept until `compact` (index types that cannot delete in place)."""


@dataclass(frozen=True)
class StoredFile:
    """One current file of the index: its name in the index directory, its size and checksum when committed."""

    name: str
    size: int | None
    """None for a format-2 index's store as its manifest names it (the store fills in what it measures)."""
    checksum: str | None = None
    """'sha256:<hex>' of the file's bytes; None in manifests written before checksums were recorded, and for a
    format-2 store."""
    in_place: bool = False
    """A file changed in place (a format-2 store): no fixed size or checksum; SQLite checks its own pages."""


@dataclass(frozen=True)
class Manifest:
    """What an index holds and which files are current. `files` is filled in when a generation is committed."""

    model: ModelIdentity
    whitening: WhiteningFit | None
    index: VectorIndexSpec
    count: Counts
    """Format 2 keeps counts in the store (searchengine.indexer.commit.index_state fills them in when it reads)."""
    created_at: str
    updated_at: str
    versions: dict[str, str]
    """Library versions that built (or last encoded into) the index."""
    files: dict[str, StoredFile] = field(default_factory=dict)
    """Role ('vectors', 'documents', 'whitening') -> the current file."""
    passages: PassageSplitting | None = None
    """How long documents are split into passages; None: each document is one vector, embedded from its
    beginning (and every index written before passages existed)."""
    format_version: int = FORMAT_VERSION

    @property
    def segmented(self) -> bool:
        """True for format 2: vectors in segments that the store names, writes committed in place."""
        return self.format_version >= 2

    @property
    def segment_files(self) -> dict[str, StoredFile]:
        """Every file of the live vector segments by role (`segment.<n>`, and `segment.<n>.originals` where it keeps
        its original vectors), as filled in from the store (format 2)."""
        return {role: stored for role, stored in self.files.items() if role.startswith(SEGMENT_ROLE)}

    @property
    def vector_segments(self) -> dict[str, StoredFile]:
        """The live vector segments' FAISS files by role (`segment.<n>`), their originals and the template left out."""
        return {
            role: stored
            for role, stored in self.segment_files.items()
            if not role.endswith((ORIGINALS_ROLE, TEMPLATE_ROLE))
        }

    @property
    def own_files(self) -> dict[str, StoredFile]:
        """The files the manifest itself names (the store, the whitening), segments left out."""
        return {role: stored for role, stored in self.files.items() if not role.startswith(SEGMENT_ROLE)}

    @property
    def size_on_disk(self) -> int:
        """Bytes of all current files (for format 2 as last filled in from the store and the directory)."""
        return sum(stored.size or 0 for stored in self.files.values())

    def with_files(self, files: dict[str, StoredFile]) -> Manifest:
        return replace(self, files=dict(files))

    def as_json_dict(self) -> dict[str, Any]:
        """The manifest as its JSON object, keys in the order written to disk (what `info --json` prints)."""
        model: dict[str, Any] = {
            "name": self.model.name,
            "spec": self.model.spec,
            "fingerprint": self.model.fingerprint,
            "pooling": self.model.pooling,
            "normalize": self.model.normalize,
            "dimension": self.model.dimension,
            "max_seq_length": self.model.max_seq_length,
        }
        if self.model.prompt is not None:
            model["prompt"] = {"template": self.model.prompt.template, "denoise": self.model.prompt.denoise}
        if self.model.transforms:
            model["transforms"] = list(self.model.transforms)
        whitening = self.whitening
        passages = None if self.passages is None else _passages_json(self.passages)
        checksums = {role: stored.checksum for role, stored in self.files.items() if stored.checksum}
        if self.segmented:
            return self._format_2_json(model, passages)
        return {
            "format_version": self.format_version,
            "model": model,
            "whitening": None if whitening is None else {"k": whitening.k, "fit_count": whitening.fit_count},
            "index": {
                "type": self.index.type,
                "metric": self.index.metric,
                "dimension": self.index.dimension,
                **({"shards": self.index.shards} if self.index.shards > 1 else {}),
            },
            "count": {
                "vectors": self.count.vectors,
                "documents": self.count.documents,
                "tombstones": self.count.tombstones,
            },
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "versions": dict(self.versions),
            "files": {role: stored.name for role, stored in self.files.items()},
            "sizes": {role: stored.size for role, stored in self.files.items()},
            **({"checksums": checksums} if checksums else {}),
            **({"passages": passages} if passages else {}),
        }

    def _format_2_json(self, model: dict[str, Any], passages: dict[str, Any] | None) -> dict[str, Any]:
        """Format 2 on disk: what changes only with a rebuild. Counts, update time and segments live in the store;
        `info --json` adds them (searchengine.indexer.commit.index_state)."""
        own = self.own_files
        whitening = self.whitening
        return {
            "format_version": self.format_version,
            "model": model,
            "whitening": None if whitening is None else {"k": whitening.k, "fit_count": whitening.fit_count},
            "index": {"type": self.index.type, "metric": self.index.metric, "dimension": self.index.dimension},
            "created_at": self.created_at,
            "versions": dict(self.versions),
            "files": {role: stored.name for role, stored in own.items()},
            "sizes": {role: stored.size for role, stored in own.items() if not stored.in_place},
            "checksums": {role: stored.checksum for role, stored in own.items() if stored.checksum},
            **({"passages": passages} if passages else {}),
        }

    def state_json(self) -> dict[str, Any]:
        """What a format-2 store says beside the manifest (`info --json`): counts from the data, the last update,
        the versions that last wrote, and the live segments."""
        files = self.segment_files
        segments = [
            {"file": s.name, "size": s.size, "checksum": s.checksum}
            | (
                {"originals": {"file": o.name, "size": o.size, "checksum": o.checksum}}
                if (o := files.get(f"{role}.{ORIGINALS_ROLE}")) is not None
                else {}
            )
            for role, s in self.vector_segments.items()
        ]
        return {
            "count": {
                "vectors": self.count.vectors,
                "documents": self.count.documents,
                "tombstones": self.count.tombstones,
            },
            "updated_at": self.updated_at,
            "versions": dict(self.versions),
            "segments": segments,
            "size_on_disk": self.size_on_disk,
        }

    def to_json(self) -> str:
        return json.dumps(self.as_json_dict(), indent=2) + "\n"

    @classmethod
    def read(cls, path: Path) -> Manifest:
        """Read and check the manifest at `path` (an existing file)."""
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise IndexerError(f"{path} is corrupt (it is not UTF-8 text); {REBUILD}") from None
        return cls.from_json(text, path)

    @classmethod
    def from_json(cls, text: str, path: Path) -> Manifest:
        """Parse and check a manifest's text; `path` names it in errors. Raises IndexerError on anything wrong."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise IndexerError(f"{path} is corrupt (not JSON: {exc}); {REBUILD}") from None
        top = ManifestObject(data, "", path)
        version = top.get("format_version", "a format number")
        formats = ", ".join(map(str, READABLE_FORMATS))
        if not isinstance(version, int) or isinstance(version, bool) or version < min(READABLE_FORMATS):
            top.fail("format_version", f"should be one of the format numbers {formats}", version)
        if version not in READABLE_FORMATS:
            raise IndexerError(
                f"{path.parent} uses index format {version!r}, this searchengine reads formats {formats}: it was "
                "written by a newer searchengine; upgrade searchengine (pip install -U searchengine), or rebuild the "
                "index with this version"
            )
        whitening = top.object("whitening", optional=True)
        passages = top.object("passages", optional=True)
        index = _vector_index_spec(top.object("index"))
        files = _files(top, index.shards, version)
        if (whitening is None) == ("whitening" in files):
            top.fail("whitening", "and files.whitening disagree: an index has both or neither")
        return cls(
            model=_model_identity(top.object("model")),
            whitening=None
            if whitening is None
            else WhiteningFit(k=whitening.integer("k", minimum=1), fit_count=whitening.integer("fit_count")),
            index=index,
            count=_counts(top.object("count")) if version == 1 else Counts(0, 0),
            created_at=top.string("created_at"),
            updated_at=top.string("updated_at") if version == 1 else top.string("created_at"),
            versions=top.object("versions").mapping(str, "a string"),
            files=files,
            passages=None
            if passages is None
            else PassageSplitting(
                passages.integer("tokens", minimum=1), passages.integer("overlap"), _headings(passages)
            ),
            format_version=version,
        )


def named_files(path: Path) -> set[str]:
    """The file names the manifest at `path` names, read from its 'files' alone: what a writer must keep while it
    rebuilds over an index whose other manifest keys may be damaged."""
    try:
        files = json.loads(path.read_text(encoding="utf-8"))["files"]
        names = set(files.values())
    except (ValueError, KeyError, TypeError, AttributeError):
        raise IndexerError(f"{path} is corrupt; remove the directory and rebuild") from None
    if not all(isinstance(name, str) and is_plain_name(name) for name in names):
        raise IndexerError(
            f"{path} is corrupt: it names a file outside the index directory; remove the directory and rebuild"
        )
    return names


def is_plain_name(name: str) -> bool:
    """True for a file name that stays inside the directory it is joined to: no separators, not '.' or '..'."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and "\0" not in name


def _model_identity(model: ManifestObject) -> ModelIdentity:
    prompt = model.object("prompt", optional=True)
    transforms = model.typed("transforms", list, "a list of strings", optional=True) or []
    if not all(isinstance(item, str) for item in transforms):
        model.fail("transforms", "should be a list of strings", transforms)
    return ModelIdentity(
        name=model.string("name"),
        spec=model.string("spec"),
        fingerprint=model.string("fingerprint"),
        pooling=model.string("pooling"),
        normalize=model.boolean("normalize"),
        dimension=model.integer("dimension", minimum=1),
        max_seq_length=model.integer("max_seq_length", minimum=1),
        prompt=None if prompt is None else PromptRecord(prompt.string("template"), prompt.boolean("denoise")),
        transforms=tuple(transforms),
    )


def _passages_json(passages: PassageSplitting) -> dict[str, Any]:
    """The manifest's `passages`: `headings` written only when on, so an index without them keeps the manifest
    older versions wrote (and read)."""
    return {"tokens": passages.tokens, "overlap": passages.overlap, **({"headings": True} if passages.headings else {})}


def _headings(passages: ManifestObject) -> bool:
    """Whether passages are embedded after their headings: false where the manifest predates the setting."""
    return bool(passages.typed("headings", bool, "true or false", optional=True))


def _vector_index_spec(index: ManifestObject) -> VectorIndexSpec:
    return VectorIndexSpec(
        type=index.string("type"),
        metric=index.string("metric"),
        dimension=index.integer("dimension", minimum=1),
        shards=index.integer("shards", minimum=1, optional=True) or 1,
    )


def _counts(count: ManifestObject) -> Counts:
    return Counts(
        vectors=count.integer("vectors"),
        documents=count.integer("documents"),
        tombstones=count.integer("tombstones", optional=True) or 0,
    )


def _files(top: ManifestObject, shards: int, version: int) -> dict[str, StoredFile]:
    names = top.object("files").mapping(str, "a file name")
    sizes = top.object("sizes").mapping(int, "a size in bytes")
    checksums_object = top.object("checksums", optional=True)
    checksums = {} if checksums_object is None else checksums_object.mapping(str, "'sha256:' and a hex digest")
    vectors = vector_roles(shards) if version == 1 else []
    allowed = [*vectors, *ROLES[1:]]
    in_place = () if version == 1 else ("documents",)
    """Files changed in place, which have no fixed size or checksum."""
    for role, name in names.items():
        if role not in allowed:
            top.fail(f"files.{role}", f"is not a file an index has (those are {', '.join(allowed)})", name)
        if not is_plain_name(name):
            top.fail(f"files.{role}", "should be a file name in the index directory (no '/', '.' or '..')", name)
        if role not in sizes and role not in in_place:
            top.fail(f"sizes.{role}", "is missing")
    for role in (*vectors, "documents"):
        if role not in names:
            top.fail(f"files.{role}", "is missing")
    for role, checksum in checksums.items():
        if role not in names or role in in_place or not re.fullmatch(r"sha256:[0-9a-f]{64}", checksum):
            top.fail(f"checksums.{role}", "should be 'sha256:' and 64 hex digits of a file the index names", checksum)
    if version >= 2 and "whitening" in names and "whitening" not in checksums:
        top.fail("checksums.whitening", "is missing: every fixed file of a format-2 index has its checksum")
    return {
        role: StoredFile(name, None if role in in_place else sizes[role], checksums.get(role), role in in_place)
        for role, name in names.items()
    }
