"""Indexing on a Ray cluster: a local cluster of two worker processes embeds a corpus the test writes. Where the
workers write the segments themselves, the index answers as one built in one process, verifies, and no vector
crosses back to the driver; a driver killed before its commit leaves the index as it was. Where the index is
fitted or trained (whitening on the corpus itself, IVF and PQ), the driver does it first on the sample a build in
one process uses, and the index answers about as well as one built in one process."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from itertools import product
from pathlib import Path

import faiss
import numpy as np
import pytest
import ray
from searchengine.indexer.commit.crash_points import CRASH_ENV
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.tables.store import Document
from searchengine.indexer.vectors.segments import SegmentRecord, reserve_segment_numbers
from searchengine.indexer.vectors.vector_index import VectorIndex
from typer.testing import CliRunner

from searchengine.cli import app
from searchengine.encoding import precision
from searchengine.encoding.encoder import Encoder
from searchengine.engine import indexing, ray_embedding
from searchengine.engine.build_settings import BuildSettings
from searchengine.engine.indexing import Chunk, IndexSettings, build_index
from searchengine.engine.ray_embedding import (
    EncoderWorker,
    RaySettings,
    SegmentTarget,
    merge_parts,
    plan_parts,
    ray_embedder,
    read_documents,
    segment_parts,
    training_sample,
    worker_options,
    write_worker_segment,
)
from searchengine.engine.search_engine import SearchEngine
from searchengine.errors import SearchEngineError
from searchengine.reading.corpus import CorpusPart, JsonFields, corpus_files, read_corpus, read_part
from tests.conftest import WORDS

QUERIES = ["reset my password", "a cold storm with snow", "bake bread in the oven", "the king of the empire"]


@pytest.fixture(scope="module")
def cluster() -> str:
    """A Ray cluster on this machine with two CPUs, so two encoder workers; its address."""
    # address="local": a cluster of its own, even while another test's cluster runs on this machine (pytest-xdist)
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of two corpus shards, 360 distinct short sentences: a .txt and a .jsonl with metadata."""
    folder = tmp_path_factory.mktemp("ray-corpus")
    sentences = [
        f"the {a} and the {b} {c}" for a, b, c in product(WORDS[60:72], WORDS[100:110], ("ran", "fell", "rose"))
    ]
    (folder / "a.txt").write_text("\n".join(sentences[:200]) + "\n", encoding="utf-8")
    records = [{"text": text, "n": number} for number, text in enumerate(sentences[200:], start=200)]
    (folder / "b.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return folder


def _in_one_process(corpus: Path, path: Path, encoder: Encoder, **options: object) -> SearchEngine:
    """The same corpus indexed here, file after file (what the Ray build is compared with)."""
    documents = [document for file in corpus_files(corpus) for document in read_corpus(file)]
    return SearchEngine.build(documents, path, BuildSettings(**options), encoder=encoder)


def _dense(engine: SearchEngine) -> tuple[list[list[int]], np.ndarray]:
    hits = engine.search_batch(QUERIES, k=10, mode="dense")
    return [[hit.id for hit in row] for row in hits], np.array([[hit.score for hit in row] for row in hits])


def test_workers_write_the_segments_and_the_index_answers_as_one_built_here(
    cluster: str, corpus: Path, tmp_path: Path, tiny_encoder: Encoder
) -> None:
    """Whitening fitted first (on --whiten-fit: a.txt) and applied by the workers; a segment per part of 64 documents."""
    settings = RaySettings(workers=2, batch_size=64)
    engine = SearchEngine.build(
        corpus,
        tmp_path / "ray",
        BuildSettings(whiten_k=16, whiten_fit=corpus / "a.txt", ray=settings),
        encoder=tiny_encoder,
    )
    records = engine.reader.store.segments.records()
    assert [(r.vectors, r.first_id, r.last_id) for r in records] == [
        (64, 0, 63), (64, 64, 127), (64, 128, 191), (8, 192, 199), (64, 200, 263), (64, 264, 327), (32, 328, 359)
    ]  # fmt: skip
    assert len(engine) == 360 and engine.last_report.added == 360 and engine.info().shards == 7
    assert all(check.problem is None for check in IndexDirectory(tmp_path / "ray").verify())

    local = _in_one_process(corpus, tmp_path / "local", tiny_encoder, whiten_k=16, whiten_fit=corpus / "a.txt")
    ray_ids, ray_scores = _dense(engine)
    local_ids, local_scores = _dense(local)
    assert ray_ids == local_ids
    np.testing.assert_allclose(ray_scores, local_scores, atol=1e-4)
    ids = local.reader.store.documents.ids()
    assert engine.reader.store.get(ids) == local.reader.store.get(ids)  # same ids, texts, origins, metadata

    engine.add(["a new sentence about snow"])  # later writes and merges take it as any index
    added = _dense(engine)
    assert len(engine) == 361 and engine.compact() == 0 and len(engine.reader.store.segments.records()) == 1
    assert _dense(engine)[0] == added[0]
    assert all(check.problem is None for check in IndexDirectory(tmp_path / "ray").verify())


def test_only_rows_and_segment_records_cross_back_to_the_driver(
    cluster: str, corpus: Path, tmp_path: Path, tiny_encoder: Encoder
) -> None:
    settings = RaySettings(workers=2, batch_size=64)
    parts = plan_parts(corpus_files(corpus), None, JsonFields(), settings.batch_size)
    target = SegmentTarget(str(tmp_path), 1000, "Flat")
    with ray_embedder(settings, tiny_encoder) as embedder:
        batches = list(embedder.embedded(parts, None, JsonFields(), target).iter_batches(batch_format="numpy"))
    assert {key for batch in batches for key in batch} == {"text", "origin", "id", "truncated", "segment"}
    records = [SegmentRecord(**json.loads(r)) for batch in batches for r in batch["segment"] if r]
    assert [r.name for r in records] == [f"segment.{1000 + r.first_id}.faiss" for r in records]
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(r.name for r in records)
    assert sorted(np.concatenate([batch["id"] for batch in batches]).tolist()) == list(range(360))


def test_a_driver_killed_before_its_commit_changes_nothing(
    cluster: str, corpus: Path, tmp_path: Path, tiny_model: Path, tiny_encoder: Encoder
) -> None:
    """The workers' segments are orphans until the commit; the next write's clean-up removes them."""
    target = tmp_path / "idx"
    before = SearchEngine.build(["an old sentence", "another old one"], target, encoder=tiny_encoder)
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "searchengine",
            "index",
            corpus,
            "--ray",
            cluster,
            "-d",
            target,
            "-m",
            tiny_model,
            "--replace",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, CRASH_ENV: "build-before-commit"},
    )
    assert completed.returncode == 75, completed.stderr
    live = IndexDirectory(target).live_file_names()
    orphans = [path for path in target.glob("segment.*.faiss") if path.name not in live]
    assert len(orphans) == 2  # one per part, written by the workers, named by no commit
    engine = SearchEngine.open(target, encoder=tiny_encoder)
    assert len(engine) == 2 and engine.reader.store.segments.records() == before.reader.store.segments.records()
    engine.delete([0])
    assert not any(path.exists() for path in orphans)
    assert all(check.problem is None for check in IndexDirectory(target).verify())


def test_the_driver_tombstones_the_written_vectors_no_row_keeps(tmp_path: Path, tiny_encoder: Encoder) -> None:
    """Repeated external ids in the input: a document replaced within its chunk, one replaced by a later chunk
    (a new text), and one a later chunk repeats with the same text. Every vector the workers wrote is then a row's
    or a tombstone, and the index verifies. (The driver alone, on chunks as the Ray pipeline hands them.)"""
    documents = [
        Document("alpha one", external_id="x1"),
        Document("beta two", external_id="x2"),
        Document("alpha again", external_id="x1"),  # replaces id 0 in its own chunk
        Document("beta replaced", external_id="x2"),  # replaces id 1, stored by the chunk before
        Document("gamma three", external_id="x3"),
        Document("alpha again", external_id="x1"),  # the stored text of x1: id 2 stays, id 5 is not stored
    ]
    target = tmp_path / "idx"
    target.mkdir()
    vectors = tiny_encoder.encode([document.text for document in documents])
    segments = SegmentTarget(str(target), reserve_segment_numbers(6), "Flat")
    ids = np.arange(6)
    written = [write_worker_segment(segments, vectors[part], ids[part]) for part in (slice(0, 2), slice(2, 6))]
    chunks = [
        Chunk(documents[:3], None, 0, ids[:3], (written[0],)),
        Chunk(documents[3:], None, 0, ids[3:], (written[1],)),  # a segment in the chunk of its first document
    ]
    settings = IndexSettings(index_type="Flat", segments_written=True)
    report = build_index(IndexDirectory(target), chunks, tiny_encoder, settings, total=6)
    assert (report.added, report.superseded, report.replaced, report.updated) == (4, 1, 1, 1)
    engine = SearchEngine.open(target, encoder=tiny_encoder)
    assert engine.reader.store.documents.ids().tolist() == [2, 3, 4]
    assert engine.reader.store.tombstones.ids().tolist() == [0, 1, 5]
    assert [record.name for record in engine.reader.store.segments.records()] == [record.name for record in written]
    assert all(check.problem is None for check in IndexDirectory(target).verify())
    assert [engine.search(text, k=1, mode="dense")[0].id for text in ("beta replaced", "alpha again")] == [3, 2]


def test_shards_are_refused_where_the_workers_write_the_segments(
    corpus: Path, tmp_path: Path, tiny_encoder: Encoder
) -> None:
    with pytest.raises(SearchEngineError, match="drop --shards"):
        SearchEngine.build(
            corpus,
            tmp_path / "i",
            BuildSettings(shards=2, ray=RaySettings(workers=2)),
            encoder=tiny_encoder,
        )
    assert not (tmp_path / "i").exists()


def test_a_worker_without_the_index_directory_is_one_error(tmp_path: Path) -> None:
    target = SegmentTarget(str(tmp_path / "not-shared"), 1, "Flat")
    with pytest.raises(SearchEngineError, match="put the index directory on a file system every node shares"):
        write_worker_segment(target, np.ones((2, 4), dtype=np.float32), np.arange(2))


def test_whitening_and_ivf_pq_are_fitted_on_a_sample_before_the_workers_write_the_segments(
    cluster: str, corpus: Path, tmp_path: Path, tiny_encoder: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--whiten-k without --whiten-fit and an IVF,PQ type: the driver fits both on the sample a build in one
    process trains on (here all 360 documents, as up to 100,000), the workers copy the trained index into each
    segment large enough to be of that type (an exact segment here is up to 100 vectors, not 50,000)."""
    monkeypatch.setattr(ray_embedding, "SMALL_SEGMENT_LIMIT", 100)
    factory = "IVF4,PQ4np"  # no polysemous training (never used here): it took about 7 s a build, twice a test
    settings = RaySettings(workers=2, batch_size=64)
    engine = SearchEngine.build(
        corpus,
        tmp_path / "ray",
        BuildSettings(whiten_k=16, index=factory, ray=settings),
        encoder=tiny_encoder,
    )
    records = engine.reader.store.segments.records()
    assert [(r.factory, r.vectors) for r in records] == [(factory, 128), ("Flat", 72), (factory, 128), ("Flat", 32)]
    assert len(engine) == 360 and engine.manifest.index.type == factory
    assert all(check.problem is None for check in IndexDirectory(tmp_path / "ray").verify())

    local = _in_one_process(corpus, tmp_path / "local", tiny_encoder, whiten_k=16, index=factory)
    ids = local.reader.store.documents.ids()
    assert engine.reader.store.get(ids) == local.reader.store.get(ids)  # same ids, texts, origins, metadata
    np.testing.assert_allclose(engine.reader.whitening.matrix, local.reader.whitening.matrix, atol=1e-4)  # the same fit
    ivf = [
        faiss.extract_index_ivf(segment.index.index)
        for segment in engine.reader.vectors.segments
        if segment.ids.size > 100
    ]
    local_ivf = faiss.extract_index_ivf(local.reader.vectors.segments[0].index.index)
    centroids = [index.quantizer.reconstruct_n(0, index.nlist) for index in (*ivf, local_ivf)]
    np.testing.assert_array_equal(centroids[0], centroids[1])  # one quantiser, trained on the driver
    np.testing.assert_allclose(centroids[0], centroids[2], atol=1e-3)  # trained on the same vectors here

    texts = [document.text for document in local.reader.store.get(ids).values()]
    exact = VectorIndex.create("Flat", 16)
    exact.add(local.encode(texts), ids)
    queries = [*QUERIES, *texts[::30]]
    truth = exact.search(local.encode(queries), 10)[1]

    def recall(engine: SearchEngine) -> float:
        found = [[hit.id for hit in row] for row in engine.search_batch(queries, k=10, mode="dense")]
        return float(np.mean([len(set(row) & set(best)) / 10 for row, best in zip(found, truth.tolist())]))

    assert recall(engine) >= recall(local) - 0.05, (recall(engine), recall(local))


def test_the_command_line_indexes_through_a_running_cluster(
    cluster: str, corpus: Path, tmp_path: Path, tiny_model: Path
) -> None:
    """`searchengine index DIR --ray ADDRESS` in its own process, as a user runs it on a node of the cluster; then
    the usual commands on the sharded index it wrote."""
    target = tmp_path / "idx"
    completed = subprocess.run(
        [sys.executable, "-m", "searchengine", "index", corpus, "--ray", cluster, "-d", target, "-m", tiny_model],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    assert f"Indexed 360 documents from {corpus}" in completed.stdout
    assert "Time by stage: reading and embedding on Ray workers " in completed.stdout  # not "reading" alone
    runner = CliRunner()
    info = runner.invoke(app, ["info", "-d", str(target)])
    assert "Flat (FAISS, inner product), in 2 segments searched together" in info.output, info.output
    verify = runner.invoke(app, ["verify", "-d", str(target)])
    assert verify.exit_code == 0 and [line.split()[1] for line in verify.output.splitlines()] == [
        "store",
        "segments",
        "rows",
        "manifest",
        "segment.0",
        "segment.1",
    ]
    query = ["query", QUERIES[1], "-k", "3", "--json", "-d", str(target)]
    first = json.loads(runner.invoke(app, query).output)["hits"]
    assert runner.invoke(app, ["delete", str(first[0]["id"]), "-d", str(target)]).exit_code == 0
    again = json.loads(runner.invoke(app, query).output)["hits"]
    assert again[0]["id"] != first[0]["id"] and again[0]["id"] == first[1]["id"]
    assert len(SearchEngine.open(target)) == 359


def test_more_workers_than_the_cluster_has_cpus_for_is_refused_before_any_work(
    cluster: str, corpus: Path, tmp_path: Path, tiny_encoder: Encoder
) -> None:
    with pytest.raises(SearchEngineError, match="need 3 CPUs, but the cluster has 2"):
        SearchEngine.build(corpus, tmp_path / "i", BuildSettings(ray=RaySettings(workers=3)), encoder=tiny_encoder)
    assert not (tmp_path / "i").exists()


def test_a_missing_corpus_file_on_a_node_is_one_error(tmp_path: Path) -> None:
    part = {"path": [str(tmp_path / "gone.txt")], "offset": [0], "line": [1], "documents": [3], "first_id": [0]}
    with pytest.raises(SearchEngineError, match="same path: put it on a shared file system"):
        read_documents({key: np.array(value) for key, value in part.items()}, None, JsonFields())


def test_the_corpus_is_planned_in_parts_of_whole_batches_within_files(corpus: Path) -> None:
    parts = plan_parts(corpus_files(corpus), None, JsonFields(), batch_size=64)
    assert [(Path(part.path).name, part.documents) for part in parts] == [
        *[("a.txt", 64)] * 3,
        ("a.txt", 8),
        *[("b.jsonl", 64)] * 2,
        ("b.jsonl", 32),
    ]
    merged = merge_parts(parts, 128)
    assert [(Path(part.path).name, part.documents) for part in merged] == [
        ("a.txt", 128),
        ("a.txt", 72),
        ("b.jsonl", 128),
        ("b.jsonl", 32),
    ]
    expected = [document for file in corpus_files(corpus) for document in read_corpus(file)]
    assert [document for part in merged for document in read_part(part)] == expected


def test_parts_written_as_segments_are_about_four_per_worker_and_large_enough_for_the_index_type(
    corpus: Path,
) -> None:
    parts = plan_parts(corpus_files(corpus), None, JsonFields(), batch_size=64)
    joined = segment_parts(parts, 1, "Flat", batch_size=64)  # 90 documents a part wanted: two batches
    assert [(Path(part.path).name, part.documents) for part in joined] == [
        ("a.txt", 128),
        ("a.txt", 72),
        ("b.jsonl", 128),
        ("b.jsonl", 32),
    ]
    assert segment_parts(parts, 2, "HNSW32", batch_size=64) == parts  # 45 wanted: one batch, as planned
    many = [CorpusPart("big.txt", 0, 1 + 512 * n, 512) for n in range(400)]  # 204,800 documents

    def sizes(workers: int, index_type: str, part_size: int | None = None) -> set[int]:
        return {part.documents for part in segment_parts(many, workers, index_type, 512, part_size)}

    assert sizes(1, "HNSW32") == sizes(1, "Flat") == {51_200}  # four per worker, each above 50,000 already
    assert sizes(2, "Flat") == {25_600}  # four per worker: exact whatever their size
    assert sizes(2, "IVF1024,PQ32") == {98 * 512, 204_800 - 4 * 98 * 512}  # just above 50,000: the index's type
    assert sizes(8, "HNSW32") == {6_656, 204_800 - 30 * 6_656}  # 25,600 a worker: graphs only by leaving some idle
    assert sizes(8, "HNSW32", part_size=10_000) == {9_728, 204_800 - 21 * 9_728}  # whole batches, at most asked


def test_the_sample_is_the_documents_a_build_in_one_process_trains_on(corpus: Path) -> None:
    parts = plan_parts(corpus_files(corpus), None, JsonFields(), batch_size=64)
    expected = [document for file in corpus_files(corpus) for document in read_corpus(file)]
    rows = indexing.training_rows(len(expected), sample_size=50)
    assert len(rows) == 50 and training_sample(parts, None, sample_size=50) == [expected[row] for row in rows]


def test_a_part_size_below_one_is_refused_before_any_work(corpus: Path, tmp_path: Path, tiny_encoder: Encoder) -> None:
    with pytest.raises(SearchEngineError, match="part_size must be at least 1, not 0"):
        SearchEngine.build(
            corpus,
            tmp_path / "i",
            BuildSettings(ray=RaySettings(workers=1, part_size=0)),
            encoder=tiny_encoder,
        )
    assert not (tmp_path / "i").exists()


def test_a_worker_refuses_a_model_other_than_the_drivers(tiny_encoder: Encoder, other_tiny_model: Path) -> None:
    options = {**worker_options(tiny_encoder, threads=1), "model": str(other_tiny_model)}
    with pytest.raises(SearchEngineError, match="install the same model on every node"):
        EncoderWorker(options)


def test_a_worker_embeds_as_the_driver_does(tiny_encoder: Encoder) -> None:
    worker = EncoderWorker(worker_options(tiny_encoder, threads=1))
    out = worker({"text": np.array(QUERIES, dtype=object), "origin": np.array(["{}"] * 4, dtype=object)})
    np.testing.assert_allclose(out["vector"], tiny_encoder.encode(QUERIES), atol=1e-6)
    assert out["truncated"].tolist() == [0, 0, 0, 0]


def test_workers_make_the_bulk_precision_choice_for_their_own_cpu(
    tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCHENGINE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(precision, "cpu_flags", lambda cpuinfo=None: frozenset({"avx512_bf16"}))  # a Zen 4 here
    split = Encoder(tiny_model)
    assert split.bulk_precision == "bf16"
    assert {key: worker_options(split, threads=1)[key] for key in ("precision", "backend")} == {
        "precision": "auto",
        "backend": "auto",
    }
    fixed = Encoder(tiny_model, precision="fp32")
    assert {key: worker_options(fixed, threads=1)[key] for key in ("precision", "backend")} == {
        "precision": "fp32",
        "backend": fixed.backend,
    }


def test_indexing_and_querying_without_ray_never_import_it(tmp_path: Path, tiny_model: Path, corpus: Path) -> None:
    script = (
        "import sys\nfrom searchengine.cli import app\n"
        "for args in (['index', sys.argv[1], '-d', sys.argv[2], '-m', sys.argv[3], '-q'], "
        "['query', 'snow', '-d', sys.argv[2]]):\n"
        "    try:\n        app(args)\n    except SystemExit as exit:\n        assert not exit.code, exit.code\n"
        "print('ray' in sys.modules, file=sys.stderr)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script, corpus / "a.txt", tmp_path / "idx", tiny_model],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr.strip().splitlines()[-1] == "False"
