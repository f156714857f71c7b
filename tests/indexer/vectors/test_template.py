"""The trained template of an index of a trained type (indexer/vectors/template.py): kept by the build and named by
the store, checked by `verify`; small adds and merges encode with it and never train (their segments' trained
structures are the template's, byte for byte); `compact --retrain` trains a new one and re-encodes every segment;
the quantization error of what was added says when that is worth it. Real MiniLM vectors (STS-B test sentences,
tests/fixtures/make_stsb_vectors.py)."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np
import pytest
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.commit.merge_policy import merge
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.tables.store import Document, DocumentStore
from searchengine.indexer.vectors.template import (
    TemplateRecord,
    load_template,
    quantization_errors,
    retrain_rule_applies,
    template_of,
    train_template,
)
from searchengine.indexer.vectors.vector_index import VectorIndex

from tests.indexer.vectors.test_originals import K, build, exact_top, recall, segments_of

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "stsb_vectors.npy"
IVF = "IVF16,PQ16x4"


@pytest.fixture(scope="module")
def vectors() -> np.ndarray:
    """2,552 real MiniLM vectors, L2-normalised float32."""
    loaded = np.load(FIXTURE).astype(np.float32)
    return loaded / np.linalg.norm(loaded, axis=1, keepdims=True)


def template_record(directory: IndexDirectory) -> TemplateRecord | None:
    store = DocumentStore(directory.path / directory.read_settings().files["documents"].name)
    try:
        return store.segments.template()
    finally:
        store.close()


def trained_bytes(index: faiss.Index) -> bytes:
    """An index's trained structures (quantizer, codebooks, search settings), its vectors left out."""
    empty = faiss.deserialize_index(faiss.serialize_index(index))
    empty.reset()
    return faiss.serialize_index(empty).tobytes()


def template_bytes(directory: IndexDirectory) -> bytes:
    record = template_record(directory)
    return faiss.serialize_index(load_template(directory.path, record, 384).index).tobytes()


def add(directory: IndexDirectory, rows: np.ndarray) -> None:
    with writing_in_place(directory) as write:
        change = write.store.add([Document(f"added {i}") for i in range(len(rows))])
        write.vectors.add(rows, np.asarray(change.ids))


def test_a_build_keeps_its_template_and_verify_checks_it(tmp_path: Path, vectors: np.ndarray) -> None:
    directory = build(tmp_path / "index", vectors[:2000], IVF)
    record = template_record(directory)
    assert record is not None and record.factory == IVF and record.trained_vectors == 2000
    assert record.next_id == 2000 and record.training_error > 0 and record.added == 0
    (segment,) = segments_of(directory).segments
    assert trained_bytes(segment.index.index) == template_bytes(directory)  # the build's segment is its copy
    checks = {check.name: check for check in directory.verify()}
    assert record.name in checks and not any(check.problem for check in checks.values())
    with (directory.path / record.name).open("r+b") as handle:  # one byte changed, the size kept
        handle.seek(record.size // 2)
        byte = handle.read(1)
        handle.seek(record.size // 2)
        handle.write(bytes([byte[0] ^ 0xFF]))
    problems = [check.problem for check in directory.verify() if check.problem]
    assert len(problems) == 1 and record.name in problems[0] and "checksum" in problems[0]


def test_exact_and_graph_types_keep_no_template(tmp_path: Path, vectors: np.ndarray) -> None:
    for factory in ("Flat", "HNSW32"):
        directory = build(tmp_path / factory, vectors[:300], factory)
        assert template_record(directory) is None and not list(directory.path.glob("template.*"))
        with pytest.raises(IndexerError, match="has nothing to train"):
            merge(directory, retrain=True)


def test_a_small_add_encodes_with_the_template_and_trains_nothing(tmp_path: Path, vectors: np.ndarray) -> None:
    sq8 = build(tmp_path / "sq8", vectors[:2000], "SQ8")
    add(sq8, vectors[2000:2010])
    new = segments_of(sq8).segments[-1]
    assert new.record.factory == "SQ8" and new.index.originals is not None  # codes, and their originals
    assert trained_bytes(new.index.index) == template_bytes(sq8)
    assert template_record(sq8).added == 10
    ivf = build(tmp_path / "ivf", vectors[:2000], IVF)
    add(ivf, vectors[2000:2010])  # fewer vectors than IVF lists: an exact segment searches them for less
    add(ivf, vectors[2010:2060])
    tiny, small = segments_of(ivf).segments[1:]
    assert tiny.record.factory == "Flat" and tiny.index.originals is None
    assert small.record.factory == IVF and trained_bytes(small.index.index) == template_bytes(ivf)
    assert template_record(ivf).added == 60 and template_record(ivf).measured == 60


def test_a_merge_encodes_with_the_template_byte_for_byte(tmp_path: Path, vectors: np.ndarray) -> None:
    directory = build(tmp_path / "index", vectors[:1500], IVF)
    before = template_record(directory)
    for start in range(1500, 2500, 250):
        add(directory, vectors[start : start + 250])
    with writing_in_place(directory) as write:
        write.store.tombstones.add(write.store.delete([3, 1600]))
    queries = vectors[2500:]
    live = np.setdiff1d(np.arange(2500), [3, 1600])
    exact = live[exact_top(vectors[live], queries)]
    codes = segments_of(directory).rescoring(0)  # the codes alone (rescoring takes 100 from each segment)
    before_merge = recall(codes.search(queries, K, excluded=np.array([3, 1600]))[1], exact)
    merge(directory)
    (segment,) = segments_of(directory).segments
    assert segment.record.factory == IVF and segment.index.count == 2498
    assert trained_bytes(segment.index.index) == template_bytes(directory)
    after = template_record(directory)
    assert (after.name, after.checksum) == (before.name, before.checksum)  # the same template: nothing was trained
    merged = recall(segments_of(directory).rescoring(0).search(queries, K)[1], exact)
    assert merged >= before_merge - 0.02  # one segment of the same codes finds what the five did
    assert not [check.problem for check in directory.verify() if check.problem]


def test_compact_retrain_trains_a_new_template_and_reencodes_every_segment(tmp_path: Path, vectors: np.ndarray) -> None:
    directory = build(tmp_path / "index", vectors[:1000], IVF)
    old, old_bytes = template_record(directory), template_bytes(directory)
    add(directory, vectors[1000:2000])
    merge(directory, retrain=True)
    new = template_record(directory)
    assert new.name != old.name and new.trained_vectors == 2000 and new.added == 0 and new.next_id == 2000
    assert not (directory.path / old.name).exists()  # the replaced template is cleaned up with the commit
    (segment,) = segments_of(directory).segments
    assert trained_bytes(segment.index.index) == template_bytes(directory) != old_bytes
    assert not [check.problem for check in directory.verify() if check.problem]


def test_an_index_built_before_templates_gets_one_from_compact_retrain(tmp_path: Path, vectors: np.ndarray) -> None:
    directory = build(tmp_path / "index", vectors[:1000], "SQ8")
    store = DocumentStore(directory.path / directory.read_settings().files["documents"].name, writable=True)
    try:  # as main left it: no template row (the file becomes an orphan)
        store.begin()
        store.segments.set_template(None)
        store.commit()
    finally:
        store.close()
    add(directory, vectors[1000:1010])
    assert segments_of(directory).segments[-1].record.factory == "Flat"  # without a template: exact, as before
    assert not list(directory.path.glob("template.*"))  # the orphan went with the write's clean-up
    merge(directory, retrain=True)
    assert template_record(directory).trained_vectors == 1010
    (segment,) = segments_of(directory).segments
    assert segment.record.factory == "SQ8" and trained_bytes(segment.index.index) == template_bytes(directory)


def test_the_error_of_added_vectors_rises_with_drift_only(tmp_path: Path, vectors: np.ndarray) -> None:
    directory = build(tmp_path / "index", vectors[:1500], IVF)
    add(directory, vectors[1500:2500])  # more of the same sentences: they fit the template as well
    before = template_record(directory)
    rng = np.random.default_rng(0)
    drifted = vectors[:1000] + rng.normal(0, 0.1, size=(1000, 384)).astype(np.float32)  # what it never saw
    add(directory, drifted / np.linalg.norm(drifted, axis=1, keepdims=True))
    after = template_record(directory)
    drifted_ratio = (after.added_error - before.added_error) / (after.measured - before.measured) / after.training_error
    assert 0.8 < before.added_error_ratio < 1.2 and drifted_ratio > 1.1 * before.added_error_ratio
    assert before.added_error_ratio < after.added_error_ratio < drifted_ratio  # the mean of both


def test_template_of_keeps_the_training_and_drops_the_vectors(vectors: np.ndarray) -> None:
    from searchengine.indexer.vectors.vector_index import VectorIndex

    index = VectorIndex.create(IVF, 384)
    index.train(vectors[:1000])
    before = trained_bytes(index.index)
    index.add(vectors[:1000], np.arange(1000))
    template = template_of(index)
    assert template.count == 0 and not template.needs_training and trained_bytes(template.index) == before



@pytest.mark.parametrize("factory", ["IVF16,PQ16x4fs", "IVF16,PQ16np", "IVF16,SQ8", "IVF300,PQ16x4fs", "IVF300,SQ8"])
def test_quantization_errors_of_ivf_types_match_faiss_decoding(vectors: np.ndarray, factory: str) -> None:
    """The errors are decoded as FAISS decodes (equal to sa_decode's with one-byte list numbers), and with more
    than 256 lists, where FAISS 1.15's IVF sa_decode ends the process, they are still measured. PQ16np is PQ16's
    8-bit codes without the polysemous training FAISS's factory adds to "PQ16", which no search here uses and which
    took 86 of this file's 143 s (2 loaded cores)."""
    dimension = vectors.shape[1]
    trained = faiss.index_factory(dimension, factory, faiss.METRIC_INNER_PRODUCT)
    sample = np.ascontiguousarray(vectors[:1500], dtype=np.float32)
    trained.train(np.tile(sample, (8, 1)) if "300" in factory else sample)  # 300 lists want more points
    template = template_of(VectorIndex(trained, factory))
    errors = quantization_errors(template, sample[:200])
    assert errors is not None and errors.shape == (200,) and np.isfinite(errors).all() and (errors >= 0).all()
    if "300" not in factory:
        decoded = trained.sa_decode(trained.sa_encode(sample[:200]))
        assert np.allclose(errors, ((sample[:200] - decoded) ** 2).sum(axis=1), rtol=1e-5, atol=1e-7)


def test_an_opq_rotated_exact_type_has_no_error_to_advise_on_and_opq_before_pq_has(vectors: np.ndarray) -> None:
    """An OPQ rotation before Flat stores the vectors exactly: its template measures no quantization error (which
    would be float rounding, 1e-12, against which any later rounding could read as drift) and gets no advice."""
    sample = np.ascontiguousarray(vectors[:1000, :32])  # 32 dimensions: OPQ trains in a fraction of a second
    rotated = train_template("OPQ8,Flat", 32, sample)
    assert rotated.training_error is None and not retrain_rule_applies("OPQ8,Flat")
    quantized = train_template("OPQ8,PQ8x4", 32, sample)
    assert quantized.training_error is not None and quantized.training_error > 1e-4
    assert retrain_rule_applies("OPQ8,PQ8x4")
