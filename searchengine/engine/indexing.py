"""The write path: stream documents through the store and the encoder into a FAISS index, then commit."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from searchengine.encoding.passages import (
    PASSAGE_HEADINGS_BY_DEFAULT,
    PASSAGES_BY_DEFAULT,
    check_overlap,
    default_overlap,
)
from searchengine.engine.embedding import to_index_vectors
from searchengine.engine.indexing_report import IndexingReport
from searchengine.engine.manifest_record import library_versions, model_identity
from searchengine.engine.passage_embedding import passage_texts
from searchengine.engine.progress_bar import progress_bar
from searchengine.errors import SearchEngineError
from searchengine.indexer.commit.crash_points import crash_point
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.live_write import NewVectors, writing_in_place
from searchengine.indexer.commit.manifest import PassageSplitting
from searchengine.indexer.commit.rewrite import commit_generation
from searchengine.indexer.tables.store import Document, DocumentStore
from searchengine.indexer.vectors.build_parts import BuildParts, create_vectors
from searchengine.indexer.vectors.index_choice import MEMORY_BUDGET, choice_reason, training_sample_size
from searchengine.indexer.vectors.originals import ORIGINALS_SETTING, keeps_originals, original_type
from searchengine.indexer.vectors.vector_index import default_factory
from searchengine.indexer.vectors.whitening import CovarianceAccumulator, Whitening
from searchengine.indexer.vectors.written_segments import WrittenSegments

if TYPE_CHECKING:  # the encoder (torch, transformers) is imported only by what encodes
    from searchengine.encoding.encoder import Encoder
    from searchengine.indexer.commit.index_directory import Generation
    from searchengine.indexer.tables.upsert import StoreChange
    from searchengine.indexer.vectors.segments import SegmentRecord

CHUNK = 2048
"""Documents read, stored and embedded together; bounds memory whatever the corpus size."""
NO_TEXT = "the input holds no text to index (it is empty or only blank lines)"
TRAINING_SAMPLE = 100_000
"""At most this many vectors train an index type that needs training (IVF, PQ), unless it has more IVF lists than
they train (indexer/vectors/index_choice.training_sample_size)."""


def training_rows(count: int, sample_size: int = TRAINING_SAMPLE) -> np.ndarray:
    """Which of `count` vectors (in the order they are added) train an index type that needs training: a seeded
    sample of `sample_size` (all of them, up to that), sorted. A Ray build embeds the documents at these
    positions of the corpus first (searchengine.engine.ray_embedding), so both builds train on the same ones."""
    return np.sort(np.random.default_rng(0).permutation(count)[:sample_size])


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
    memory_budget: int | None = None
    """Bytes the vectors may take in a query process: what the type chosen for `index_type` None must fit, recorded
    in the index for its later merges (indexer/vectors/index_choice.py)."""
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
    """Segments to split the build's vectors over (searchengine.indexer.vectors.build_parts); 1: one."""
    reading: dict[str, Any] | None = None
    """How the input was read (fields, folders and their rules), recorded so `add` and `sync` read alike."""
    whitening: Whitening | None = None
    """Whitening fitted already (before Ray workers that apply it started), used instead of fitting one."""
    originals: str | None = None
    """How segments whose codes are approximate keep their original vectors: float16 (None) or float32."""
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
    new_only: bool = False,
) -> IndexingReport:
    """Replace whatever `directory` holds with an index of the documents of `chunks`; the old index stays until
    commit. `encoder` embeds the chunks that come without vectors, and names the model in the manifest.

    `allow_empty` lets an empty corpus make an empty index (to `add` to later); such an index cannot be one
    that needs fitting or training, since there is nothing to fit on. `new_only` refuses a directory that holds an
    index already, looked at under the writer lock, so of two such builds at once one makes it (`create`).
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
        if new_only and directory.exists():
            raise SearchEngineError(
                f"index {directory.path} exists already: open it (SearchEngine.open) to add to it, or remove the "
                "folder to start again"
            )
        store = DocumentStore(generation.path("documents"), writable=True)
        store.start_build()  # the hash index is made at the commit, in one pass (indexer/tables/build_hashes.py)
        whitening = settings.whitening
        if settings.whiten_k is not None and settings.whiten_fit is not None and whitening is None:
            with report.timing("whitening"):
                whitening = fit_whitening(settings.whiten_fit, encoder, settings.whiten_k, progress)
        dimension = settings.whiten_k or encoder.dimension
        report.index_type = settings.index_type or default_factory(total, dimension, settings.memory_budget)
        report.index_type_chosen = settings.index_type is None
        if report.index_type_chosen:
            report.index_type_reason = choice_reason(report.index_type, total, dimension, settings.memory_budget)
        vectors: BuildParts | WrittenSegments = create_vectors(
            report.index_type, dimension, settings.shards, settings.originals
        )
        if keeps_originals(report.index_type):  # what later merges keep them as
            store.settings.set(ORIGINALS_SETTING, original_type(settings.originals))
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
        if settings.memory_budget is not None:
            store.settings.set(MEMORY_BUDGET, settings.memory_budget)
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


def embedded_chunks(documents: list[Document], vectors: np.ndarray) -> Iterator[Chunk]:
    """`documents` in chunks, each with its rows of `vectors` (row i is document i's vector)."""
    for start in range(0, len(documents), CHUNK):
        yield Chunk(documents[start : start + CHUNK], vectors[start : start + CHUNK])


def append_to_index(
    directory: IndexDirectory,
    documents: Iterable[Document],
    encoder: Encoder | None,
    total: int | None = None,
    progress: bool = False,
    reading: dict[str, Any] | None = None,
    vectors: np.ndarray | None = None,
) -> IndexingReport:
    """Add `documents` to the existing index in `directory`, embedded by `encoder` and whitened by the index's
    fitted whitening, or, with `vectors` (one row per document, in the index's space: engine/given_vectors.py),
    stored with those, one vector per document, and no encoder; `reading`, when given, replaces the record of how
    the index reads its input (IndexSettings.reading) in the same commit."""
    if total == 0:
        raise SearchEngineError(NO_TEXT)
    report = IndexingReport()
    started = time.perf_counter()
    truncated_before = 0 if encoder is None else encoder.truncated
    chunks = document_chunks(documents) if vectors is None else embedded_chunks(list(documents), vectors)
    with writing_in_place(directory, library_versions()) as write:
        report.index_type = write.manifest.index.type
        report.upgraded = write.upgraded
        _stream_and_add(
            write.store,
            write.vectors,
            encoder,
            _timed_reading(chunks, report),
            write.whitening if vectors is None else None,  # given vectors are in the index's space already
            write.manifest.passages,
            report,
            total,
            progress,
        )
        if report.documents == 0:
            raise SearchEngineError(NO_TEXT)
        if reading is not None:
            write.store.settings.set(READING, reading)
        report.truncated = 0 if encoder is None else encoder.truncated - truncated_before
        commit_started = time.perf_counter()
    report.stages["commit"] = time.perf_counter() - commit_started
    report.seconds = time.perf_counter() - started
    return report


def _store_and_encode(
    store: DocumentStore,
    encoder: Encoder | None,
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
    if encoder is None:
        raise SearchEngineError("documents without vectors need the index's encoder to embed them")
    with report.timing("encoding"):
        ids, texts, first_seen = passage_texts(
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
    with progress_bar(total, progress, "Indexing") as bar:
        for chunk in chunks:
            change = _store_rows(store, chunk, report)
            report.vectors += len(change.ids)
            with report.timing("vector index"):
                segments.adopt(chunk.segments)
                unkept = np.setdiff1d(np.asarray(chunk.ids, dtype=np.int64), np.asarray(change.ids, dtype=np.int64))
                dropped = np.union1d(unkept, np.asarray(change.removed_vectors, dtype=np.int64))
                drop_vectors(store, segments, dropped.tolist())
            bar.update(len(chunk.documents))


def drop_vectors(
    store: DocumentStore, vectors: BuildParts | NewVectors | WrittenSegments, ids: list[int] | np.ndarray
) -> None:
    """Remove deleted documents' vectors, or tombstone them where the index type cannot remove in place."""
    if len(ids) and not vectors.remove(np.asarray(ids, dtype=np.int64)):
        store.tombstones.add(ids)


def _stream_and_add(
    store: DocumentStore,
    vectors: BuildParts | NewVectors,
    encoder: Encoder | None,
    chunks: Iterable[Chunk],
    whitening: Whitening | None,
    passages: PassageSplitting | None,
    report: IndexingReport,
    total: int | None,
    progress: bool,
) -> None:
    with progress_bar(total, progress, "Indexing") as bar:
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
    vectors: BuildParts,
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
        with spool_path.open("wb") as spool, progress_bar(total, progress, "Embedding") as bar:
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
        if vectors.needs_training:
            with report.timing("training"):
                train_spooled(spool_path, encoder.dimension, vectors, whitening)
        with report.timing("vector index"):
            add_spooled(spool_path, encoder.dimension, np.concatenate(all_ids), removed, vectors, whitening, progress)
        return whitening
    finally:
        spool_path.unlink(missing_ok=True)


def train_spooled(spool_path: Path, dimension: int, vectors: BuildParts, whitening: Whitening | None) -> None:
    """Train `vectors` on a sample of the spooled embeddings when its type needs training (else nothing)."""
    if not vectors.needs_training:
        return
    spooled = np.memmap(spool_path, dtype=np.float32, mode="r").reshape(-1, dimension)
    sample = training_rows(len(spooled), training_sample_size(vectors.factory))
    vectors.train(to_index_vectors(spooled[sample], whitening))
    del spooled


def add_spooled(
    spool_path: Path,
    dimension: int,
    ids: np.ndarray,
    removed: set[int],
    vectors: BuildParts,
    whitening: Whitening | None,
    progress: bool,
) -> None:
    """Train `vectors` if its type needs it, then add the spooled embeddings (row i is document ids[i]), leaving out
    the ids in `removed` (texts an upsert replaced later in the input)."""
    train_spooled(spool_path, dimension, vectors, whitening)
    spooled = np.memmap(spool_path, dtype=np.float32, mode="r").reshape(-1, dimension)
    with progress_bar(len(spooled), progress, "Adding") as bar:
        for start in range(0, len(spooled), CHUNK * 8):
            stop = start + CHUNK * 8
            live = ~np.isin(ids[start:stop], list(removed))
            vectors.add(to_index_vectors(spooled[start:stop][live], whitening), ids[start:stop][live])
            bar.update(min(stop, len(spooled)) - start)
    del spooled


def fit_whitening(chunks: Iterable[Chunk], encoder: Encoder, k: int, progress: bool) -> Whitening:
    """Whitening-k fitted on the documents of `chunks` (each distinct text once), embedded here or as they come."""
    statistics = CovarianceAccumulator(encoder.dimension)
    seen: set[str] = set()
    with progress_bar(None, progress, "Fitting whitening") as bar:
        for chunk in chunks:
            fresh = [row for row, document in enumerate(chunk.documents) if document.content_hash not in seen]
            seen.update(document.content_hash for document in chunk.documents)
            if chunk.vectors is None:
                statistics.update(encoder.encode([chunk.documents[row].text for row in fresh]))
            else:
                statistics.update(chunk.vectors[np.asarray(fresh, dtype=np.int64)])
            bar.update(len(chunk.documents))
    return Whitening.fit(statistics, k)
