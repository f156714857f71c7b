"""The trained template of an index whose type needs training (IVF, PQ, SQ8): its FAISS index trained and empty,
kept in the index directory as `template.<n>.faiss` and named by the store (indexer/tables/segment_table.py).

Every segment of the index's type starts as a copy of it (`faiss.clone_index`), so its coarse quantizer and its
PQ or SQ codebooks are the template's, byte for byte: a small add encodes its vectors with it and writes a small
segment of codes (and their originals) in milliseconds, and a merge re-encodes the live vectors of its segments
from their originals with it. Neither trains: only a build and `compact --retrain` do, and each writes a new
template with the segments it encodes, named in the same commit.

The template also says when a retrain is worth it. It records the mean quantization error of the vectors it was
trained on (how far a vector is from what its codes decode to); every write that encodes with it adds its vectors'
error to the store, so `info` compares the error of what was added since with the training error. Data that
drifted away from the training distribution decodes worse, and searches of it recall less (measured in
benchmarks/storage/drift.py, which RETRAIN_ERROR_RATIO comes from).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np
from searchengine.indexer.commit.crash_points import crash_point
from searchengine.indexer.commit.durable_files import file_checksum, fsync_path
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.vectors.factory_codes import is_product_quantized
from searchengine.indexer.vectors.originals import OriginalsSpool, is_binary, keeps_originals
from searchengine.indexer.vectors.recorded_file import check_recorded_size
from searchengine.indexer.vectors.vector_index import VectorIndex

TEMPLATE_PREFIX = "template"
ERROR_SAMPLE = 2_000
"""Vectors of a write (or a training sample) whose quantization error is measured: enough for a mean within a few
per cent, few enough to cost under a millisecond or two."""
RETRAIN_ERROR_RATIO = 1.2
"""`info` advises `compact --retrain` for a product-quantized type once the vectors added since training decode with
this much more error than the training vectors did. Measured by benchmarks/storage/drift.py (IVF64,PQ48x4 trained on
10,000 real Wikipedia vectors, benchmarks/storage/results/drift*.json): with STS-B sentences added (9 to 50 % of
the index) the ratio was 1.31 to 1.34 and a retrain raised recall@10 of queries like them from 0.51-0.73 to
0.72-0.87 (100 rescored); with more Wikipedia vectors added (9 to 33 %) it was 1.05 to 1.06 and a retrain bought
nothing (-0.03 to 0.00). Nothing between was measured: 1.2 lies in that gap."""


@dataclass(frozen=True)
class TemplateRecord:
    """The template as the store names it: its file, FAISS type, size and checksum; how many vectors trained it
    and the mean quantization error of those; the first id added after it was trained; and the vectors encoded
    with it since (`added`, with the sum of their errors, `added_error`)."""

    name: str
    factory: str
    size: int
    checksum: str
    trained_vectors: int
    training_error: float | None
    next_id: int
    added: int = 0
    added_error: float = 0.0
    measured: int = 0
    """How many of the `added` vectors had their error measured (a sample of each write's)."""

    @property
    def added_error_ratio(self) -> float | None:
        """The mean error of the vectors added since training over the training vectors' (None: not measured)."""
        if not self.measured or not self.training_error:
            return None
        return (self.added_error / self.measured) / self.training_error


def retrain_rule_applies(factory: str) -> bool:
    """Whether RETRAIN_ERROR_RATIO was measured for templates of type `factory`: product quantization, after an OPQ
    rotation or not (indexer/vectors/factory_codes.py). For others `info` shows the ratio without advice: an 8-bit
    scalar quantizer's error is so small that new data just outside its trained ranges multiplies it (4x for more of
    the same sentences), with little effect on recall once rescored; an OPQ rotation before Flat or HNSW stores the
    vectors exactly and has no error to compare."""
    return is_product_quantized(factory)


def template_name(number: int) -> str:
    """The file name of template `number` (the same numbers as segments': the time in nanoseconds)."""
    return f"{TEMPLATE_PREFIX}.{number}.faiss"


def template_of(index: VectorIndex) -> VectorIndex:
    """The trained structures of `index` (coarse quantizer, codebooks, search settings) as a new empty index."""
    copy = faiss.deserialize_index(index.to_bytes())  # a copy on the CPU, where a GPU holds the index
    copy.reset()
    return VectorIndex(copy, index.factory)


def encoder_of(template: VectorIndex, originals: str | None) -> VectorIndex:
    """An empty index of the template's type and training, to add vectors to (no training), which keeps the
    vectors it is given as `originals` for its segment's originals file where its codes are approximate."""
    made = VectorIndex(faiss.clone_index(template.index), template.factory)
    if keeps_originals(template.factory):
        made.spool = OriginalsSpool(made.dimension, originals)
    return made


def encodes(template: VectorIndex, count: int) -> bool:
    """Whether a segment of `count` vectors is encoded with `template`, or kept exact (Flat). An IVF template's
    coarse quantizer costs every query nlist·d multiply-adds in every segment that uses it, where scanning an
    exact segment costs count·d: below nlist vectors the exact segment is both exact and cheaper to search. A
    10-vector segment took 0.0004 ms a query exact, and 0.006, 0.32 and 0.26 ms as codes of IVF256, IVF1024 and
    IVF4096 templates (benchmarks/storage/small_segment_cost.py, batches of 200, one thread, best of 5, this
    project's loaded 2-core machine); such segments hold few vectors, as the merge policy keeps at most nine a
    level. Types without a coarse quantizer (PQ, SQ8, HNSW,SQ8, LSH) always encode."""
    try:
        lists = faiss.extract_index_ivf(template.index).nlist
    except RuntimeError:
        return True
    return count >= lists


def quantization_errors(template: VectorIndex, vectors: np.ndarray) -> np.ndarray | None:
    """The squared distance of each of `vectors` from what the template's codes decode it to (None where the type
    has no decoder to compare with: binary codes, exact types)."""
    if is_binary(template.factory) or not keeps_originals(template.factory):
        return None
    codec = faiss.downcast_index(template.index)
    if isinstance(codec, faiss.IndexIDMap2 | faiss.IndexIDMap):
        codec = faiss.downcast_index(codec.index)
    if isinstance(codec, faiss.IndexHNSW):
        codec = faiss.downcast_index(codec.storage)
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if isinstance(codec, faiss.IndexIVF):
        return _inverted_list_errors(codec, vectors)
    try:
        decoded = codec.sa_decode(codec.sa_encode(vectors))
    except RuntimeError:
        return None
    return ((vectors - decoded) ** 2).sum(axis=1)


def _inverted_list_errors(ivf: faiss.IndexIVF, vectors: np.ndarray) -> np.ndarray | None:
    """quantization_errors of an IVF type, decoded here as FAISS decodes it (each vector's list by the coarse
    quantizer, then its residual from that list's centroid through the fine codes): FAISS 1.15's IndexIVF.sa_decode
    crashes the process (a segfault) once a list number takes two bytes, above 256 lists, in every IVF type tried
    (PQ, fast-scan PQ, SQ8, Flat). Equal to sa_decode's where that works (tests/indexer/vectors/test_template.py)."""
    fine = ivf.pq if hasattr(ivf, "pq") else getattr(ivf, "sq", None)
    if fine is None:
        return None
    _, lists = ivf.quantizer.search(vectors, 1)
    centroids = ivf.quantizer.reconstruct_batch(lists[:, 0]) if ivf.by_residual else 0.0
    decoded = fine.decode(fine.compute_codes(np.ascontiguousarray(vectors - centroids))) + centroids
    return ((vectors - decoded) ** 2).sum(axis=1)


def sample_errors(template: VectorIndex, vectors: np.ndarray) -> tuple[int, float] | None:
    """(vectors measured, the sum of their quantization errors) over an evenly spread sample of `vectors` of at
    most ERROR_SAMPLE; None where the type cannot be measured."""
    step = max(1, len(vectors) // ERROR_SAMPLE)
    errors = quantization_errors(template, vectors[::step][:ERROR_SAMPLE])
    return None if errors is None else (len(errors), float(errors.sum()))


def training_error(template: VectorIndex, sample: np.ndarray) -> float | None:
    """The mean quantization error of the training `sample` (what later additions are compared with)."""
    measured = sample_errors(template, sample)
    return None if measured is None or not measured[0] else measured[1] / measured[0]


@dataclass
class TrainedTemplate:
    """A template just trained, not yet written: the empty trained index, and what it was trained on."""

    index: VectorIndex
    trained_vectors: int
    training_error: float | None


def train_template(factory: str, dimension: int, sample: np.ndarray) -> TrainedTemplate:
    """`factory` trained on `sample` (no vectors added): a new template."""
    index = VectorIndex.create(factory, dimension)
    index.train(sample)
    index.spool = None
    return TrainedTemplate(index, len(sample), training_error(index, sample))


def write_template(
    directory: Path, trained: TrainedTemplate, name: str, next_id: int, mode_of: Path | None = None
) -> TemplateRecord:
    """Write the template as file `name` in `directory`, fsynced (file and directory), with the permissions of
    `mode_of` (the store) when given; an orphan that clean-up removes until a commit names it."""
    path = directory / name
    try:
        trained.index.save(path)
    except (RuntimeError, OSError) as exc:
        path.unlink(missing_ok=True)
        raise IndexerError(
            f"cannot write template file {path} ({str(exc).strip().splitlines()[-1]}); the index is as it was before"
        ) from None
    crash_point("template-written")
    if mode_of is not None:
        shutil.copymode(mode_of, path)
    fsync_path(path)
    fsync_path(directory)
    return TemplateRecord(
        name,
        trained.index.factory,
        path.stat().st_size,
        file_checksum(path),
        trained.trained_vectors,
        trained.training_error,
        next_id,
    )


def load_template(directory: Path, record: TemplateRecord, dimension: int) -> VectorIndex:
    """The template file `record` names, checked to be of its recorded size, empty, and of the index's
    `dimension`."""
    path = directory / record.name
    check_recorded_size(path, record.size, "template file", "run `searchengine compact --retrain` on the index")
    template = VectorIndex.load(path, record.factory)
    if template.count or template.needs_training or template.dimension != dimension:
        raise IndexerError(
            f"template file {path} is not an empty trained index of dimension {dimension}; run `searchengine compact "
            "--retrain` on the index"
        )
    return template
