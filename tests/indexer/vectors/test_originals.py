"""Compressed segments (PQ, SQ8, binary LSH) keep their original vectors in a memory-mapped file beside them, and a
search rescores its candidates exactly from it: recall against exact Flat search on real MiniLM vectors (STS-B test
sentences, tests/fixtures/make_stsb_vectors.py), the file's size and checksum checked by `verify`, tombstones and
filters respected, and clean-up of an orphan."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.commit.manifest import ModelIdentity
from searchengine.indexer.commit.merge_policy import merge
from searchengine.indexer.commit.rewrite import commit_generation
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.tables.store import Document, DocumentStore
from searchengine.indexer.vectors.build_parts import create_vectors
from searchengine.indexer.vectors.originals import ORIGINALS_SETTING, MappedOriginals, keeps_originals, original_type
from searchengine.indexer.vectors.rescore_depth import DEFAULT_RESCORE, PRODUCT_QUANTIZATION_RESCORE
from searchengine.indexer.vectors.segments import SegmentSet, load_segment_set

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "stsb_vectors.npy"
QUERIES = 200
K = 10


@pytest.fixture(scope="module")
def real_vectors() -> tuple[np.ndarray, np.ndarray]:
    """(corpus, queries): 2,352 and 200 distinct real MiniLM vectors, L2-normalised float32."""
    vectors = np.load(FIXTURE).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors[QUERIES:], vectors[:QUERIES]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, real_vectors: tuple) -> dict[str, IndexDirectory]:
    """One index of the corpus per compressed type, built once for the tests that only read it."""
    corpus, _ = real_vectors
    root = tmp_path_factory.mktemp("compressed")
    return {factory: build(root / factory, corpus, factory) for factory in ("SQ8", "PQ48x4", "LSH")}


def build(path: Path, corpus: np.ndarray, factory: str, originals: str | None = None) -> IndexDirectory:
    """An index of `corpus` (documents 0..n-1) in one segment of `factory`, trained on the corpus where it needs it."""
    dimension = corpus.shape[1]
    directory = IndexDirectory(path)
    with directory.writing() as generation:
        store = DocumentStore(generation.path("documents"), writable=True)
        change = store.add([Document(f"document {i}") for i in range(len(corpus))])
        vectors = create_vectors(factory, dimension, 1, originals)
        if vectors.needs_training:
            vectors.train(corpus)
        vectors.add(corpus, np.asarray(change.ids))
        if keeps_originals(factory):
            store.settings.set(ORIGINALS_SETTING, original_type(originals))
        model = ModelIdentity("minilm", "default", "0123456789abcdef", "mean", True, dimension, 256)
        commit_generation(generation, directory, store, vectors, None, model, {}, None, None)
    return directory


def segments_of(directory: IndexDirectory) -> SegmentSet:
    manifest = directory.read_manifest()
    store = DocumentStore(directory.path / manifest.files["documents"].name)
    try:
        records = store.segments.records()
    finally:
        store.close()
    return load_segment_set(directory.path, records, manifest.index.type, manifest.index.dimension)


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    return float(np.mean([len(set(a) & set(b)) / K for a, b in zip(found, exact)]))


def exact_top(corpus: np.ndarray, queries: np.ndarray) -> np.ndarray:
    return np.argsort(-(queries @ corpus.T), axis=1, kind="stable")[:, :K]


@pytest.mark.parametrize(
    ("factory", "codes_at_least", "rescored_at_least"),
    [("SQ8", 0.9, 0.99), ("PQ48x4", 0.6, 0.97), ("LSH", 0.3, 0.9)],
)
def test_rescoring_from_the_originals_brings_compressed_search_to_exact_recall(
    built: dict, real_vectors: tuple, factory: str, codes_at_least: float, rescored_at_least: float
) -> None:
    corpus, queries = real_vectors
    segments = segments_of(built[factory])
    exact = exact_top(corpus, queries)
    codes = recall(segments.rescoring(0).search(queries, K)[1], exact)
    scores, ids = segments.rescoring(200).search(queries, K)
    rescored = recall(ids, exact)
    assert codes >= codes_at_least and rescored >= rescored_at_least and rescored > codes
    # rescored scores are the exact inner products (of the float16 originals), best first
    expected = np.einsum("ij,ij->i", corpus[ids[:, 0]], queries)
    assert np.allclose(scores[:, 0], expected, atol=2e-3) and bool((np.diff(scores, axis=1) <= 0).all())


def test_exact_types_keep_no_originals_and_compressed_ones_keep_them_as_asked(
    tmp_path: Path, real_vectors: tuple
) -> None:
    corpus, _ = real_vectors
    for factory, originals, kept in [("Flat", None, None), ("HNSW32", None, None), ("SQ8", None, "float16"),
                                     ("SQ8", "float32", "float32")]:
        directory = build(tmp_path / f"{factory}-{originals}", corpus[:500], factory, originals)
        (segment,) = segments_of(directory).segments
        found = segment.index.originals
        assert (found and found.dtype) == kept
        if kept:  # the file holds the vectors, row by row in id order
            assert np.allclose(found.vectors(np.arange(500)), corpus[:500], atol=1e-3)
        names = {entry.name.rsplit(".", 1)[-1] for entry in directory.path.iterdir() if entry.name.startswith("seg")}
        assert names == ({"faiss", "npy"} if kept else {"faiss"})


def test_an_opq_rotation_before_flat_keeps_no_originals_and_a_projection_keeps_them(
    tmp_path: Path, real_vectors: tuple
) -> None:
    corpus, queries = real_vectors
    corpus, queries = corpus[:500, :32], queries[:, :32]  # 32 dimensions: OPQ trains in a fraction of a second
    rotated = build(tmp_path / "rotated", corpus, "OPQ8,Flat")  # an orthogonal rotation: its vectors are exact
    (segment,) = segments_of(rotated).segments
    assert segment.index.originals is None
    assert {entry.suffix for entry in rotated.path.iterdir() if entry.name.startswith("seg")} == {".faiss"}
    scores, ids = segments_of(rotated).search(queries, K)
    assert np.array_equal(ids, exact_top(corpus, queries))
    assert np.allclose(scores[:, 0], np.einsum("ij,ij->i", corpus[ids[:, 0]], queries), atol=1e-5)
    projected = build(tmp_path / "projected", corpus, "OPQ8_16,Flat")  # onto 16 of 32 dimensions: approximate
    (segment,) = segments_of(projected).segments
    assert segment.index.originals is not None
    scores, ids = segments_of(projected).search(queries, K)
    assert np.allclose(scores[:, 0], np.einsum("ij,ij->i", corpus[ids[:, 0]], queries), atol=2e-3)


def test_the_candidates_a_segment_gives_follow_its_originals_and_the_asked_depth(
    built: dict, tmp_path: Path, real_vectors: tuple
) -> None:
    """SegmentSet.candidates, what search and benchmarks/storage/dense_path_parts.py take from each segment."""
    for factory, default in [("SQ8", DEFAULT_RESCORE), ("PQ48x4", PRODUCT_QUANTIZATION_RESCORE),
                             ("LSH", DEFAULT_RESCORE)]:  # fmt: skip
        segments = segments_of(built[factory])
        (segment,) = segments.segments
        assert segments.candidates(segment, K) == (default, True)
        assert segments.rescoring(3).candidates(segment, K) == (K, True)  # never fewer than k
        assert segments.rescoring(0).candidates(segment, K) == (K, factory == "LSH")  # Hamming is no score
    flat = segments_of(build(tmp_path / "flat", real_vectors[0][:100], "Flat"))
    assert flat.rescoring(500).candidates(flat.segments[0], K) == (K, False)  # no originals to rescore from


def test_tombstones_and_filters_hold_when_rescoring(built: dict, real_vectors: tuple) -> None:
    corpus, queries = real_vectors
    segments = segments_of(built["PQ48x4"])  # PQ has no id selectors: tombstones by a deeper search
    best = exact_top(corpus, queries[:20])
    gone = np.unique(best[:, :3])
    _, ids = segments.search(queries[:20], K, excluded=gone)
    assert not np.isin(ids, gone).any() and bool((ids >= 0).all())
    allowed = np.arange(100, 300)
    _, ids = segments.search(queries[:20], K, allowed=allowed)
    expected = allowed[np.argsort(-(queries[:20] @ corpus[allowed].T), axis=1, kind="stable")[:, :K]]
    assert bool(np.isin(ids, allowed).all()) and recall(ids, expected) >= 0.95


def test_verify_catches_a_flipped_byte_in_an_originals_file(tmp_path: Path, real_vectors: tuple) -> None:
    corpus, _ = real_vectors
    directory = build(tmp_path / "index", corpus[:500], "SQ8")
    assert [check.problem for check in directory.verify() if check.problem] == []
    (originals,) = directory.path.glob("segment.*.npy")
    data = bytearray(originals.read_bytes())
    data[-7] ^= 0x01
    originals.write_bytes(bytes(data))
    problems = [check.problem for check in IndexDirectory(directory.path).verify() if check.problem]
    assert len(problems) == 1 and originals.name in problems[0] and "corrupt" in problems[0]
    with pytest.raises(IndexerError, match="corrupt"), writing_in_place(IndexDirectory(directory.path)) as write:
        write.segments()  # a writer reads every byte before it builds on them


def test_a_missing_or_truncated_originals_file_is_a_clear_error(tmp_path: Path, real_vectors: tuple) -> None:
    corpus, _ = real_vectors
    directory = build(tmp_path / "index", corpus[:500], "SQ8")
    (originals,) = directory.path.glob("segment.*.npy")
    originals.write_bytes(originals.read_bytes()[:-100])
    with pytest.raises(IndexerError, match=r"segment\.\d+\.npy has \d+ bytes but the store says"):
        segments_of(IndexDirectory(directory.path))
    originals.unlink()
    with pytest.raises(IndexerError, match=r"segment\.\d+\.npy is missing"):
        segments_of(IndexDirectory(directory.path))


def test_a_merge_copies_the_originals_and_clean_up_removes_the_old_ones(tmp_path: Path, real_vectors: tuple) -> None:
    corpus, queries = real_vectors
    directory = build(tmp_path / "index", corpus, "SQ8")
    (first,) = directory.path.glob("segment.*.npy")
    (trained,) = directory.path.glob("segment.*.faiss")
    codes = trained.read_bytes()
    with writing_in_place(directory) as write:  # a small add: codes of the template, and their originals
        change = write.store.add([Document("one more")])
        write.vectors.add(queries[:1], np.asarray(change.ids))
        write.store.tombstones.add(write.store.delete([0]))
    assert len(list(directory.path.glob("segment.*.faiss"))) == 2 and len(list(directory.path.glob("*.npy"))) == 2
    assert trained.read_bytes() == codes  # the trained segment is neither retrained nor rewritten by the add
    merge(directory)  # compact: one segment again, encoded from the originals with the template
    assert not first.exists() and [c.problem for c in directory.verify() if c.problem] == []
    (segment,) = segments_of(directory).segments
    assert np.allclose(segment.index.reconstruct(np.array([1, len(corpus)])), [corpus[1], queries[0]], atol=1e-3)


@pytest.mark.parametrize("ids", [np.arange(40, 60), np.array([*range(40, 50), *range(70, 80)])], ids=["run", "gap"])
def test_mapped_originals_give_each_ids_own_row_whether_the_ids_are_one_run_or_not(tmp_path: Path, ids) -> None:
    rows = np.random.default_rng(5).standard_normal((len(ids), 8)).astype(np.float16)
    np.save(tmp_path / "o.npy", rows)
    originals = MappedOriginals(tmp_path / "o.npy", ids.astype(np.int64), 8)
    asked = ids[[7, 0, 19, 12]]
    assert np.array_equal(originals.vectors(asked), rows[[7, 0, 19, 12]].astype(np.float32))
    _, best = originals.rescore(rows[[12]].astype(np.float32), asked[None, :], 1)
    assert best.tolist() == [[ids[12]]]


@pytest.mark.parametrize(
    ("ids", "asked"),
    [
        (np.arange(40, 60), 39),  # just below a run: id less the first is -1, which NumPy reads as the last row
        (np.arange(40, 60), 60),  # just past a run
        (np.array([*range(40, 50), *range(70, 80)]), 55),  # in a gap: the binary search lands on id 70's row
        (np.array([*range(40, 50), *range(70, 80)]), -1),  # FAISS's padding: the binary search lands on row 0
        (np.array([7]), 6),  # a segment of one vector
        (np.arange(2**63 - 20, 2**63 - 1), -1),  # ids near int64's largest
        (np.zeros(0, dtype=np.int64), 3),  # an empty segment
    ],
    ids=["below-run", "past-run", "gap", "padding", "one-vector", "huge-ids", "empty"],
)
def test_an_id_the_segment_does_not_hold_is_refused_never_given_another_ids_row(
    tmp_path: Path, ids: np.ndarray, asked: int
) -> None:
    np.save(tmp_path / "o.npy", np.random.default_rng(6).standard_normal((len(ids), 8)).astype(np.float16))
    originals = MappedOriginals(tmp_path / "o.npy", ids.astype(np.int64), 8)
    with pytest.raises(IndexerError, match=f"no vector with id {asked} in the segment's originals"):
        originals.vectors(np.array([*ids[:1], asked], dtype=np.int64))


def test_a_repeated_id_offsetting_a_gap_does_not_pass_for_one_run(tmp_path: Path) -> None:
    ids = np.array([5, 5, 6, 8], dtype=np.int64)  # last - first = count - 1, yet not one run
    rows = np.random.default_rng(7).standard_normal((len(ids), 8)).astype(np.float16)
    np.save(tmp_path / "o.npy", rows)
    originals = MappedOriginals(tmp_path / "o.npy", ids, 8)
    assert np.array_equal(originals.vectors(np.array([6, 8])), rows[[2, 3]].astype(np.float32))
