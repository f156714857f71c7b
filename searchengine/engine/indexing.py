"""The write path: stream documents through the store and the encoder into a FAISS index, then commit."""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from importlib.metadata import version
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import faiss
import numpy as np

from searchengine.encoding.passage_headings import heading_at, with_heading
from searchengine.encoding.passages import (
    PASSAGE_HEADINGS_BY_DEFAULT,
    PASSAGES_BY_DEFAULT,
    Span,
    check_overlap,
    default_overlap,
)
from searchengine.engine.embedding import to_index_vectors
from searchengine.errors import SearchEngineError
from searchengine.indexer.commit.crash_points import crash_point
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.live_write import NewVectors, writing_in_place
from searchengine.indexer.commit.manifest import ModelIdentity, PassageSplitting, PromptRecord, spec_inside
from searchengine.indexer.commit.merge_policy import LOCK_WAIT, merge
from searchengine.indexer.commit.rewrite import commit_generation, rewriting
from searchengine.indexer.tables.store import Document, DocumentStore
from searchengine.indexer.upgrades.chain import upgrade_index
from searchengine.indexer.vectors.shards import Vectors, create_vectors
from searchengine.indexer.vectors.vector_index import default_factory
from searchengine.indexer.vectors.whitening import CovarianceAccumulator, Whitening
from searchengine.indexer.vectors.written_segments import WrittenSegments

if TYPE_CHECKING:  # the encoder (torch, transformers) is imported only by what encodes
    from tqdm import tqdm

    from searchengine.encoding.encoder import Encoder
    from searchengine.indexer.commit.index_directory import Generation
    from searchengine.indexer.tables.upsert import StoreChange
    from searchengine.indexer.vectors.segments import SegmentRecord

CHUNK = 2048
"""Documents read, stored and embedded together; bounds memory whatever the corpus size."""
NO_TEXT = "the input holds no text to index (it is empty or only blank lines)"
TRAINING_SAMPLE = 100_000
"""At most this many vectors train an index type that needs training (IVF, PQ)."""


def training_rows(count: int) -> np.ndarray:
    """Which of `count` vectors (in the order they are added) train an index type that needs training: a seeded
    sample of TRAINING_SAMPLE (all of them, up to that), sorted. A Ray build embeds the documents at these
    positions of the corpus first (searchengine.engine.ray_embedding), so both builds train on the same ones."""
    return np.sort(np.random.default_rng(0).permutation(count)[:TRAINING_SAMPLE])


@dataclass
class IndexingReport:
    """What an indexing run did."""

    documents: int = 0
    """Documents read (non-blank lines)."""
    added: int = 0
    """Documents stored, each with its own vector."""
    repeats: int = 0
    """Of those added, documents whose text an earlier document (in the index or the input) already has: stored
    all the same, each its own document, and encoded once."""
    replaced: int = 0
    """Stored documents an upsert gave a new text (removed, and the new one added)."""
    updated: int = 0
    """Upserts that kept the stored text: origin and metadata replaced, the vector kept."""
    superseded: int = 0
    """Documents replaced by a later one with the same id in the same input, so never stored (ids are text)."""
    upgraded: int = 0
    """Documents an index written by an older version had merged into one row, given rows of their own."""
    truncated: int = 0
    """Texts longer than the model's limit, embedded from their first tokens (none when documents are split into
    passages)."""
    split: int = 0
    """Documents longer than the model's limit split into passages, each passage its own vector."""
    vectors: int = 0
    """Vectors added: one per added document, plus one per further passage of a split one."""
    index_type: str = ""
    index_type_chosen: bool = False
    """True when searchengine picked the FAISS type from the corpus size."""
    seconds: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)
    """Seconds of `seconds` spent in each stage, in the order first entered: "reading" the corpus (with Ray:
    "reading and embedding on Ray workers", waiting for the workers' rows), "storing" the documents (their rows
    and keyword index, one transaction per chunk), "encoding" (tokenising and passage splitting included),
    "whitening" (fitting it), "vector index" (training the FAISS index, adding and removing vectors), "commit"
    (writing the generation's files and the manifest). They run one after another; the rest of `seconds` is
    opening the index and, for an addition, copying and committing it (searchengine.indexer.commit.rewrite)."""

    @contextmanager
    def timing(self, stage: str) -> Iterator[None]:
        """Add the time the block takes to `stage`."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.stages[stage] = self.stages.get(stage, 0.0) + time.perf_counter() - started


@dataclass(frozen=True)
class Chunk:
    """Documents read, stored and embedded together (at most CHUNK of them)."""

    documents: list[Document]
    vectors: np.ndarray | None = None
    """The encoder's output for every document when it was computed elsewhere (Ray workers:
    searchengine.engine.ray_embedding); None: the encoder here embeds the documents the store adds."""
    truncated: int = 0
    """Texts of these documents that the encoder elsewhere cut to the model's limit."""
    ids: np.ndarray | None = None
    """The ids the documents' vectors were written under (consecutive, one per document) when a worker wrote
    them as segments itself (Ray workers); None: the store gives the ids."""
    segments: tuple[SegmentRecord, ...] = ()
    """The segments those workers wrote, with the vectors of these and nearby documents (a segment is named by
    the chunk its first document is in)."""


def _timed_reading(chunks: Iterable[Chunk], report: IndexingReport, stage: str = "reading") -> Iterator[Chunk]:
    """`chunks`, the time spent producing each added to the report's `stage`."""
    iterator = iter(chunks)
    while True:
        with report.timing(stage):
            chunk = next(iterator, None)
        if chunk is None:
            return
        yield chunk


def document_chunks(documents: Iterable[Document]) -> Iterator[Chunk]:
    """`documents` in chunks, to be embedded here."""
    iterator = iter(documents)
    while chunk := list(islice(iterator, CHUNK)):
        yield Chunk(chunk)


@dataclass(frozen=True)
class IndexSettings:
    """What a new index is built with."""

    index_type: str | None = None
    whiten_k: int | None = None
    whiten_fit: Iterable[Chunk] | None = None
    """Documents to fit whitening on instead of the corpus."""
    passages: bool = PASSAGES_BY_DEFAULT
    """Split documents longer than the model's limit into passages, each its own vector (else embed their start)."""
    passage_overlap: int | None = None
    """Tokens consecutive passages share (None: searchengine.encoding.passages.default_overlap)."""
    passage_headings: bool = PASSAGE_HEADINGS_BY_DEFAULT
    """Embed each passage after its heading (searchengine.encoding.passage_headings), with passages only."""
    shards: int = 1
    """FAISS indexes to split the vectors over (searchengine.indexer.vectors.shards); 1: one index."""
    reading: dict[str, Any] | None = None
    """How the input was read (fields, folders and their rules), recorded so `add` and `sync` read alike."""
    whitening: Whitening | None = None
    """Whitening fitted already (before Ray workers that apply it started), used instead of fitting one."""
    segments_written: bool = False
    """The chunks come with their ids and the segments workers wrote their vectors into (Chunk.ids, .segments):
    the build stores the rows and commits those segments, and never sees a vector. Whitening, if any, is given
    (`whitening`), and segments of a type that needs training were trained before the workers wrote them."""


READING = "reading"
"""The build setting (indexer/tables/settings_table.py) that records how the index reads its input."""
RAY_WAIT = "reading and embedding on Ray workers"
"""The stage a Ray build waits in: its workers read and embed the corpus and write the segments."""


def build_index(
    directory: IndexDirectory,
    chunks: Iterable[Chunk],
    encoder: Encoder,
    settings: IndexSettings,
    total: int | None = None,
    progress: bool = False,
    allow_empty: bool = False,
) -> IndexingReport:
    """Replace whatever `directory` holds with an index of the documents of `chunks`; the old index stays until
    commit. `encoder` embeds the chunks that come without vectors, and names the model in the manifest.

    `allow_empty` lets an empty corpus make an empty index (to `add` to later); such an index cannot be one
    that needs fitting or training, since there is nothing to fit on.
    """
    if total == 0 and not allow_empty:
        raise SearchEngineError(NO_TEXT)
    report = IndexingReport()
    started = time.perf_counter()
    truncated_before = encoder.truncated
    passages = None
    if settings.passages:
        tokens = encoder.text_tokens
        overlap = default_overlap(tokens) if settings.passage_overlap is None else settings.passage_overlap
        check_overlap(tokens, overlap)
        passages = PassageSplitting(tokens, overlap, settings.passage_headings)
    with directory.writing() as generation:
        store = DocumentStore(generation.path("documents"), writable=True)
        whitening = settings.whitening
        if settings.whiten_k is not None and settings.whiten_fit is not None and whitening is None:
            with report.timing("whitening"):
                whitening = fit_whitening(settings.whiten_fit, encoder, settings.whiten_k, progress)
        report.index_type = settings.index_type or default_factory(total)
        report.index_type_chosen = settings.index_type is None
        dimension = settings.whiten_k or encoder.dimension
        vectors: Vectors | WrittenSegments = create_vectors(report.index_type, dimension, settings.shards)
        needs_fit = settings.whiten_k is not None and whitening is None
        if allow_empty and (needs_fit or vectors.needs_training):
            raise SearchEngineError(
                f"an empty index cannot use whitening or {report.index_type!r}, which must be fitted on documents; "
                "build it from documents instead"
            )
        if settings.segments_written:
            if needs_fit:
                raise SearchEngineError("segments written before the build cannot be whitened with a fit on it")
            vectors = WrittenSegments(generation, report.index_type, dimension)
            chunks = _timed_reading(chunks, report, RAY_WAIT)  # the workers read and embed while the build waits
            _store_and_adopt(store, vectors, chunks, report, total, progress)
        elif needs_fit or vectors.needs_training:
            whitening = _spool_and_add(
                generation,
                store,
                vectors,
                encoder,
                _timed_reading(chunks, report),
                settings.whiten_k if needs_fit else None,
                whitening,
                passages,
                report,
                total,
                progress,
            )
        else:
            _stream_and_add(
                store, vectors, encoder, _timed_reading(chunks, report), whitening, passages, report, total, progress
            )
        if report.documents == 0 and not allow_empty:
            raise SearchEngineError(NO_TEXT)
        report.truncated += encoder.truncated - truncated_before
        if settings.reading is not None:
            store.settings.set(READING, settings.reading)
        crash_point("build-before-commit")
        with report.timing("commit"):
            commit_generation(
                generation,
                directory,
                store,
                vectors,
                whitening,
                model_identity(encoder),
                library_versions(),
                previous=None,
                passages=passages,
            )
    report.seconds = time.perf_counter() - started
    return report


def append_to_index(
    directory: IndexDirectory,
    documents: Iterable[Document],
    encoder: Encoder,
    total: int | None = None,
    progress: bool = False,
    reading: dict[str, Any] | None = None,
) -> IndexingReport:
    """Add `documents` to the existing index in `directory`, applying its fitted whitening; `reading`, when
    given, replaces the record of how the index reads its input (IndexSettings.reading) in the same commit."""
    if total == 0:
        raise SearchEngineError(NO_TEXT)
    report = IndexingReport()
    started = time.perf_counter()
    truncated_before = encoder.truncated
    with writing_in_place(directory, library_versions()) as write:
        report.index_type = write.manifest.index.type
        report.upgraded = write.upgraded
        _stream_and_add(
            write.store,
            write.vectors,
            encoder,
            _timed_reading(document_chunks(documents), report),
            write.whitening,
            write.manifest.passages,
            report,
            total,
            progress,
        )
        if report.documents == 0:
            raise SearchEngineError(NO_TEXT)
        if reading is not None:
            write.store.settings.set(READING, reading)
        report.truncated = encoder.truncated - truncated_before
        commit_started = time.perf_counter()
    report.stages["commit"] = time.perf_counter() - commit_started
    report.seconds = time.perf_counter() - started
    return report


def _progress(total: int | None, enabled: bool, description: str) -> tqdm:
    """A progress bar shown after its first second, so input refused at once ends with its one error line; only on
    a terminal (tqdm's disable=None), since a log or pipe would get every redraw and the final bar twice. Counts
    are whole documents (33/33, never tqdm's unit-scaled 33.0/33.0). (tqdm is imported here: a query imports this
    module but never shows progress.)"""
    from tqdm import tqdm

    return tqdm(total=total, disable=None if enabled else True, unit=" docs", desc=description, leave=True, delay=1.0)


def _store_and_encode(
    store: DocumentStore,
    encoder: Encoder,
    chunk: Chunk,
    passages: PassageSplitting | None,
    report: IndexingReport,
) -> tuple[np.ndarray, np.ndarray, list[int], np.ndarray]:
    """Store a chunk and take the vectors of its new documents: those it came with (embedded elsewhere, one per
    document), or embedded here (split into passages when `passages` says how), each distinct text once. Returns
    the new vector ids, their vectors, the vector ids upserts removed, and which new vectors hold a text no earlier
    document has (what whitening is fitted on, so a repeated text does not weigh more)."""
    change = _store_rows(store, chunk, report)
    if chunk.vectors is not None:
        report.vectors += len(change.ids)
        embeddings = chunk.vectors[np.asarray(change.positions, dtype=np.int64)]
        first_seen = ~np.asarray(change.repeated, dtype=bool)
        return np.asarray(change.ids, dtype=np.int64), embeddings, change.removed_vectors, first_seen
    with report.timing("encoding"):
        ids, texts, first_seen = _passages(
            store,
            encoder,
            change.ids,
            [chunk.documents[p] for p in change.positions],
            change.repeated,
            passages,
            report,
        )
        distinct: dict[str, int] = {}
        rows = [distinct.setdefault(text, len(distinct)) for text in texts]
        embeddings = encoder.encode(list(distinct))
    return ids, embeddings[rows], change.removed_vectors, first_seen


def _store_rows(store: DocumentStore, chunk: Chunk, report: IndexingReport) -> StoreChange:
    """Store a chunk's documents (under the ids their vectors were written with, when it carries them), and count
    what that did."""
    first_id = None
    if chunk.ids is not None:
        first_id = int(chunk.ids[0]) if len(chunk.ids) else 0
        if not np.array_equal(chunk.ids, np.arange(first_id, first_id + len(chunk.documents))):
            raise SearchEngineError("a chunk's vector ids are not one per document, consecutive: the build stops")
    with report.timing("storing"):
        change = store.add(chunk.documents, first_id)
    report.documents += len(chunk.documents)
    report.added += len(change.ids)
    report.repeats += sum(change.repeated)
    report.replaced += len(change.removed)
    report.updated += change.updated
    report.superseded += change.superseded
    report.truncated += chunk.truncated
    return change


def _store_and_adopt(
    store: DocumentStore,
    segments: WrittenSegments,
    chunks: Iterable[Chunk],
    report: IndexingReport,
    total: int | None,
    progress: bool,
) -> None:
    """Store the rows of chunks whose vectors workers wrote as segments, and adopt those segments. A vector no row
    keeps (a document a later one with its external id replaced, in the same input) is tombstoned, as are the
    vectors of the rows such upserts removed."""
    with _progress(total, progress, "Indexing") as bar:
        for chunk in chunks:
            change = _store_rows(store, chunk, report)
            report.vectors += len(change.ids)
            with report.timing("vector index"):
                segments.adopt(chunk.segments)
                unkept = np.setdiff1d(np.asarray(chunk.ids, dtype=np.int64), np.asarray(change.ids, dtype=np.int64))
                dropped = np.union1d(unkept, np.asarray(change.removed_vectors, dtype=np.int64))
                drop_vectors(store, segments, dropped.tolist())
            bar.update(len(chunk.documents))


def _passages(
    store: DocumentStore,
    encoder: Encoder,
    ids: list[int],
    documents: list[Document],
    repeated: list[bool],
    passages: PassageSplitting | None,
    report: IndexingReport,
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """The vectors new documents need: their vector ids, the text each embeds and whether that text is new. One
    per document (its whole text) unless `passages` splits the longer ones, whose passages the store records;
    a document read from a file is cut along its blocks and sections. Where `passages` says so, each passage is
    embedded after its heading, in a window shortened to leave room for it; the spans stored are the text's own."""
    first_seen = [not repeat for repeat in repeated]
    texts = [document.text for document in documents]
    if passages is None:
        report.vectors += len(ids)
        return np.asarray(ids, dtype=np.int64), texts, np.asarray(first_seen, dtype=bool)
    spans, headings = _passage_spans(encoder, documents, passages)
    vector_ids = store.add_passages({i: s for i, s in zip(ids, spans) if len(s) > 1})
    report.split += len(vector_ids)
    out_ids: list[int] = []
    out_texts: list[str] = []
    out_first: list[bool] = []
    for document, text, document_spans, fresh, own in zip(ids, texts, spans, first_seen, headings):
        for vector_id, (start, end) in zip(vector_ids.get(document, [document]), document_spans):
            out_ids.append(vector_id)
            out_texts.append(with_heading(heading_at(own, start), text[start:end]))
            out_first.append(fresh)
    report.vectors += len(out_ids)
    return np.asarray(out_ids, dtype=np.int64), out_texts, np.asarray(out_first, dtype=bool)


def _passage_spans(
    encoder: Encoder, documents: Sequence[Document], passages: PassageSplitting
) -> tuple[list[list[Span]], list[tuple[tuple[int, str], ...]]]:
    """Each document's passage spans as `passages` splits it (along its blocks and sections where it was read from
    a file), and the headings its passages are embedded after (none unless `passages` says so)."""
    structures = [(document.blocks, document.section_starts) if document.blocks else None for document in documents]
    windows: int | list[int] = passages.tokens
    headings: list[tuple[tuple[int, str], ...]] = [() for _ in documents]
    if passages.headings:
        windows, headings = encoder.fit_headings([document.headings for document in documents], passages.tokens)
    spans = encoder.passage_spans([document.text for document in documents], windows, passages.overlap, structures)
    return spans, headings


def texts_to_embed(encoder: Encoder, documents: Sequence[Document], passages: PassageSplitting | None) -> int:
    """How many texts adding `documents` would embed at most: one per document, or one per passage where
    `passages` splits them (each distinct text is embedded once, so a repeated one counts more than it costs)."""
    if passages is None:
        return len(documents)
    return sum(len(spans) for spans in _passage_spans(encoder, documents, passages)[0])


def drop_vectors(
    store: DocumentStore, vectors: Vectors | NewVectors | WrittenSegments, ids: list[int] | np.ndarray
) -> None:
    """Remove deleted documents' vectors, or tombstone them where the index type cannot remove in place."""
    if len(ids) and not vectors.remove(np.asarray(ids, dtype=np.int64)):
        store.tombstones.add(ids)


def _stream_and_add(
    store: DocumentStore,
    vectors: Vectors | NewVectors,
    encoder: Encoder,
    chunks: Iterable[Chunk],
    whitening: Whitening | None,
    passages: PassageSplitting | None,
    report: IndexingReport,
    total: int | None,
    progress: bool,
) -> None:
    with _progress(total, progress, "Indexing") as bar:
        for chunk in chunks:
            ids, embeddings, removed, _ = _store_and_encode(store, encoder, chunk, passages, report)
            with report.timing("vector index"):
                drop_vectors(store, vectors, removed)
                if len(ids):
                    vectors.add(to_index_vectors(embeddings, whitening), ids)
            bar.update(len(chunk.documents))


def _spool_and_add(
    generation: Generation,
    store: DocumentStore,
    vectors: Vectors,
    encoder: Encoder,
    chunks: Iterable[Chunk],
    fit_k: int | None,
    whitening: Whitening | None,
    passages: PassageSplitting | None,
    report: IndexingReport,
    total: int | None,
    progress: bool,
) -> Whitening | None:
    """Embed everything once into a spool file on disk, fit whitening and/or train the index on it, then add.

    The spool keeps memory flat for corpora larger than RAM; the text is never embedded twice.
    """
    spool_path = generation.path("spool")
    statistics = CovarianceAccumulator(encoder.dimension) if fit_k is not None else None
    all_ids: list[np.ndarray] = []
    removed: set[int] = set()
    try:
        with spool_path.open("wb") as spool, _progress(total, progress, "Embedding") as bar:
            for chunk in chunks:
                ids, embeddings, removed_now, first_seen = _store_and_encode(store, encoder, chunk, passages, report)
                removed.update(removed_now)
                if statistics is not None:
                    statistics.update(embeddings[first_seen])
                spool.write(np.ascontiguousarray(embeddings, dtype=np.float32).tobytes())
                all_ids.append(ids)
                bar.update(len(chunk.documents))
        if report.added == 0:
            return whitening
        if statistics is not None:
            with report.timing("whitening"):
                whitening = Whitening.fit(statistics, fit_k)
        with report.timing("vector index"):
            _add_spooled(spool_path, encoder.dimension, np.concatenate(all_ids), removed, vectors, whitening, progress)
        return whitening
    finally:
        spool_path.unlink(missing_ok=True)


def _add_spooled(
    spool_path: Path,
    dimension: int,
    ids: np.ndarray,
    removed: set[int],
    vectors: Vectors,
    whitening: Whitening | None,
    progress: bool,
) -> None:
    """Train `vectors` if its type needs it, then add the spooled embeddings (row i is document ids[i]), leaving out
    the ids in `removed` (texts an upsert replaced later in the input)."""
    spooled = np.memmap(spool_path, dtype=np.float32, mode="r").reshape(-1, dimension)
    if vectors.needs_training:
        vectors.train(to_index_vectors(spooled[training_rows(len(spooled))], whitening))
    with _progress(len(spooled), progress, "Adding") as bar:
        for start in range(0, len(spooled), CHUNK * 8):
            stop = start + CHUNK * 8
            live = ~np.isin(ids[start:stop], list(removed))
            vectors.add(to_index_vectors(spooled[start:stop][live], whitening), ids[start:stop][live])
            bar.update(min(stop, len(spooled)) - start)
    del spooled


def reembed_index(directory: IndexDirectory, encoder: Encoder, progress: bool = False) -> IndexingReport:
    """Embed every stored document again with `encoder` (another model, e.g. one adapted to this corpus) into a
    new vector index of the same type, refitting whitening-k when the index has it. The store is kept as it is:
    ids, external ids, metadata, origins. One commit: until it, the index keeps its old model and vectors, so an
    interrupted or killed run leaves the old index whole. (A stored clustering or near-duplicate marks, made
    from the old vectors, are kept too; make them again with the new model if they matter.)"""
    report = IndexingReport()
    started = time.perf_counter()
    truncated_before = encoder.truncated
    with rewriting(directory, library_versions()) as rewrite:
        previous = rewrite.manifest
        fit_k = previous.whitening.k if previous.whitening else None
        if fit_k is not None and fit_k > encoder.dimension:
            raise SearchEngineError(
                f"the index keeps {fit_k} whitened dimensions, more than the new model's {encoder.dimension}"
            )
        store = rewrite.store
        ids = store.documents.ids()
        report.index_type = previous.index.type
        report.documents = report.added = len(ids)
        if previous.passages is not None:
            raise SearchEngineError(
                f"index {directory.path} splits long documents into passages, which re-embedding does not do yet: "
                "build a new index with the adapted model (`searchengine index ... --model DIR --passages`)"
            )
        vectors = create_vectors(previous.index.type, fit_k or encoder.dimension, previous.index.shards)
        statistics = CovarianceAccumulator(encoder.dimension) if fit_k is not None else None
        spool_path = rewrite.generation.path("spool")
        seen: set[bytes] = set()
        try:
            with spool_path.open("wb") as spool, _progress(len(ids), progress, "Embedding") as bar:
                for start in range(0, len(ids), CHUNK):
                    chunk = store.get(ids[start : start + CHUNK])
                    texts = [chunk[int(i)].text for i in ids[start : start + CHUNK]]
                    distinct = list(dict.fromkeys(texts))
                    embedded = encoder.encode(distinct)
                    if statistics is not None:
                        digests = [hashlib.sha256(text.encode("utf-8")).digest() for text in distinct]
                        fresh = [row for row, digest in enumerate(digests) if digest not in seen]
                        seen.update(digests)
                        statistics.update(embedded[fresh])
                    row_of = {text: row for row, text in enumerate(distinct)}
                    embeddings = embedded[[row_of[text] for text in texts]]
                    spool.write(np.ascontiguousarray(embeddings, dtype=np.float32).tobytes())
                    bar.update(len(texts))
            whitening = Whitening.fit(statistics, fit_k) if statistics is not None else None
            if len(ids):
                _add_spooled(spool_path, encoder.dimension, ids, set(), vectors, whitening, progress)
        finally:
            spool_path.unlink(missing_ok=True)
        if len(store.tombstones.ids()):
            store.tombstones.clear()
        identity = model_identity(encoder)  # an adapted model inside the index is recorded relative to it
        identity = replace(identity, spec=spec_inside(identity.spec, directory.path))
        rewrite.replace_model(identity, vectors, whitening)
        report.truncated = encoder.truncated - truncated_before
    report.seconds = time.perf_counter() - started
    return report


def fit_whitening(chunks: Iterable[Chunk], encoder: Encoder, k: int, progress: bool) -> Whitening:
    """Whitening-k fitted on the documents of `chunks` (each distinct text once), embedded here or as they come."""
    statistics = CovarianceAccumulator(encoder.dimension)
    seen: set[str] = set()
    with _progress(None, progress, "Fitting whitening") as bar:
        for chunk in chunks:
            fresh = [row for row, document in enumerate(chunk.documents) if document.content_hash not in seen]
            seen.update(document.content_hash for document in chunk.documents)
            if chunk.vectors is None:
                statistics.update(encoder.encode([chunk.documents[row].text for row in fresh]))
            else:
                statistics.update(chunk.vectors[np.asarray(fresh, dtype=np.int64)])
            bar.update(len(chunk.documents))
    return Whitening.fit(statistics, k)


def library_versions() -> dict[str, str]:
    """The versions a manifest records: what built the index and what encodes its queries (torch's and
    transformers' from their installed metadata, so that a write embedding without them does not import them)."""
    return {
        "searchengine": _package_version("searchengine"),
        "faiss": faiss.__version__,
        "torch": _package_version("torch"),
        "transformers": _package_version("transformers"),
    }


@functools.cache
def _package_version(distribution: str) -> str:
    """An installed distribution's version, read once a process: importlib.metadata parses the installed metadata
    each time, which every commit of a one-document add would pay, and the code running is the code loaded at the start
    anyway."""
    return version(distribution)


def model_identity(encoder: Encoder) -> ModelIdentity:
    """How the manifest names a model: enough to reload it and to tell a different one apart."""
    source = encoder.source
    return ModelIdentity(
        name=source.name,
        spec=source.spec,
        fingerprint=encoder.fingerprint,
        pooling=source.pooling,
        normalize=source.normalize,
        dimension=encoder.dimension,
        max_seq_length=encoder.max_seq_length,
        prompt=None if source.prompt is None else PromptRecord(source.prompt.template, source.prompt.denoise),
        transforms=tuple(f"{kind.rsplit('.', 1)[-1]} ({folder.name})" for kind, folder in source.transforms),
    )


def delete_from_index(directory: IndexDirectory, ids: list[int] | None, external_ids: list[str] | None) -> list[int]:
    """Delete documents by id or by external id, all or none; returns the ids deleted."""
    with writing_in_place(directory) as write:
        targets = list(ids or []) + (write.store.documents.ids_for_external(external_ids) if external_ids else [])
        drop_vectors(write.store, write.vectors, write.store.delete(targets))
    return sorted(set(targets))


def compact_index(directory: IndexDirectory) -> int:
    """Merge every segment into one, without the vectors of deleted documents, and give the store's free pages
    back (VACUUM); returns how many vectors were dropped.
    An index written by an older version is converted first (which gives a store written before keyword search
    its keyword index)."""
    upgrade_index(directory)
    result = merge(directory)
    with directory.locked(wait=LOCK_WAIT):  # the store's free pages too: deleted rows, their keyword index
        store = DocumentStore(directory.path / directory.read_settings().files["documents"].name, writable=True)
        try:
            store.reclaim_space()
        finally:
            store.close()
    return 0 if result is None else result.dropped
