"""Paraphrase mining: the chunked miner against brute force, ann mode, the engine API, `mine --dedupe` and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from searchengine.indexer.vectors.vector_index import VectorIndex
from typer.testing import CliRunner

from searchengine import BuildSettings, SearchEngine, SearchEngineError, mine_vectors
from searchengine.analysis.paraphrase_mining import ScoredPair, duplicate_marks, mine_index
from searchengine.cli import app
from searchengine.encoding.encoder import Encoder
from searchengine.encoding.speed import EncoderSpeed
from tests.searchengine.cli.usage_errors import assert_usage_error

NEAR_DUPLICATE = "how do i reset my password ?"
"""Close to the first fixture sentence under the tiny model (cosine 0.93; every other pair is below 0.7)."""
REPOSITORY = Path(__file__).resolve().parents[3]


def unit_vectors(n: int, dimension: int = 12, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, dimension)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def brute_force(vectors: np.ndarray) -> dict[tuple[int, int], float]:
    """Every pair i < j and its score, from one full float64 similarity matrix."""
    scores = vectors.astype(np.float64) @ vectors.astype(np.float64).T
    rows, columns = np.triu_indices(len(vectors), k=1)
    return {(int(i), int(j)): float(scores[i, j]) for i, j in zip(rows, columns)}


def best(pairs: dict[tuple[int, int], float], top: int | None = None, threshold: float | None = None) -> list:
    ranked = sorted(pairs, key=lambda pair: -pairs[pair])
    if threshold is not None:
        ranked = [pair for pair in ranked if pairs[pair] >= threshold]
    return ranked[:top] if top is not None else ranked


@pytest.mark.parametrize("block_rows", [1, 7, 64, 300, 4096])
@pytest.mark.parametrize("top", [1, 25, 1000])
def test_top_n_equals_brute_force(block_rows: int, top: int) -> None:
    vectors = unit_vectors(300)
    expected = brute_force(vectors)
    found = mine_vectors(vectors, top=top, block_rows=block_rows)
    assert [(p.first, p.second) for p in found] == best(expected, top)
    assert all(p.score == pytest.approx(expected[(p.first, p.second)], abs=1e-5) for p in found)


@pytest.mark.parametrize("block_rows", [1, 13, 300])
def test_threshold_and_both_equal_brute_force(block_rows: int) -> None:
    vectors = unit_vectors(300)
    expected = brute_force(vectors)
    above = mine_vectors(vectors, threshold=0.6, block_rows=block_rows)
    assert len(above) > 50
    assert {(p.first, p.second) for p in above} == set(best(expected, threshold=0.6))
    capped = mine_vectors(vectors, top=10, threshold=0.6, block_rows=block_rows)
    assert [(p.first, p.second) for p in capped] == best(expected, 10, 0.6)
    assert mine_vectors(vectors, threshold=0.999, block_rows=block_rows) == []


def test_pairs_are_ordered_ids_without_self_pairs() -> None:
    vectors = unit_vectors(50)
    vectors[30] = vectors[4]  # an exact duplicate must pair with its twin, never with itself
    ids = np.random.default_rng(1).permutation(1000)[:50]
    found = mine_vectors(vectors, threshold=0.3, ids=ids, block_rows=8)
    assert found and all(p.first < p.second for p in found)
    assert len({(p.first, p.second) for p in found}) == len(found)
    assert (found[0].first, found[0].second) == tuple(sorted((int(ids[4]), int(ids[30]))))
    assert found[0].score == pytest.approx(1.0, abs=1e-5)
    assert mine_vectors(vectors[:1], top=5) == []


def test_each_duplicate_points_at_its_earliest_partner() -> None:
    pairs = [ScoredPair(2, 5, 0.97), ScoredPair(0, 5, 0.95), ScoredPair(5, 7, 0.96), ScoredPair(1, 3, 0.99)]
    marks = duplicate_marks(pairs)
    assert [(m.second, m.first, m.score) for m in marks] == [(3, 1, 0.99), (5, 0, 0.95), (7, 5, 0.96)]


def test_default_is_top_twenty() -> None:
    assert len(mine_vectors(unit_vectors(40))) == 20


@pytest.mark.parametrize(("top", "threshold"), [(0, None), (-3, None), (None, 0.0), (None, -0.5), (None, 1.01)])
def test_bad_requests_are_refused(top: int | None, threshold: float | None) -> None:
    with pytest.raises(SearchEngineError, match="top must be at least 1|threshold is a cosine similarity"):
        mine_vectors(unit_vectors(10), top=top, threshold=threshold)


def test_a_threshold_of_one_finds_exact_duplicates() -> None:
    """Seed 2's vector scores 0.99999994 with itself in float32: an exact duplicate, which `threshold=1` must find,
    exactly and through the index."""
    vector = unit_vectors(1, dimension=384, seed=2)[0]
    vectors = np.stack([vector, unit_vectors(1, dimension=384, seed=5)[0], vector])
    assert (vectors @ vectors.T)[0, 2] < 1
    assert [(p.first, p.second) for p in mine_vectors(vectors, threshold=1.0)] == [(0, 2)]
    index = VectorIndex.create("Flat", 384)
    index.add(vectors, np.arange(3))
    assert [(p.first, p.second) for p in mine_index(index, threshold=1.0, method="ann")] == [(0, 2)]


def test_ann_mode_on_an_exact_index_finds_the_exact_pairs() -> None:
    vectors = unit_vectors(400, seed=3)
    index = VectorIndex.create("Flat", vectors.shape[1])
    index.add(vectors, np.arange(400) * 2 + 5)
    exact = mine_index(index, top=30, method="exact")
    ann = mine_index(index, top=30, method="ann")
    assert [(p.first, p.second) for p in ann] == [(p.first, p.second) for p in exact]
    assert [p.score for p in ann] == pytest.approx([p.score for p in exact], abs=1e-5)
    assert exact[0].first >= 5 and all(p.first % 2 == 1 and p.second % 2 == 1 for p in exact)  # ids, not rows
    above = {(p.first, p.second) for p in mine_index(index, threshold=0.7, method="exact")}
    assert above == {(p.first, p.second) for p in mine_index(index, threshold=0.7, method="ann", neighbours=399)}


@pytest.fixture
def engine(tmp_path: Path, tiny_encoder: Encoder, sentences: list[str]) -> SearchEngine:
    return SearchEngine.build([*sentences, NEAR_DUPLICATE], tmp_path / "index", encoder=tiny_encoder)


def test_engine_mine_finds_the_inserted_near_duplicate(engine: SearchEngine, sentences: list[str]) -> None:
    pairs = engine.mine(top=3)
    assert len(pairs) == 3 and pairs[0].score > 0.9 > pairs[1].score >= pairs[2].score
    assert (pairs[0].first_id, pairs[0].second_id) == (0, len(sentences))
    assert (pairs[0].first_text, pairs[0].second_text) == (sentences[0], NEAR_DUPLICATE)
    # The threshold and ANN paths score with other matrix shapes: same pairs, scores equal to float32 rounding.
    for found in (engine.mine(threshold=0.9), engine.mine(threshold=0.9, method="ann")):
        assert [(p.first_id, p.second_id, p.first_text, p.second_text) for p in found] == [
            (p.first_id, p.second_id, p.first_text, p.second_text) for p in pairs[:1]
        ]
        assert found[0].score == pytest.approx(pairs[0].score, abs=1e-6)


def test_dedupe_marks_the_later_text_and_the_index_still_answers(engine: SearchEngine, sentences: list[str]) -> None:
    assert engine.info().duplicates == 0
    before = engine.search(sentences[3], k=3)
    marked = engine.dedupe(0.9)
    assert [(p.second_id, p.first_id) for p in marked] == [(len(sentences), 0)]
    reopened = SearchEngine.open(engine.path, speed=EncoderSpeed(precision="fp32"))  # auto: bf16 on an AMX CPU
    assert reopened.info().duplicates == 1 and engine.info().duplicates == 1
    assert reopened.search(sentences[3], k=3) == before
    assert len(reopened) == len(sentences) + 1
    assert engine.dedupe(0.99) == [] and engine.info().duplicates == 0  # marks are replaced, not accumulated


def test_deleted_documents_never_pair(tmp_path: Path, tiny_encoder: Encoder, sentences: list[str]) -> None:
    engine = SearchEngine.build(
        [*sentences, NEAR_DUPLICATE],
        tmp_path / "hnsw",
        BuildSettings(index="HNSW32"),
        encoder=tiny_encoder,
    )
    engine.delete(ids=[len(sentences)])
    assert len(engine.tombstones) == 1  # HNSW keeps the vector until compaction
    for method in ("exact", "ann"):
        pairs = engine.mine(top=100, method=method)
        assert len(pairs) == len(sentences) * (len(sentences) - 1) // 2
        assert all(len(sentences) not in (p.first_id, p.second_id) for p in pairs)


def test_empty_index_is_refused(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = SearchEngine.create(tmp_path / "empty", encoder=tiny_encoder)
    with pytest.raises(SearchEngineError, match="the index is empty"):
        engine.mine()
    with pytest.raises(SearchEngineError, match="the index is empty"):
        engine.dedupe(0.9)


runner = CliRunner()


def run(*args: object):  # noqa: ANN201
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def index_dir(tmp_path: Path, tiny_model: Path, sentences: list[str]) -> Path:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join([*sentences, NEAR_DUPLICATE]) + "\n", encoding="utf-8")
    result = run("index", corpus, "-d", tmp_path / "idx", "--model", tiny_model, "--quiet")
    assert result.exit_code == 0, result.output
    return tmp_path / "idx"


def test_cli_mine_prints_pairs_best_first(index_dir: Path, sentences: list[str]) -> None:
    result = run("mine", "--top", "2", "-d", index_dir)
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].startswith("2 pairs (exact: all 78 pairs of 13 documents scored)")
    assert lines[1].split()[:3] == ["1", lines[1].split()[1], "#0"] and lines[1].endswith(sentences[0])
    assert float(lines[1].split()[1]) > 0.9
    assert lines[2].split()[0] == "#12" and lines[2].endswith(NEAR_DUPLICATE)
    assert lines[3].split()[0] == "2" and len(lines) == 5


def test_cli_mine_json_and_ann(index_dir: Path) -> None:
    result = run("mine", "--threshold", "0.9", "--json", "--method", "ann", "-d", index_dir)
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["method"] == "ann" and payload["texts"] == 13 and payload["dedupe"] is False
    assert [(p["first_id"], p["second_id"]) for p in payload["pairs"]] == [(0, 12)]
    assert payload["pairs"][0]["second_text"] == NEAR_DUPLICATE


def test_cli_dedupe_marks_shows_in_info_and_queries_still_work(index_dir: Path, sentences: list[str]) -> None:
    assert "near-duplicates:" in run("info", "-d", index_dir).output
    result = run("mine", "--threshold", "0.9", "--dedupe", "-d", index_dir)
    assert result.exit_code == 0, result.output
    assert "Marked 1 document as near-duplicates" in result.output
    assert "1 document marked as near-duplicates" in run("info", "-d", index_dir).output
    assert json.loads(run("info", "--json", "-d", index_dir).output)["duplicates"] == 1
    query = run("query", sentences[5], "-k", "2", "-d", index_dir, "--mode", "dense")
    assert query.exit_code == 0 and sentences[5] in query.output.splitlines()[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--threshold", "0"], "threshold is a cosine similarity in (0, 1]"),
        (["--threshold", "1.5"], "threshold is a cosine similarity in (0, 1]"),
        (["--dedupe"], "--dedupe marks every pair above --threshold"),
        (["--dedupe", "--threshold", "0.9", "--top", "3"], "not --top"),
        (["--threshold", "2", "--dedupe"], "threshold is a cosine similarity"),
    ],
)
def test_cli_bad_input_is_one_line_and_leaves_the_index(index_dir: Path, args: list[str], message: str) -> None:
    before = {path.name: path.read_bytes() for path in index_dir.iterdir()}
    result = run("mine", *args, "-d", index_dir)
    assert result.exit_code == 1, result.output
    assert result.output.strip() == result.output.strip().splitlines()[0] and "Traceback" not in result.output
    assert result.output.startswith("Error: ") and message in result.output
    assert {path.name: path.read_bytes() for path in index_dir.iterdir()} == before


@pytest.mark.parametrize(
    ("args", "option", "message"),
    [
        (["--method", "fast"], "--method", "'fast' is not one of 'auto', 'exact', 'ann'"),
        (["--top", "0"], "--top", "greater than or equal to 1"),
    ],
)
def test_cli_refuses_bad_option_values_before_reading_the_index(
    index_dir: Path, args: list[str], option: str, message: str
) -> None:
    before = {path.name: path.read_bytes() for path in index_dir.iterdir()}
    assert_usage_error(run("mine", *args, "-d", index_dir), option, message)
    assert {path.name: path.read_bytes() for path in index_dir.iterdir()} == before


def test_cli_empty_and_missing_index(tmp_path: Path, tiny_encoder: Encoder) -> None:
    SearchEngine.create(tmp_path / "empty", encoder=tiny_encoder)
    before = {path.name: path.read_bytes() for path in (tmp_path / "empty").iterdir()}
    for args in (["--top", "5"], ["--threshold", "0.9", "--dedupe"]):
        result = run("mine", *args, "-d", tmp_path / "empty")
        assert result.exit_code == 1 and result.output.startswith("Error: the index is empty"), result.output
    assert {path.name: path.read_bytes() for path in (tmp_path / "empty").iterdir()} == before
    assert run("mine", "-d", tmp_path / "none").output.startswith("Error: no index at")


def test_help_has_an_example() -> None:
    result = run("mine", "--help")
    assert result.exit_code == 0 and "Example" in result.output and "searchengine mine --threshold" in result.output


def test_benchmark_quick_mode_runs(tmp_path: Path) -> None:
    """The benchmark's --quick smoke test: its correctness assertions only, never its timings."""
    out = tmp_path / "pair_mining.json"
    completed = subprocess.run(
        [
            sys.executable,
            str(REPOSITORY / "benchmarks" / "encoding" / "pair_mining.py"),
            "--quick",
            "--out",
            str(out),
            "--plot",
            str(tmp_path / "plot.png"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["checks"]["brute_force_top_pair_equals_miner"] is True
    assert results["checks"]["validation_same_pair_set"] is True
