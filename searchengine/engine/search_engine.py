"""SearchEngine: the Python API over an index directory (encoder + whitening + FAISS + SQLite store)."""

from __future__ import annotations

import contextlib
import functools
import math
import numbers
import os
import weakref
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from searchengine.analysis.cluster_settings import ClusterMethod, ClusterSettings
from searchengine.analysis.clustering import Cluster, Clustering, cluster_index, read_clustering
from searchengine.analysis.mining_request import MiningMethod
from searchengine.analysis.paraphrase_mining import Pair, dedupe_index, mine_documents, with_texts
from searchengine.encoding.passages import PASSAGE_HEADINGS_BY_DEFAULT, PASSAGES_BY_DEFAULT
from searchengine.encoding.precision import BULK_TEXTS
from searchengine.engine.embedding import to_index_vectors
from searchengine.engine.files import fields_record
from searchengine.engine.filters import Filters, conditions_of
from searchengine.engine.fusion import Fusion
from searchengine.engine.highlight import SENTENCE_BATCH, with_highlights
from searchengine.engine.indexing import (
    NO_TEXT,
    READING,
    IndexingReport,
    IndexSettings,
    append_to_index,
    build_index,
    compact_index,
    delete_from_index,
    document_chunks,
    fit_whitening,
    texts_to_embed,
)
from searchengine.engine.mode_registry import RankRequest, RetrievalMode, mode_named
from searchengine.engine.modes import DEFAULT_FUSION, DEFAULT_MODE, SearchMode
from searchengine.engine.queries import check_queries
from searchengine.engine.ray_embedding import (
    RaySettings,
    plan_parts,
    ray_embedder,
    segment_parts,
    segment_target,
    training_sample,
    trains_first,
)
from searchengine.engine.search import Hit, hits_of, one_thread, rerank_hits
from searchengine.errors import SearchEngineError
from searchengine.indexer.commit.commit_probe import CommitProbe
from searchengine.indexer.commit.index_directory import READ_ATTEMPTS, VERIFY_ON_OPEN_BYTES, IndexDirectory
from searchengine.indexer.commit.index_state import state_of
from searchengine.indexer.commit.manifest import (
    Manifest,
    ModelIdentity,
    PassageSplitting,
    PromptRecord,
    StoredFile,
    model_location,
)
from searchengine.indexer.commit.merge_policy import MergeResult, merge_as_needed
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.tables.store import ClusteringRecord, Document, DocumentStore
from searchengine.indexer.tables.wal_upkeep import LogUpkeep
from searchengine.indexer.upgrades.format_one import format_one_segments
from searchengine.indexer.vectors.segments import (
    Segment,
    SegmentRecord,
    SegmentSet,
    load_segment,
    reserve_segment_numbers,
)
from searchengine.indexer.vectors.vector_index import check_trainable, default_factory
from searchengine.indexer.vectors.whitening import Whitening
from searchengine.reading.corpus import STDIN, JsonFields, corpus_files, read_corpus

if TYPE_CHECKING:  # the encoders (torch, transformers) are imported only when something encodes
    from searchengine.encoding.cross_encoder import CrossEncoder
    from searchengine.encoding.encoder import Encoder
    from searchengine.encoding.model_source import ModelSource, Pooling
    from searchengine.encoding.onnx_document_encoder import OnnxDocumentEncoder
    from searchengine.encoding.onnx_query_encoder import OnnxQueryEncoder
    from searchengine.encoding.prompt_template import PromptConfig
    from searchengine.encoding.speed import EncoderSpeed

DEFAULT_INDEX_DIR = "searchengine-index"
DEFAULT_RERANK_TOP = 100
"""Candidates the bi-encoder retrieves for a cross-encoder to rerank, unless told otherwise."""
"""Where the CLI and API keep the index unless told otherwise (or $SEARCHENGINE_INDEX says)."""

Corpus = str | Path | Iterable[str | Document]
"""A corpus file (.txt, .jsonl, gzipped or not, or '-' for stdin), or the texts (or Documents) themselves."""


def ensure_index(
    path: str | Path,
    *,
    model: str | Path | None = None,
    speed: EncoderSpeed | None = None,
    encoder: Encoder | None = None,
    passages: bool = PASSAGES_BY_DEFAULT,
    passage_headings: bool = PASSAGE_HEADINGS_BY_DEFAULT,
) -> Encoder | None:
    """Make an empty index in `path` where there is none, for writers that add to an index they may have to start
    (`index --append`, the LangChain and LlamaIndex stores). Returns the encoder to open it with: `encoder`, or
    the one loaded to create it (None where nothing was loaded)."""
    from searchengine.indexer.commit.index_directory import IndexDirectory

    if IndexDirectory(Path(path)).exists():
        return encoder
    if encoder is None:
        from searchengine.encoding.encoder import Encoder

        encoder = Encoder(model, **(speed.options() if speed else {}))
    SearchEngine.create(path, encoder=encoder, passages=passages, passage_headings=passage_headings).close()
    return encoder


def default_index_dir() -> Path:
    return Path(os.environ.get("SEARCHENGINE_INDEX", DEFAULT_INDEX_DIR))


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


def _prompt_difference(built: PromptRecord | None, given: PromptConfig | None) -> str:
    """Names the prompt templates when they are what differs (prompt pooling, searchengine.encoding.prompt_pooling)."""

    def show(prompt: PromptRecord | PromptConfig | None) -> str:
        if prompt is None:
            return "none"
        return f"template {prompt.template!r}" + (" with denoising" if prompt.denoise else "")

    built_prompt, given_prompt = show(built), show(given)
    if built_prompt == given_prompt:
        return ""
    return f" (the index's prompt: {built_prompt}; the encoder's: {given_prompt})"


def _check_same_model(path: Path, built_with: ModelIdentity, source: ModelSource, fingerprint: str) -> None:
    """Refuse a model other than the one the index was built with: its vectors live in another space."""
    if fingerprint != built_with.fingerprint or source.pooling != built_with.pooling:
        raise SearchEngineError(
            f"index {path} was built with model {built_with.name} "
            f"({built_with.pooling} pooling, fingerprint {built_with.fingerprint}), but the model "
            f"given is {source.name} ({source.pooling} pooling, fingerprint {fingerprint}); "
            "query with the index's own model or rebuild the index with this one"
            + _prompt_difference(built_with.prompt, source.prompt)
        )


def _load_encoder(
    path: Path, built_with: ModelIdentity, model: str | Path | None, speed: EncoderSpeed | None
) -> Encoder:
    """The encoder of an index: `model` (the index's own when None) with the pooling and prompt template the
    index was built with, checked to be the model that made the index's vectors."""
    from searchengine.encoding.encoder import Encoder, EncoderSpeed

    spec = model if model is not None else model_location(built_with.spec, path)
    options = {**_prompt_options(built_with), **(speed or EncoderSpeed()).options()}
    encoder = Encoder(spec, built_with.pooling, **options)
    _check_same_model(path, built_with, encoder.source, encoder.fingerprint)
    return encoder


def _load_onnx_encoder(
    path: Path, built_with: ModelIdentity, model: str | Path | None, speed: EncoderSpeed | None
) -> OnnxDocumentEncoder | OnnxQueryEncoder | None:
    """The torch-free encoder of an index where its model's ONNX export is cached and can serve it, else None: one
    that also embeds added documents where the Encoder would run them through that export too
    (searchengine.encoding.onnx_document_encoder), else one for queries only (onnx_query_encoder). The model is
    checked from its files, as _load_encoder checks it."""
    from searchengine.encoding.model_source import locate_model
    from searchengine.encoding.onnx_document_encoder import onnx_document_encoder
    from searchengine.encoding.onnx_query_encoder import onnx_precision, onnx_query_encoder

    spec = model if model is not None else model_location(built_with.spec, path)
    source = locate_model(spec, built_with.pooling, **_prompt_options(built_with))
    if onnx_precision(source, speed) is None:  # the Encoder runs it (and hashes the model once, when it loads)
        return None
    fingerprint = source.fingerprint()
    _check_same_model(path, built_with, source, fingerprint)
    return onnx_document_encoder(source, fingerprint, speed) or onnx_query_encoder(source, fingerprint, speed)


def _prompt_options(built_with: ModelIdentity) -> dict[str, str | bool]:
    """The prompt template and denoising of the index's prompt pooling, as Encoder and locate_model take them."""
    prompt = built_with.prompt
    return {} if prompt is None else {"template": prompt.template, "denoise": prompt.denoise}


@dataclass
class _SharedLoads:
    """What an engine and its siblings (SearchEngine.sibling) load once for all of them."""

    cross_encoders: dict[str, CrossEncoder] = field(default_factory=dict)
    segments: weakref.WeakValueDictionary[str, Segment] = field(default_factory=weakref.WeakValueDictionary)
    """Loaded segments by file name, while a loaded state of one of the engines holds them: immutable, so a reload
    after a write loads only the new ones, and siblings load each one once."""


class SearchEngine:
    """Build, open, search and grow an index directory.

    >>> engine = SearchEngine.build(["a cat sat on the mat", "stocks fell sharply"], "my-index")
    >>> engine.search("kitten", k=1)[0].text
    'a cat sat on the mat'
    """

    def __init__(
        self,
        path: Path,
        encoder: Encoder | None = None,
        *,
        model: str | Path | None = None,
        speed: EncoderSpeed | None = None,
        shared: _SharedLoads | None = None,
    ) -> None:
        """Use `open`, `build`, `create` or `sibling`; this constructor loads whatever manifest is current in
        `path`. Without `encoder`, `model` (the index's own when None) is loaded with `speed` on first use."""
        self.directory = IndexDirectory(path)
        self._encoder = encoder
        self._model = model
        self._speed = speed
        self.manifest: Manifest
        """What the index holds, as of the last load (open, and after each change made through this engine)."""
        self.last_report: IndexingReport | None = None
        """What the last build or add did."""
        self._vectors: SegmentSet | None = None
        self._store: DocumentStore | None = None
        self._whitening: Whitening | None = None
        self._shared = shared or _SharedLoads()
        self._stamp: tuple[int, int] | None = None
        self._commit: int | None = None
        """The store's commit number as loaded (format 2): `refresh` reloads when a writer commits another."""
        self._probe: CommitProbe | None = None
        """Reads the newest commit number for `refresh`, leaving the loaded state's snapshot where it is."""
        self._upkeep: LogUpkeep | None = None
        """Says when `refresh` should renew the snapshot so SQLite can start its write-ahead log again."""
        self._load()

    @property
    def path(self) -> Path:
        return self.directory.path

    @property
    def encoder(self) -> Encoder:
        """The encoder of added documents, and of queries once loaded (before that, a search is served without torch
        where the model's ONNX export is cached: _query_encoder). An opened index loads it on first use, so inspecting,
        deleting, compacting, clustering and mining never load the model; loading it checks that it is the model
        the index was built with."""
        if self._encoder is None:
            self._encoder = _load_encoder(self.path, self.manifest.model, self._model, self._speed)
        return self._encoder

    @functools.cached_property
    def _onnx_encoder(self) -> OnnxDocumentEncoder | OnnxQueryEncoder | None:
        """The torch-free encoder of queries (and, where it can, of added documents), when no Encoder is loaded and
        a cached ONNX export can serve them (a cold `searchengine query`, or a small `add` or `sync`, then imports
        neither torch nor transformers); None otherwise."""
        if self._encoder is not None:
            return None
        return _load_onnx_encoder(self.path, self.manifest.model, self._model, self._speed)

    def _query_encoder(self) -> Encoder | OnnxQueryEncoder:
        """What encodes queries: the loaded Encoder if there is one, else the torch-free ONNX encoder where it can
        (the same vectors to float rounding), else the Encoder, loaded now."""
        if self._encoder is None and self._onnx_encoder is not None:
            return self._onnx_encoder
        return self.encoder

    def _document_encoder(self, small_add: Sequence[Document] | None) -> Encoder | OnnxDocumentEncoder:
        """What embeds an add, given its documents where fewer than BULK_TEXTS were counted (`small_add`; None:
        more, or not known before reading): the loaded Encoder if there is one, else the torch-free ONNX encoder
        where the Encoder would embed them through the same cached export (searchengine.encoding.onnx_document_encoder:
        the same vectors; where the Encoder has a bulk runtime, only where they embed fewer than BULK_TEXTS texts,
        passages counted), else the Encoder, loaded now."""
        from searchengine.encoding.onnx_document_encoder import OnnxDocumentEncoder

        light = self._onnx_encoder if self._encoder is None else None
        if not isinstance(light, OnnxDocumentEncoder):
            return self.encoder
        if not light.bulk_elsewhere:
            return light
        if small_add is not None and texts_to_embed(light, small_add, self.manifest.passages) < BULK_TEXTS:
            return light
        return self.encoder

    @classmethod
    def build(
        cls,
        corpus: Corpus,
        path: str | Path | None = None,
        *,
        model: str | Path | None = None,
        pooling: Pooling | None = None,
        index: str | None = None,
        whiten_k: int | None = None,
        whiten_fit: Corpus | None = None,
        encoder: Encoder | None = None,
        batch_size: int | None = None,
        speed: EncoderSpeed | None = None,
        jsonl: bool | None = None,
        id_field: str | None = None,
        text_field: str = "text",
        title_field: str | None = None,
        passages: bool = PASSAGES_BY_DEFAULT,
        passage_overlap: int | None = None,
        passage_headings: bool = PASSAGE_HEADINGS_BY_DEFAULT,
        progress: bool = False,
        shards: int | None = None,
        ray: RaySettings | None = None,
        reading: dict[str, Any] | None = None,
    ) -> SearchEngine:
        """Index `corpus` into `path`, replacing any index there only once the new one is complete.

        model: None for the bundled all-MiniLM-L6-v2, a model directory or a Hugging Face id.
        pooling: override the model's pooling (mean, cls, max, mean_sqrt_len, last2avg, first_last_avg).
        index: a FAISS factory string ("Flat", "HNSW32", "IVF1024,PQ32"); None picks one from the corpus size.
        whiten_k: fit BERT-whitening and keep k dimensions; fitted on `whiten_fit` when given, else the corpus.
        encoder: an already loaded Encoder to reuse (then model/pooling/batch_size/speed are ignored).
        speed: precision, backend and threads of the Encoder loaded here (see Encoder).
        jsonl: read a corpus file as JSON lines (True) or plain lines (False); None decides by the .jsonl suffix.
        id_field: a .jsonl field holding each document's own id, for later upserts and deletes by that id.
        text_field, title_field: the .jsonl fields holding the text, and a title embedded before it (BEIR's
        `title + " " + text`); every other field is kept as metadata.
        passages: split a document longer than the model's limit into passages, each its own vector, sharing up
        to `passage_overlap` tokens with the next (default 32, at most a quarter of the model's limit); a search
        returns the document, scored by its best passage. False embeds such a document from its beginning. Later
        additions follow the index's setting. Not with `ray`, whose workers embed whole documents.
        passage_headings: with passages, embed each passage after its heading (a file's section heading path, a
        PDF page's or a titled record's title) on a line of its own, in a window shortened by the heading's tokens;
        the stored text, spans and snippets stay the document's own. Recorded in the index, so `add` and `sync`
        embed the same way. False embeds the passage alone (as indexes built before this setting do).
        shards: split the vectors over this many FAISS indexes, searched together (searchengine.indexer.vectors.shards);
        default 1. Not with `ray`, whose workers write the segments (one per part of the corpus, searched
        together as shards are).
        ray: embed on a Ray cluster (searchengine.engine.ray_embedding); `corpus` (and `whiten_fit`) must then be
        a file or a directory of corpus files that every node reads at the same path, and `path` a directory every
        node writes at the same path (the workers write the vector segments there).
        reading: how the input was read, recorded in the index for `add` and `sync` (searchengine.engine.files);
        by default the JSON fields.
        """
        if encoder is None:
            from searchengine.encoding.encoder import Encoder, EncoderSpeed

            encoder = Encoder(model, pooling, batch_size=batch_size, **(speed or EncoderSpeed()).options())
        target = Path(path) if path is not None else default_index_dir()
        fields = JsonFields(text_field, title_field, id_field)
        if whiten_k is not None and not 1 <= whiten_k <= encoder.dimension:
            raise SearchEngineError(
                f"whitening k must be between 1 and the embedding dimension {encoder.dimension}, not {whiten_k}"
            )
        if shards is not None and shards < 1:
            raise SearchEngineError(f"shards must be at least 1, not {shards}")
        if ray is not None and passages:
            raise SearchEngineError(
                "passages are not split with Ray, whose workers embed whole documents: build without --ray to split "
                "long documents, or drop --passages"
            )
        if ray is not None:
            report = _build_with_ray(
                target, corpus, encoder, index, whiten_k, whiten_fit, jsonl, fields, shards, ray, progress
            )
        else:
            settings = IndexSettings(
                index_type=index,
                whiten_k=whiten_k,
                whiten_fit=None
                if whiten_fit is None
                else document_chunks(_documents(whiten_fit, jsonl, JsonFields(text_field, title_field))),
                passages=passages,
                passage_overlap=passage_overlap,
                passage_headings=passage_headings,
                shards=shards or 1,
                reading=reading or fields_record(fields, corpus),
            )
            count = _count(corpus, jsonl, fields)
            if index is not None and count is not None and whiten_fit is None:
                check_trainable(index, count)
            chunks = document_chunks(_documents(corpus, jsonl, fields))
            report = build_index(IndexDirectory(target), chunks, encoder, settings, count, progress)
        engine = cls(target, encoder)
        engine.last_report = report
        return engine

    @classmethod
    def create(
        cls,
        path: str | Path | None = None,
        *,
        model: str | Path | None = None,
        pooling: Pooling | None = None,
        index: str = "Flat",
        encoder: Encoder | None = None,
        passages: bool = PASSAGES_BY_DEFAULT,
        passage_headings: bool = PASSAGE_HEADINGS_BY_DEFAULT,
    ) -> SearchEngine:
        """Make an empty index to `add` documents to later (index types that need training are refused);
        `passages` and `passage_headings` as in `build`."""
        if encoder is None:
            from searchengine.encoding.encoder import Encoder

            encoder = Encoder(model, pooling)
        target = Path(path) if path is not None else default_index_dir()
        report = build_index(
            IndexDirectory(target),
            iter(()),
            encoder,
            IndexSettings(index_type=index, passages=passages, passage_headings=passage_headings),
            total=0,
            allow_empty=True,
        )
        engine = cls(target, encoder)
        engine.last_report = report
        return engine

    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        *,
        model: str | Path | None = None,
        pooling: Pooling | None = None,
        whiten_k: int | None = None,
        encoder: Encoder | None = None,
        speed: EncoderSpeed | None = None,
    ) -> SearchEngine:
        """Open an existing index with the model it was built with.

        The model is loaded only when something encodes (search, add, encode): inspecting, deleting, compacting,
        clustering and mining use the stored vectors alone. A search runs the model's cached ONNX export without
        torch or transformers where it can (searchengine.encoding.onnx_query_encoder). Passing `model`, `pooling`
        or `whiten_k` states what you expect: a different one raises SearchEngineError here (`model` is checked
        from its files, without loading it) instead of silently comparing vectors from two different spaces; the
        index's own model is checked when it is loaded. `speed`: precision, backend and threads of the Encoder
        loaded then (ignored when `encoder` is given).
        """
        directory = IndexDirectory(Path(path) if path is not None else default_index_dir())
        manifest = directory.read_manifest()
        built_with = manifest.model
        if whiten_k is not None and (manifest.whitening is None or manifest.whitening.k != whiten_k):
            built = manifest.whitening.k if manifest.whitening else "no"
            raise SearchEngineError(
                f"index {directory.path} was built with {built} whitening, not whitening-k {whiten_k}; "
                "drop the option or rebuild the index with it"
            )
        if pooling is not None and pooling != built_with.pooling:
            raise SearchEngineError(
                f"index {directory.path} was built with {built_with.pooling} pooling, not {pooling}; "
                "drop the option or rebuild the index with it"
            )
        if encoder is not None:
            _check_same_model(directory.path, built_with, encoder.source, encoder.fingerprint)
        elif model is not None:
            from searchengine.encoding.model_source import locate_model

            source = locate_model(model, built_with.pooling, **_prompt_options(built_with))
            _check_same_model(directory.path, built_with, source, source.fingerprint())
        return cls(directory.path, encoder, model=model, speed=speed)

    def sibling(self) -> SearchEngine:
        """Another SearchEngine on this index that shares what this one has loaded (the model, the cross-encoders,
        the vector segments), for another thread: an engine's SQLite connection belongs to the thread that made
        it, so the server's readers each open a sibling in their own thread. Load the model first (`encoder`)
        for it to be shared."""
        return SearchEngine(self.path, self._encoder, model=self._model, speed=self._speed, shared=self._shared)

    def _load(self) -> None:
        # A writer may commit and remove the files between reading the manifest and opening them: read again.
        stamp = self.directory.manifest_stamp()
        manifest, vectors, store, whitening = self.directory.read_consistently(self._open_files, with_state=False)
        if self._stamp is not None and manifest.model.fingerprint != self.manifest.model.fingerprint:
            store.close()
            raise SearchEngineError(
                f"index {self.path} was rebuilt with model {manifest.model.name} (fingerprint "
                f"{manifest.model.fingerprint}) since it was opened with {self.manifest.model.name}; open it again"
            )
        _check_dimensions(self.path, manifest, vectors, whitening)
        tombstones, live, live_vectors = store.tombstones.ids(), store.count(), store.vector_count()
        if live_vectors != manifest.count.vectors or vectors.count != live_vectors + len(tombstones):
            store.close()
            raise IndexerError(
                f"index {self.path} is inconsistent: {vectors.count} vectors, {live_vectors} for the {live} stored "
                f"documents and {len(tombstones)} deleted, manifest says {manifest.count.vectors}; rebuild the index"
            )
        self._close_store()
        self.manifest, self._vectors, self._store, self._whitening = manifest, vectors, store, whitening
        self._tombstones, self._live, self._stamp = tombstones, live, stamp
        self._commit = store.segments.commit_number() if manifest.segmented else None
        self._probe = CommitProbe(store.path) if manifest.segmented else None
        self._upkeep = LogUpkeep(store.path) if manifest.segmented else None
        if manifest.segmented:
            self._shared.segments.update((segment.record.name, segment) for segment in vectors.segments)
        self._keyword_index = store.keyword.exists()

    def refresh(self) -> bool:
        """Reload the index if a writer (another process, or another SearchEngine) committed since it was loaded;
        True if it did. A stat and one small read when nothing changed; after a write in place only the new
        segments are loaded. On failure the loaded state stays as it was, whole and usable: the newest commit is
        read beside it (CommitProbe), so its store keeps answering from the commit its segments belong to.
        When nothing changed but SQLite's write-ahead log has grown, the store's snapshot of the same commit may
        be renewed, so the log can start again (indexer/tables/wal_upkeep.py): call this now and then in a long-lived
        reader. After `release_snapshot`, this picks a snapshot up again."""
        if self._store.closed or (self._probe is not None and not self._store.holds_snapshot):
            return self._pick_up_snapshot()
        same_manifest = self.directory.manifest_stamp() == self._stamp
        if same_manifest and (self._probe is None or self._probe.newest() == self._commit):
            if self._upkeep is not None and self._upkeep.time_to_renew():
                return self._renew_snapshot()
            return False
        self._load()
        return True

    def _renew_snapshot(self) -> bool:
        """Read the same commit through a new read transaction, begun after the log was copied into the database
        file: opened beside the loaded store and swapped in only once it shows the same commit, so a writer that
        commits meanwhile never leaves the store a commit ahead of the segments (then this reloads; True)."""
        store = DocumentStore(self._store.path)
        try:
            store.read_snapshot()
            same = store.segments.commit_number() == self._commit
        except BaseException:
            store.close()
            raise
        if not same:
            store.close()
            self._load()
            return True
        self._store.close()
        self._store = store
        return False

    @contextlib.contextmanager
    def _writing(self, may_commit_nothing: bool = False) -> Iterator[None]:
        """Around a write through this engine: the engine's read snapshot is let go first (one held across the
        write would keep SQLite from starting its write-ahead log again, so the log would grow with every write),
        and the committed state is loaded after. `may_commit_nothing` (a merge with nothing to merge), and a write
        that failed, first look whether anything was committed (`_pick_up_snapshot`); should that fail after a
        write that failed, the write's own error is the one raised."""
        self._store.release_snapshot()
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                self._pick_up_snapshot()
            raise
        if may_commit_nothing:
            self._pick_up_snapshot()
        else:
            self._load_or_close()

    def release_snapshot(self) -> None:
        """Let go of the read snapshot until the next `refresh()`, which picks one up again (reloading if a writer
        committed meanwhile). An engine kept open but idle, such as the server's writer between writes, then keeps
        no part of SQLite's write-ahead log from being emptied (indexer/tables/wal_upkeep.py)."""
        self._store.release_snapshot()

    def _pick_up_snapshot(self) -> bool:
        """A read snapshot again after `_writing` or `release_snapshot`: a new read transaction of the loaded store
        where nothing was committed meanwhile, else the committed state loaded (then True). Should that load fail,
        the store stays closed, so the engine answers nothing (a one-line error) until a `refresh()` loads."""
        if not self._store.closed:
            self._store.read_snapshot()
            same_manifest = self.directory.manifest_stamp() == self._stamp
            if same_manifest and (self._probe is None or self._store.segments.commit_number() == self._commit):
                return False
        self._load_or_close()
        return True

    def _load_or_close(self) -> None:
        """`_load`, closing the loaded store if it fails: that store's snapshot of the loaded commit was let go, so
        it would read a newer commit than the loaded segments, and the engine must not answer from both. (Closed
        only then: closing it first, as the last connection, made SQLite rebuild its log index at every write.)"""
        try:
            self._load()
        except BaseException:
            self._store.close()
            raise

    def _open_files(self, manifest: Manifest) -> tuple[Manifest, SegmentSet, DocumentStore, Whitening | None]:
        whitening_path = self.directory.file(manifest, "whitening")
        whitening = Whitening.load(whitening_path) if whitening_path else None
        store = DocumentStore(self.directory.file(manifest, "documents"))
        if not manifest.segmented:
            return manifest, format_one_segments(self.directory, manifest), store, whitening
        try:
            for attempt in range(READ_ATTEMPTS):  # a merge may remove segments between our snapshot and loading them
                store.read_snapshot()  # the counts, segments and tombstones of one commit, and the documents with them
                commit = store.segments.commit_number()
                try:
                    segments = [self._segment(record, manifest.index.dimension) for record in store.segments.records()]
                    break
                except IndexerError:
                    store.read_snapshot()
                    if attempt == READ_ATTEMPTS - 1 or store.segments.commit_number() == commit:
                        raise
            manifest = state_of(store, manifest)
        except BaseException:
            store.close()
            raise
        return manifest, SegmentSet(segments, manifest.index.type, manifest.index.dimension), store, whitening

    def _segment(self, record: SegmentRecord, dimension: int) -> Segment:
        """The loaded segment `record` names: the one loaded before, or read now (its checksum checked when small)."""
        loaded = self._shared.segments.get(record.name)
        if loaded is not None:
            return loaded
        stored = StoredFile(record.name, record.size, record.checksum)
        problem = self.directory.check_file(stored, verify=lambda size: size <= VERIFY_ON_OPEN_BYTES)
        if problem:
            raise IndexerError(f"{problem}; rebuild the index")
        return load_segment(self.path, record, dimension)

    def __len__(self) -> int:
        """Number of documents in the index (deleted ones not counted)."""
        return self._live

    @property
    def tombstones(self) -> np.ndarray:
        """Ids of deleted documents whose vectors wait for `compact()` (index types that cannot delete)."""
        return self._tombstones

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors as this index stores them: encoder output, whitened when fitted, L2-normalised."""
        return to_index_vectors(self.encoder.encode(list(texts)), self._whitening)

    @property
    def has_keyword_index(self) -> bool:
        """Whether the index can search by keyword (keyword and hybrid modes): indexes written before keyword search
        gain the keyword index on their next write, or now with `compact()`."""
        return self._keyword_index

    @property
    def default_mode(self) -> SearchMode:
        """The mode a search without one uses: DEFAULT_MODE, or dense on an index without the keyword index."""
        return DEFAULT_MODE if self._keyword_index else "dense"

    def search(
        self,
        query: str,
        k: int = 10,
        where: Filters = None,
        *,
        mode: SearchMode | None = None,
        fusion: Fusion | None = None,
        rerank: str | Path | CrossEncoder | None = None,
        rerank_top: int = DEFAULT_RERANK_TOP,
        min_score: float | None = None,
        highlight: bool = False,
    ) -> list[Hit]:
        """The k documents that best match `query`, best first.

        mode: "dense" ranks by the cosine of the encoded query (meaning), "keyword" by BM25 of its words (FTS5,
        Porter stemming; any word may match), "hybrid" by the fusion of both (`fusion`, DEFAULT_FUSION when None);
        None: `default_mode`. Each hit says which sides found it (`found_by`) and gives their scores
        (`dense_score`, `keyword_score`; hybrid gives both).
        where: metadata filters that must all hold, e.g. ["lang=en", "year>=2020"] or {"lang": "en"}; they run
        inside the vector search and the keyword search, so k results come back whenever k documents match (and,
        by keyword, hold a word of the query).
        rerank: a cross-encoder (directory, Hub id or loaded CrossEncoder) that rescores the `rerank_top` best
        candidates of the mode (at least k, filters applied); the k best by its score come back, with `score` the
        cross-encoder's and `retrieval_score` the mode's. A loaded model is kept for later calls.
        min_score: leave out hits the mode scores below it, so that a query with no good answer gets none. Every
        mode scores on a scale fixed before the query: the cosine (dense), BM25 over the most the query's words
        let a document reach (keyword, 0..1), and the bounded fusion of both (hybrid, 0..1; other fusions have no
        such scale). With `rerank`, it applies to the candidates' retrieval scores, before the cross-encoder.
        highlight: give each hit its `highlight`, the sentence(s) of its passage nearest to the query (by the mode's
        measure; dense and hybrid embed each hit's sentences, at most 4 of them) and the query's words there;
        `Hit.snippet()` then shows those sentences (searchengine.engine.highlight).
        """
        return self.search_batch(
            [query],
            k,
            where,
            mode=mode,
            fusion=fusion,
            rerank=rerank,
            rerank_top=rerank_top,
            min_score=min_score,
            highlight=highlight,
        )[0]

    def search_batch(
        self,
        queries: Sequence[str],
        k: int = 10,
        where: Filters = None,
        *,
        mode: SearchMode | None = None,
        fusion: Fusion | None = None,
        rerank: str | Path | CrossEncoder | None = None,
        rerank_top: int = DEFAULT_RERANK_TOP,
        min_score: float | None = None,
        highlight: bool = False,
    ) -> list[list[Hit]]:
        """`search` for many queries at once (encoded and searched as one batch; reranked pairs scored together;
        the highlighted sentences of every hit embedded in one call). The stages: the mode retrieves (the
        `rerank_top` best when reranking, else k), `min_score` drops the weak, the cross-encoder reranks, and the
        hits shown are highlighted."""
        k = _count_argument("k", k)
        rerank_top = _count_argument("rerank_top", rerank_top)
        check_queries(queries)
        retrieval = self._checked_mode(mode)
        if min_score is not None:
            if isinstance(min_score, bool) or not isinstance(min_score, (int, float)) or not math.isfinite(min_score):
                raise SearchEngineError(f"min_score must be a number, such as 0.4, not {min_score!r}")
        cross_encoder = None if rerank is None else self.cross_encoder(rerank)
        depth = k if cross_encoder is None else max(k, rerank_top)
        results = self._retrieve(queries, depth, where, retrieval, fusion or DEFAULT_FUSION)
        if min_score is not None:
            results = [[hit for hit in hits if hit.score >= min_score] for hits in results]
        if cross_encoder is not None:
            results = rerank_hits(cross_encoder, list(queries), results, k)
        if highlight:
            results = with_highlights(queries, results, retrieval.sides, self._embed_sentences)
        return results

    def _retrieve(
        self, queries: Sequence[str], k: int, where: Filters, mode: RetrievalMode, fusion: Fusion
    ) -> list[list[Hit]]:
        """The k best documents per query by `mode`, among those `where` lets through, best first."""
        if len(self) == 0:
            raise SearchEngineError(f"index {self.path} is empty: add documents with `searchengine add FILE`")
        k = min(k, len(self))  # no mode returns more documents than the index holds; SQLite's LIMIT is 64-bit
        conditions = conditions_of(where)
        matching = self._store.filters.matching_ids(conditions) if conditions else None
        if not queries or (matching is not None and len(matching) == 0):
            return [[] for _ in queries]
        dense = "dense" in mode.sides
        allowed = None
        if dense and matching is not None:
            passages = self._store.filters.passage_ids_matching(conditions)
            allowed = np.union1d(matching, passages) if len(passages) else matching  # no sort where none is split
        encoder = self._query_encoder() if dense else None  # loaded before one_thread, which sets its threads
        with one_thread() if len(queries) == 1 else contextlib.nullcontext():
            request = RankRequest(
                texts=queries,
                k=k,
                store=self._store,
                vectors=self._vectors,
                query_vectors=None if encoder is None else self._query_vectors(encoder, queries),
                searchable=len(self) if matching is None else len(matching),
                allowed=allowed,
                matching=matching,
                excluded=self._tombstones if len(self._tombstones) else None,
                fusion=fusion,
            )
            return hits_of(self._store, mode.rank(request))

    def _query_vectors(
        self, encoder: Encoder | OnnxQueryEncoder, texts: Sequence[str], batch_size: int | None = None
    ) -> np.ndarray:
        """Texts as the index's vectors of queries: `encoder`'s query vectors, then the whitening."""
        return to_index_vectors(encoder.encode_queries(list(texts), batch_size), self._whitening)

    def _embed_sentences(self, texts: list[str]) -> np.ndarray:
        """Queries and their hits' sentences as the index's vectors of queries, for highlights: the query encoder
        (ONNX where it can) in batches of SENTENCE_BATCH, then the whitening."""
        return self._query_vectors(self._query_encoder(), texts, SENTENCE_BATCH)

    def _checked_mode(self, mode: str | None) -> RetrievalMode:
        """The registered mode named `mode`, or the default one when None; refused when unknown, or when it needs a
        keyword index the index lacks (saying how to add it)."""
        retrieval = mode_named(self.default_mode if mode is None else mode)
        if "keyword" in retrieval.sides and not self._keyword_index:
            raise SearchEngineError(
                f"index {self.path} has no keyword index (it was written before keyword search), so it cannot search "
                f"in {retrieval.name} mode: add it with `searchengine compact --index-dir {self.path}`, or use mode dense"
            )
        return retrieval

    def cross_encoder(self, model: str | Path | CrossEncoder) -> CrossEncoder:
        """The cross-encoder `model` names, loaded on the first call and kept for later ones (a loaded
        CrossEncoder is used as it is). Raises SearchEngineError for anything that is not a cross-encoder."""
        from searchengine.encoding.cross_encoder import CrossEncoder

        if isinstance(model, CrossEncoder):
            return model
        path = Path(str(model)).expanduser()
        key = str(path.resolve()) if path.is_dir() else str(model)
        if key not in self._shared.cross_encoders:  # on the bi-encoder's device if it is loaded, else the default one
            self._shared.cross_encoders[key] = CrossEncoder(model, device=getattr(self._encoder, "device", None))
        return self._shared.cross_encoders[key]

    def add(
        self,
        corpus: Corpus,
        jsonl: bool | None = None,
        id_field: str | None = None,
        progress: bool = False,
        *,
        text_field: str = "text",
        title_field: str | None = None,
        merge: bool = True,
        reading: dict[str, Any] | None = None,
    ) -> IndexingReport:
        """Append documents (a file path, texts or Documents), each its own document even when its text repeats
        an indexed one (the report counts those). A document whose external id (`id_field` of a .jsonl file, or
        Document.external_id) is already stored replaces the old one (upsert). `text_field` and `title_field` as
        in `build`. The new vectors are a new segment; `merge` then runs the merges the policy asks for (False:
        leave them to a later `merge()`, as the server does off its request path). `reading` replaces the
        record of how the index reads its input (as in `build`) in the same commit."""
        fields = JsonFields(text_field, title_field, id_field)
        count = _count(corpus, jsonl, fields)
        documents: Iterable[Document] = _documents(corpus, jsonl, fields)
        small_add = list(documents) if count is not None and count < BULK_TEXTS else None
        # loaded before the write, which then does only the write; a small add is read once, for both
        encoder = self._document_encoder(small_add)
        with self._writing():
            report = append_to_index(
                self.directory, small_add if small_add is not None else documents, encoder, count, progress, reading
            )
        if merge:
            self.merge()
        self.last_report = report
        return report

    def merge(self) -> list[MergeResult]:
        """Merge vector segments as the merge policy asks (indexer/commit/merge_policy.py); searches in other threads and
        processes go on meanwhile. Returns the merges made."""
        with self._writing(may_commit_nothing=True):
            return merge_as_needed(self.directory)

    def delete(self, ids: Sequence[int] = (), external_ids: Sequence[str] = (), *, merge: bool = True) -> list[int]:
        """Delete documents by id and/or external id, all or none (an unknown id deletes nothing).

        The vectors stay in their segments as tombstones, never returned by searches, until a merge drops them
        (a segment more than half deleted is rewritten; `compact()` drops them all). `merge` as in `add`.
        """
        if not ids and not external_ids:
            raise SearchEngineError("say which documents to delete: give ids or external ids")
        for value in ids:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < 2**63:
                raise SearchEngineError(f"{value!r} is not a document id (a whole number from 0 to 2**63 - 1)")
        with self._writing():
            deleted = delete_from_index(self.directory, list(ids), list(external_ids))
        if merge:
            self.merge()
        return deleted

    def compact(self) -> int:
        """Merge every segment into one without tombstoned vectors, and give an index written before keyword search
        its keyword index; returns how many vectors were dropped. No work when there is one segment and nothing
        to drop."""
        one_segment = len(self._vectors.segments) <= 1
        if not len(self._tombstones) and self._keyword_index and self.manifest.segmented and one_segment:
            return 0
        with self._writing():
            return compact_index(self.directory)

    def cluster(
        self,
        method: ClusterMethod = "kmeans",
        *,
        k: int | None = None,
        threshold: float | None = None,
        min_size: int | None = None,
        seed: int = 0,
        top: int = 3,
    ) -> list[Cluster]:
        """Cluster the stored vectors (never re-encoding) and store the clustering with the index, replacing any
        earlier one; later hits carry their cluster id.

        method: "kmeans" (needs k), "community" (threshold 0.75 and min_size 10 unless given; outliers join no
        cluster) or "agglomerative" (k or threshold; up to 20,000 texts). Clusters are numbered by size, largest
        first, and list their `top` most central texts.
        """
        with self._writing():
            clustering = cluster_index(self.directory, ClusterSettings(method, k, threshold, min_size, seed), top)
        return clustering.clusters

    def clustering(self, top: int = 3) -> Clustering | None:
        """The clustering stored with the index, with each cluster's `top` most central texts; None if none."""
        return read_clustering(self._store, top)

    def mine(
        self,
        top: int | None = None,
        threshold: float | None = None,
        method: MiningMethod = "auto",
        neighbours: int | None = None,
    ) -> list[Pair]:
        """The most similar pairs of documents in the index, best first, from the stored vectors (never re-encoded).

        top: the `top` best pairs (20 when neither is given); threshold: every pair with cosine >= threshold; both:
        the best `top` of those. method: "exact" (chunked, every pair scored), "ann" (each text's `neighbours`
        nearest from the FAISS index) or "auto" (exact up to 50,000 texts).
        """
        return mine_documents(self._vectors, self._store, top, threshold, method, neighbours)

    def dedupe(self, threshold: float, method: MiningMethod = "auto", neighbours: int | None = None) -> list[Pair]:
        """Mark the later document of each pair with cosine >= threshold as a duplicate of the earlier one
        (replacing earlier marks), stored with the index; returns one pair per duplicate (`second_id` duplicates
        `first_id`). `info().duplicates` counts them."""
        with self._writing():
            marks = dedupe_index(self.directory, threshold, method, neighbours)
        return with_texts(marks, self._store)

    def reading(self) -> dict[str, Any]:
        """How the index reads its input, as recorded when it was built (fields, folders and their rules;
        searchengine.engine.files); empty for an index built before it was recorded."""
        return self._store.settings.get(READING) or {}

    def metadata_by_external_id(self, fields: Sequence[str]) -> dict[str, list[Any]]:
        """The values of metadata `fields` of every document with an external id and the first field, by
        external id (what `sync` compares files with), read without loading texts."""
        return self._store.documents.metadata_of_external_ids(fields)

    def documents(self, where: Filters) -> list[Document]:
        """The stored documents that meet every filter, in index order, without a query: a lookup by your own ids
        (`[Condition("external_id", "in", ("a", "b"))]`) or by metadata, as the LangChain and LlamaIndex stores need."""
        conditions = conditions_of(where)
        if not conditions:
            raise SearchEngineError("say which documents to read: give filters, e.g. where=['lang=en']")
        stored = self._store.get(self._store.filters.matching_ids(conditions))
        return [Document(d.text, d.source, d.line, d.metadata, d.external_id) for _, d in sorted(stored.items())]

    def external_ids(self) -> list[str]:
        """The user-given ids of the indexed documents (`--id-field`, Document.external_id), in index order."""
        return self._store.documents.external_ids()

    def stored_vectors(self, batch_size: int = 65_536) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(vector ids, vectors) as the index holds them, in batches; never re-encodes the corpus. A vector id is
        its document's id, except for the further passages of a document split into passages."""
        return self._vectors.stored_vectors(batch_size)

    def info(self) -> IndexInfo:
        manifest = self.manifest
        return IndexInfo(
            path=str(self.path),
            documents=manifest.count.documents,
            vectors=manifest.count.vectors,
            model=manifest.model.name,
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
            clustering=self._store.clustering.record(),
            duplicates=len(self._store.duplicates.marks()),
            repeats=self._store.documents.repeats(),
            keyword_index=self._keyword_index,
            passages=manifest.passages,
            shards=len(manifest.segment_files) if manifest.segmented else manifest.index.shards,
        )

    def close(self) -> None:
        self._close_store()

    def _close_store(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._probe is not None:
            self._probe.close()
            self._probe = None
        if self._upkeep is not None:  # closed last: a connection that can write, so SQLite may fold the log in
            self._upkeep.close()
            self._upkeep = None

    def __enter__(self) -> SearchEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _count_argument(name: str, value: object) -> int:
    """`value` as a count of at least 1 (a Python or NumPy integer); anything else is one SearchEngineError, not
    the TypeError a comparison or SQLite would raise later."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise SearchEngineError(f"{name} must be a whole number of at least 1, not {value!r} ({type(value).__name__})")
    if value < 1:
        raise SearchEngineError(f"{name} must be at least 1, not {value}")
    return int(value)


def _check_dimensions(path: Path, manifest: Manifest, vectors: SegmentSet, whitening: Whitening | None) -> None:
    """Refuse files whose shapes disagree with the manifest before FAISS or numpy meets them mid-query."""
    expected = manifest.index.dimension
    if vectors.dimension != expected:
        raise IndexerError(
            f"index {path}: the vector index holds {vectors.dimension}-dimensional vectors but the manifest says "
            f"{expected}; rebuild the index"
        )
    if whitening is not None and whitening.matrix.shape != (manifest.model.dimension, expected):
        rows, columns = whitening.matrix.shape
        raise IndexerError(
            f"index {path}: the whitening maps {rows} to {columns} dimensions but the model has "
            f"{manifest.model.dimension} and the index {expected}; rebuild the index"
        )


def _build_with_ray(
    target: Path,
    corpus: Corpus,
    encoder: Encoder,
    index: str | None,
    whiten_k: int | None,
    whiten_fit: Corpus | None,
    jsonl: bool | None,
    fields: JsonFields,
    shards: int | None,
    ray: RaySettings,
    progress: bool,
) -> IndexingReport:
    """SearchEngine.build with the corpus embedded on a Ray cluster; the corpus is read (and checked) here first,
    so bad input fails before the cluster starts any work. Documents are embedded whole (no passages). The workers
    write the vector segments themselves (ray_embedding), whitened with a transform fitted first on `whiten_fit`,
    or on a sample of the corpus, and (IVF, PQ) copied from the index type trained first on that sample."""
    for source in (corpus, whiten_fit):
        if source is not None and (not isinstance(source, (str, Path)) or str(source) == STDIN):
            raise SearchEngineError(
                "Ray workers read the corpus from files: give a file or a directory of corpus files every node can "
                "read at the same path, not standard input or a list of texts"
            )
    if shards is not None:
        raise SearchEngineError(
            "--shards does not apply with --ray: each part of the corpus a worker embeds is written as its own "
            "segment, and the segments are searched in parallel as shards are; drop --shards"
        )
    if ray.part_size is not None:
        _count_argument("part_size", ray.part_size)
    parts = plan_parts(corpus_files(corpus), jsonl, fields, ray.batch_size)
    fit_fields = JsonFields(fields.text, fields.title)
    fit_parts = None if whiten_fit is None else plan_parts(corpus_files(whiten_fit), jsonl, fit_fields, ray.batch_size)
    count = sum(part.documents for part in parts)
    if count == 0:
        raise SearchEngineError(NO_TEXT)
    if index is not None and whiten_fit is None:
        check_trainable(index, count)
    index_type = index or default_factory(count)
    with ray_embedder(ray, encoder) as embedder:
        whitening, sample = None, []
        if whiten_k is not None and fit_parts is not None:
            whitening = fit_whitening(embedder.chunks(fit_parts, jsonl, fit_fields), encoder, whiten_k, progress)
        written = segment_parts(parts, embedder.workers, index_type, ray.batch_size, ray.part_size)
        dimension = whiten_k or encoder.dimension
        if trains_first(written, index_type, dimension) or (whiten_k is not None and whitening is None):
            sample = list(embedder.embedded_documents(training_sample(parts, jsonl, fields)))
            if whiten_k is not None and whitening is None:
                whitening = fit_whitening(sample, encoder, whiten_k, progress)
        first = reserve_segment_numbers(count)
        segments = segment_target(target, first, index_type, dimension, written, whitening, sample)
        settings = IndexSettings(
            index_type=index_type, whiten_k=whiten_k, passages=False, whitening=whitening, segments_written=True
        )
        chunks = embedder.chunks(written, jsonl, fields, segments)
        return build_index(IndexDirectory(target), chunks, encoder, settings, count, progress)


def _documents(corpus: Corpus, jsonl: bool | None, fields: JsonFields = JsonFields()) -> Iterator[Document]:
    if isinstance(corpus, (str, Path)):
        return read_corpus(corpus, jsonl, fields)
    if not fields.plain:
        raise SearchEngineError(
            "id_field, text_field and title_field name fields of a .jsonl file; give Documents (with external_id) "
            "instead"
        )
    documents = (_text_document(text, number) for number, text in enumerate(corpus, start=1))
    return (document for document in documents if document.text)


def _text_document(text: str | Document, number: int) -> Document:
    """A text or Document given from Python, refused in one line where its text is not a str (which reached the
    tokenizer as an AttributeError)."""
    given = text.text if isinstance(text, Document) else text
    if not isinstance(given, str):
        raise SearchEngineError(f"text number {number} is a {type(given).__name__}, not a str")
    if isinstance(text, Document):
        return text
    return Document(text.strip(), None, number)


def _count(corpus: Corpus, jsonl: bool | None, fields: JsonFields = JsonFields()) -> int | None:
    """Documents in a corpus file or list, read once up front so bad input fails before any embedding.

    None for standard input, pipes and one-shot iterators, which can be read only once.
    """
    if isinstance(corpus, (str, Path)):
        path = Path(corpus)
        if str(corpus) == STDIN or (path.exists() and not path.is_file() and not path.is_dir()):  # a pipe
            return None
    elif not isinstance(corpus, Sequence):
        return None
    return sum(1 for _ in _documents(corpus, jsonl, fields))
