"""Embed a corpus on a Ray cluster: a Ray Data pipeline reads the corpus files on the workers, and a pool of
encoder actors (one model each) embeds them. Ray is an optional dependency (`pip install 'searchengine[ray]'`),
imported only here and only when used.

Each actor writes the vectors of each part it embeds as one immutable segment file into the index directory
(`SegmentTarget`: on a file system every node shares), and sends back only the rows (text, origin, id) and the
segment's record (name, count, size, checksum, id range). This process (the driver) stores the rows and names
the segments in the build's one commit (searchengine.engine.indexing, indexer/vectors/written_segments.py), so no
vector crosses back. The ids are given up front: document number i of the corpus (from 0) gets id i, and its
vector is written under it; the driver stores each row under that id. Where the index must first be fitted or
trained (whitening fitted on the corpus itself, IVF and PQ types), a first pass embeds a seeded sample of the
corpus (the documents a build in one process trains on: indexing.training_rows) and sends those vectors back; the
driver fits the whitening and trains the index type on them, and ships both to the workers with the settings.

The pipeline keeps the corpus order (Ray Data's preserve_order), so the driver stores the documents in the order
a build in one process does: the same ids, the same upserts. Every node reads the corpus files at the same path
(a shared file system) and has the same searchengine, model and Python packages installed.
"""

from __future__ import annotations

import json
import logging
import re
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from searchengine.engine.embedding import to_index_vectors
from searchengine.engine.indexing import CHUNK, TRAINING_SAMPLE, Chunk, training_rows
from searchengine.errors import SearchEngineError
from searchengine.indexer.tables.store import Document
from searchengine.indexer.vectors.segments import (
    SMALL_SEGMENT_LIMIT,
    SegmentRecord,
    segment_name,
    write_segment,
)
from searchengine.indexer.vectors.vector_index import VectorIndex
from searchengine.indexer.vectors.whitening import Whitening
from searchengine.reading.corpus import CorpusPart, JsonFields, corpus_parts, read_part

if TYPE_CHECKING:
    from searchengine.encoding.encoder import Encoder

INSTALL = "embedding with Ray needs the ray package on this machine and every node: pip install 'searchengine[ray]'"
CONNECT_SECONDS = 5.0
"""How long the head of a cluster named by HOST:PORT may take to accept a connection."""
WORKER_BATCH = 512
"""Texts per call of an encoder actor: enough for its smart batching to pad little, small enough to spread a
small corpus over the actors."""
MAX_PARTS = 4096
"""At most this many parts (Ray tasks reading the corpus, each one block for the actors); larger corpora get
larger parts. Ray Data sends each block to one actor, so parts are what spreads the corpus over the actors."""
PARTS_PER_WORKER = 4
"""Where the actors write a segment per part: parts are made as large as keeps about this many per actor (so a
slow actor holds up little), for fewer, larger segments (and larger where that makes them graph or IVF segments:
`segment_parts`)."""


@dataclass(frozen=True)
class RaySettings:
    """Where and how a corpus is embedded with Ray (`searchengine index --ray`, BuildSettings.ray)."""

    address: str | None = None
    """The cluster: 'auto', 'HOST:6379' (a node of the cluster runs this process) or 'ray://HOST:10001'. None: the
    one RAY_ADDRESS names or `ray start` runs on this machine, else a Ray started for this run alone."""
    workers: int | None = None
    """Encoder actors, one model each; None: one per `threads` CPUs of the cluster."""
    threads: int = 1
    """CPUs each actor reserves and encodes with."""
    batch_size: int = WORKER_BATCH
    """Texts per call of an actor."""
    part_size: int | None = None
    """Documents per part an actor embeds and writes as one segment (at most, in whole batches, at least one);
    None: about PARTS_PER_WORKER parts per actor, made larger than SMALL_SEGMENT_LIMIT where the corpus has that
    many documents per actor, so each segment is of the index's own type (`segment_parts`)."""


@dataclass(frozen=True)
class SegmentTarget:
    """Where and how encoder actors write the vectors they make, as segments, instead of sending them back."""

    directory: str
    """The index directory, at the same path on every node."""
    first_number: int
    """Segment numbers reserved for the build (indexer/vectors/segments.reserve_segment_numbers): a segment whose first
    document has id i is segment number first_number + i."""
    factory: str
    """The index's FAISS type: that of each segment larger than `exact_limit`."""
    whitening: Whitening | None = None
    """The build's whitening, fitted before the actors start."""
    exact_limit: int = SMALL_SEGMENT_LIMIT
    """Segments of up to this many vectors are exact (Flat), as every small segment is (indexer/vectors/segments.py),
    larger ones of `factory`: the limit the driver planned the parts and the training with."""
    trained: np.ndarray | None = None
    """`factory` trained on the build's sample (VectorIndex.to_bytes), which each segment of that type copies and
    adds its vectors to; None where no segment needs training."""


def import_ray() -> ModuleType:
    """The ray module with Ray Data, or one SearchEngineError saying how to install it."""
    try:
        import ray
        import ray.data  # noqa: F401 (Ray Data is an extra of ray: check it is there too)
    except ImportError:
        raise SearchEngineError(INSTALL) from None
    return ray


class RayEmbedder:
    """A connection to a Ray cluster that embeds corpus files there; made by `ray_embedder`."""

    def __init__(self, ray: ModuleType, settings: RaySettings, encoder: Encoder, workers: int) -> None:
        self.ray = ray
        self.settings = settings
        self.encoder = encoder
        self.workers = workers
        """Encoder actors each pipeline runs."""

    def embedded(
        self,
        parts: list[CorpusPart],
        jsonl: bool | None,
        fields: JsonFields = JsonFields(),
        segments: SegmentTarget | None = None,
    ) -> Any:  # noqa: ANN401 (a ray.data.Dataset; ray is imported only when used)
        """The pipeline (lazy: it runs when iterated) whose rows are the documents of `parts` in order: their
        text, origin and id, with their vector, or (`segments` given) with the record of the segment an actor
        wrote it into on the first row of each segment."""
        data = self.ray.data
        items = [{**vars(part), "first_id": first} for part, first in zip(parts, _first_ids(parts))]
        documents = data.from_items(items, override_num_blocks=len(items)).map_batches(
            read_documents,
            batch_size=1,
            fn_kwargs={"jsonl": jsonl, "fields": fields},
            num_cpus=0,  # reading is light; the CPUs are the encoders'
            compute=data.TaskPoolStrategy(size=self.workers),
        )
        return documents.map_batches(
            EncoderWorker,
            batch_size=self.settings.batch_size if segments is None else None,  # a segment per part (Ray block)
            fn_constructor_kwargs={
                "options": worker_options(self.encoder, self.settings.threads),
                "segments": segments,
            },
            num_cpus=self.settings.threads,
            compute=data.ActorPoolStrategy(size=self.workers),
        )

    def chunks(
        self,
        parts: list[CorpusPart],
        jsonl: bool | None,
        fields: JsonFields = JsonFields(),
        segments: SegmentTarget | None = None,
    ) -> Iterator[Chunk]:
        """The documents of `parts` in order, in chunks that carry their vectors (the encoder's output, before
        any whitening: the driver whitens, with the one transform it fitted), or, when `segments` says where the
        actors write them, the ids of the documents and the segments written."""
        for batch in self._in_order(lambda: self.embedded(parts, jsonl, fields, segments)):
            origins = [json.loads(origin) for origin in batch["origin"]]
            documents = [Document(str(text), **origin) for text, origin in zip(batch["text"], origins)]
            truncated = int(batch["truncated"].sum())
            if segments is None:
                yield Chunk(documents, np.asarray(batch["vector"], dtype=np.float32), truncated)
            else:
                written = tuple(SegmentRecord.from_dict(json.loads(record)) for record in batch["segment"] if record)
                yield Chunk(documents, None, truncated, np.asarray(batch["id"], dtype=np.int64), written)

    def embedded_documents(self, documents: list[Document]) -> Iterator[Chunk]:
        """`documents` (read here: a sample of the corpus) embedded by the actors, in chunks with their vectors."""
        data = self.ray.data
        batch_size = self.settings.batch_size
        blocks = max(1, min(MAX_PARTS, -(-len(documents) // batch_size)))

        def embedded() -> Any:  # noqa: ANN401 (a ray.data.Dataset)
            texts = data.from_items([{"text": document.text} for document in documents], override_num_blocks=blocks)
            return texts.map_batches(
                EncoderWorker,
                batch_size=batch_size,
                fn_constructor_kwargs={"options": worker_options(self.encoder, self.settings.threads)},
                num_cpus=self.settings.threads,
                compute=data.ActorPoolStrategy(size=self.workers),
            )

        start = 0
        for batch in self._in_order(embedded):
            vectors = np.asarray(batch["vector"], dtype=np.float32)
            yield Chunk(documents[start : start + len(vectors)], vectors, int(batch["truncated"].sum()))
            start += len(vectors)

    def _in_order(self, dataset: Callable[[], Any]) -> Iterator[dict[str, np.ndarray]]:
        """The batches (CHUNK rows each) of the pipeline `dataset` makes, in its order (made here, as a pipeline
        keeps the settings of when it was made); a worker's own SearchEngineError is raised as it is, without Ray's
        wrapping."""
        context = self.ray.data.DataContext.get_current()
        before = (context.execution_options.preserve_order, context.enable_progress_bars)
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False  # the driver's own progress bar counts the documents
        try:
            yield from dataset().iter_batches(batch_size=CHUNK, batch_format="numpy", prefetch_batches=2)
        except Exception as exc:
            error = _our_error(exc)
            if error is None:
                raise
            raise error from None  # a worker's own error (a missing file or model), without Ray's wrapping
        finally:
            context.execution_options.preserve_order, context.enable_progress_bars = before


@contextmanager
def ray_embedder(settings: RaySettings, encoder: Encoder) -> Iterator[RayEmbedder]:
    """Connect to the cluster `settings` names (or use the connection this process already has, which is left
    open) and yield an embedder for `encoder`'s model; disconnects on leaving if it connected."""
    ray = import_ray()
    connected_here = not ray.is_initialized()
    if connected_here:
        _check_reachable(settings.address)
        try:
            ray.init(address=settings.address, logging_level=logging.WARNING, log_to_driver=False)
        except ConnectionError:
            raise SearchEngineError(
                "no Ray cluster runs on this machine (nor at $RAY_ADDRESS): start one with `ray start --head`, "
                "give a head's HOST:PORT, or use --ray local for a Ray of this run's own"
            ) from None
    try:
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        cpus = int(ray.cluster_resources().get("CPU", 0))
        workers = settings.workers or max(1, cpus // settings.threads)
        if workers * settings.threads > cpus:  # the actors would wait for CPUs that never come
            raise SearchEngineError(
                f"{workers} Ray workers of {settings.threads} threads each need {workers * settings.threads} CPUs, "
                f"but the cluster has {cpus}; ask for fewer workers or threads, or add machines with `ray start`"
            )
        yield RayEmbedder(ray, settings, encoder, workers)
    finally:
        if connected_here:
            ray.shutdown()


def _check_reachable(address: str | None) -> None:
    """Refuse a HOST:PORT head that does not answer, which Ray itself would retry for minutes."""
    match = re.fullmatch(r"([^:/]+):(\d+)", address or "")
    if match is None:
        return
    try:
        socket.create_connection((match[1], int(match[2])), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        raise SearchEngineError(
            f"the Ray head at {address} does not answer ({exc.strerror or exc}): start it there with "
            f"`ray start --head --port {match[2]}`, or check the address"
        ) from None


def worker_options(encoder: Encoder, threads: int) -> dict[str, Any]:
    """Encoder arguments that load `encoder`'s model on a worker the way it runs here (its resolved precision and
    backend; "auto" for both where it splits bulk work from small calls, so each worker makes that choice for its
    own CPU), with `threads` threads, plus the fingerprint the worker's copy must have."""
    source = encoder.source
    split = encoder.bulk_precision is not None
    return {
        "model": source.spec,
        "pooling": source.pooling,
        "batch_size": encoder.batch_size,
        "template": None if source.prompt is None else source.prompt.template,
        "denoise": None if source.prompt is None else source.prompt.denoise,
        "precision": "auto" if split else encoder.precision,
        "backend": "auto" if split else encoder.backend,
        "threads": threads,
        "fingerprint": encoder.fingerprint,
    }


def plan_parts(
    files: list[Path], jsonl: bool | None, fields: JsonFields = JsonFields(), batch_size: int = WORKER_BATCH
) -> list[CorpusPart]:
    """Read the corpus files here once, checking every line (bad input fails before the cluster does any work),
    and cut them into the parts Ray tasks read: one actor batch each, or more to stay within MAX_PARTS."""
    parts = [part for file in files for part in corpus_parts(file, jsonl, fields, batch_size)]
    return merge_parts(parts, -(-len(parts) // MAX_PARTS) * batch_size)


def segment_parts(
    parts: list[CorpusPart],
    workers: int,
    index_type: str,
    batch_size: int = WORKER_BATCH,
    part_size: int | None = None,
) -> list[CorpusPart]:
    """`parts` joined into the parts whose segments the actors write, in whole batches: of up to `part_size`
    documents, or by default about PARTS_PER_WORKER per actor (so a slow actor holds up little), made just larger
    than SMALL_SEGMENT_LIMIT where that still gives every actor a part and the index type is not Flat, so that
    the actors write segments of the index's own type (graphs, IVF lists) and no merge rebuilds them later."""
    if part_size is None:
        count = sum(part.documents for part in parts)
        batches = -(-count // (workers * PARTS_PER_WORKER * batch_size))
        per_worker = -(-count // workers)
        if index_type != "Flat" and batches * batch_size <= SMALL_SEGMENT_LIMIT < per_worker:
            batches = SMALL_SEGMENT_LIMIT // batch_size + 1
    else:
        batches = part_size // batch_size
    return merge_parts(parts, max(1, batches) * batch_size)


def segment_target(
    directory: Path,
    first_number: int,
    index_type: str,
    dimension: int,
    parts: list[CorpusPart],
    whitening: Whitening | None,
    sample: list[Chunk],
) -> SegmentTarget:
    """Where and how the actors write the segments of `parts`, with the index type trained here on the vectors of
    `sample` (whitened first) where it must be (`trains_first`)."""
    trained = None
    if trains_first(parts, index_type, dimension):
        index = VectorIndex.create(index_type, dimension)
        vectors = np.concatenate([chunk.vectors for chunk in sample if chunk.vectors is not None])
        index.train(to_index_vectors(vectors, whitening))
        trained = index.to_bytes()
    directory = directory.resolve()
    return SegmentTarget(str(directory), first_number, index_type, whitening, SMALL_SEGMENT_LIMIT, trained)


def trains_first(parts: list[CorpusPart], index_type: str, dimension: int) -> bool:
    """Whether the index type must be trained before the actors write the segments of `parts`: it needs training
    (IVF, PQ) and a part is large enough to be a segment of that type (the rest are exact)."""
    large = any(part.documents > SMALL_SEGMENT_LIMIT for part in parts)
    return large and VectorIndex.create(index_type, dimension).needs_training


def training_sample(
    parts: list[CorpusPart],
    jsonl: bool | None,
    fields: JsonFields = JsonFields(),
    *,
    sample_size: int = TRAINING_SAMPLE,
) -> list[Document]:
    """The documents of the corpus (cut into `parts`) that a build in one process trains its index on
    (indexing.training_rows: a seeded sample of `sample_size`, all of them up to that), read here in corpus order."""
    rows = training_rows(sum(part.documents for part in parts), sample_size)
    sample: list[Document] = []
    for part, first in zip(parts, _first_ids(parts)):
        start, stop = np.searchsorted(rows, [first, first + part.documents])
        if start < stop:
            documents = list(read_part(part, jsonl, fields))
            sample.extend(documents[row - first] for row in rows[start:stop])
    return sample


def merge_parts(parts: list[CorpusPart], documents: int) -> list[CorpusPart]:
    """Consecutive parts of one file joined into parts of up to `documents` documents."""
    merged: list[CorpusPart] = []
    for part in parts:
        last = merged[-1] if merged else None
        if last is not None and last.path == part.path and last.documents + part.documents <= documents:
            merged[-1] = CorpusPart(last.path, last.offset, last.line, last.documents + part.documents)
        else:
            merged.append(part)
    return merged


def _first_ids(parts: list[CorpusPart]) -> list[int]:
    """The id of each part's first document: document number i of the corpus (from 0) has id i."""
    firsts, total = [], 0
    for part in parts:
        firsts.append(total)
        total += part.documents
    return firsts


def read_documents(batch: dict[str, np.ndarray], jsonl: bool | None, fields: JsonFields) -> dict[str, np.ndarray]:
    """A Ray task: the documents of the corpus parts in `batch` (one, as the pipeline sends them) as columns: the
    text, its origin, metadata and external id as one JSON string, and its id (the part's first id on)."""
    texts, origins, ids = [], [], []
    columns = (batch[key] for key in ("path", "offset", "line", "documents", "first_id"))
    for path, offset, line, documents, first_id in zip(*columns):
        part = CorpusPart(str(path), int(offset), int(line), int(documents))
        if not Path(part.path).is_file():
            raise SearchEngineError(
                f"corpus file {part.path} is not there on a Ray node ({_node()}); every node reads the corpus at "
                "the same path: put it on a shared file system"
            )
        for number, document in enumerate(read_part(part, jsonl, fields)):
            texts.append(document.text)
            origin = {"source": document.source, "line": document.line, "metadata": document.metadata}
            origins.append(json.dumps({**origin, "external_id": document.external_id}))
            ids.append(int(first_id) + number)
    return {
        "text": np.array(texts, dtype=object),
        "origin": np.array(origins, dtype=object),
        "id": np.array(ids, dtype=np.int64),
    }


class EncoderWorker:
    """A Ray actor: loads the model once, checks it is the driver's, and embeds each batch it is sent; with
    `segments`, writes the vectors as a segment there and sends back the segment's record instead of them."""

    def __init__(self, options: dict[str, Any], segments: SegmentTarget | None = None) -> None:
        from searchengine.encoding.encoder import Encoder

        self.segments = segments
        options = dict(options)
        fingerprint = options.pop("fingerprint")
        self.encoder = Encoder(**options)
        if self.encoder.fingerprint != fingerprint:
            raise SearchEngineError(
                f"the model {options['model']} on Ray node {_node()} has fingerprint {self.encoder.fingerprint}, "
                f"not {fingerprint} as on the driver; install the same model on every node"
            )

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        before = self.encoder.truncated
        vectors = self.encoder.encode([str(text) for text in batch["text"]])
        truncated = np.zeros(len(vectors), dtype=np.int64)
        truncated[:1] = self.encoder.truncated - before  # the batch's count on its first row; the driver sums
        if self.segments is None:
            return {**batch, "vector": vectors, "truncated": truncated}
        if not len(vectors):
            return {**batch, "truncated": truncated, "segment": np.zeros(0, dtype=object)}
        record = write_worker_segment(self.segments, vectors, np.asarray(batch["id"], dtype=np.int64))
        segment = np.full(len(vectors), "", dtype=object)
        segment[:1] = json.dumps(asdict(record))  # on the segment's first row: the driver adopts each once
        return {**batch, "truncated": truncated, "segment": segment}


def write_worker_segment(target: SegmentTarget, embeddings: np.ndarray, ids: np.ndarray) -> SegmentRecord:
    """Whiten (when the build does) and write `embeddings` (the vectors of documents `ids`, consecutive) as one
    segment file of the index directory, fsynced and checksummed once (indexer/vectors/segments.write_segment): exact
    while small, else of the index's type, starting from the copy the driver trained where it needs training."""
    directory = Path(target.directory)
    if not directory.is_dir():
        raise SearchEngineError(
            f"index directory {directory} is not there on Ray node {_node()}; the workers write the index's vector "
            "segments there: put the index directory on a file system every node shares, at the same path"
        )
    vectors = to_index_vectors(embeddings, target.whitening)
    if len(ids) <= target.exact_limit:
        index = VectorIndex.create("Flat", vectors.shape[1])
    elif target.trained is not None:
        index = VectorIndex.from_bytes(target.trained, target.factory)  # trained on the driver: one quantiser in all
    else:
        index = VectorIndex.create(target.factory, vectors.shape[1])
    index.add(vectors, ids)
    return write_segment(directory, index, segment_name(target.first_number + int(ids[0])))


def _node() -> str:
    import ray

    return ray.util.get_node_ip_address()


def _our_error(exc: BaseException) -> SearchEngineError | None:
    """The SearchEngineError a Ray task or actor raised, unwrapped from Ray's exceptions around it, if any."""
    from ray.exceptions import RayError

    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, SearchEngineError) and not isinstance(current, RayError):
            return current
        pending.extend([getattr(current, "cause", None), current.__cause__, current.__context__])
    return None
