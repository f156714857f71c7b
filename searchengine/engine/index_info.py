"""What an index holds, as `searchengine info` shows it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from searchengine.indexer.commit.manifest import INSIDE_INDEX, Manifest, PassageSplitting, model_location
from searchengine.indexer.tables.store import ClusteringRecord, DocumentStore


@dataclass(frozen=True)
class IndexInfo:
    """What an index holds, as `searchengine info` shows it."""

    path: str
    documents: int
    """Documents stored, each its own row (texts repeated by several documents included)."""
    vectors: int
    """Searchable vectors: one per document, or per passage of a document split into passages."""
    model: str
    model_fingerprint: str
    pooling: str
    dimension: int
    """Dimension of the stored vectors (k when whitened)."""
    model_dimension: int
    whitening: int | None
    index_type: str
    size_bytes: int
    created_at: str
    updated_at: str
    versions: dict[str, str]
    clustering: ClusteringRecord | None = None
    """How the stored clustering was made (`searchengine cluster`), if the index has one."""
    duplicates: int = 0
    """Documents marked near-duplicates of earlier ones (`searchengine mine --dedupe`)."""
    repeats: int = 0
    """Documents whose exact text an earlier document has (each is still its own document)."""
    keyword_index: bool = False
    """Whether the index can search by keyword (keyword and hybrid modes); `compact()` adds it to older indexes."""
    passages: PassageSplitting | None = None
    """How documents longer than the model's limit are split into passages (None: embedded from their start)."""
    shards: int = 1
    """FAISS indexes the vectors are in, searched together: the segments of the index (indexer/vectors/segments.py), or
    the shards of an index written before segments."""


def index_info(path: str, manifest: Manifest, store: DocumentStore, keyword_index: bool) -> IndexInfo:
    """The IndexInfo of the index in `path`, from its loaded manifest and store."""
    return IndexInfo(
        path=path,
        documents=manifest.count.documents,
        vectors=manifest.count.vectors,
        model=_model_name(manifest, path),
        model_fingerprint=manifest.model.fingerprint,
        pooling=manifest.model.pooling,
        dimension=manifest.index.dimension,
        model_dimension=manifest.model.dimension,
        whitening=None if manifest.whitening is None else manifest.whitening.k,
        index_type=manifest.index.type,
        size_bytes=manifest.size_on_disk,
        created_at=manifest.created_at,
        updated_at=manifest.updated_at,
        versions=dict(manifest.versions),
        clustering=store.clustering.record(),
        duplicates=len(store.duplicates.marks()),
        repeats=store.documents.repeats(),
        keyword_index=keyword_index,
        passages=manifest.passages,
        shards=len(manifest.vector_segments) if manifest.segmented else manifest.index.shards,
    )


def _model_name(manifest: Manifest, path: str) -> str:
    """The model as the index loads it now: a model kept inside the index (an adapted one) by its place in the
    index directory where it is now (the recorded name is the folder it was trained in, before any move); any
    other by its recorded name."""
    spec = manifest.model.spec
    return model_location(spec, Path(path).resolve()) if spec.startswith(INSIDE_INDEX) else manifest.model.name
