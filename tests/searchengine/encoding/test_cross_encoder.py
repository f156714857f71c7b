"""The cross-encoder (loading, scoring, parity with sentence-transformers, refusing other models) and reranking
through the API and the CLI, on tiny models built offline."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from searchengine import SearchEngine, SearchEngineError
from searchengine.cli import app
from searchengine.encoding.cross_encoder import IDENTITY, CrossEncoder
from searchengine.encoding.encoder import Encoder
from searchengine.encoding.model_source import bundled_model_path

runner = CliRunner()
REPOSITORY = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models on a shared machine: one thread avoids OpenMP threads spinning against other processes."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def write_tiny_cross_encoder(directory: Path, tokenizer_dir: Path, seed: int = 0, num_labels: int = 1) -> Path:
    """A random 2-layer BertForSequenceClassification with the tiny model's vocabulary. The weights are drawn with
    a wide spread so different pairs get clearly different scores (BERT's 0.02 init scores every pair alike)."""
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=64, num_labels=num_labels, initializer_range=0.3,
    )  # fmt: skip
    BertForSequenceClassification(config).save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def tiny_cross(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Path:
    return write_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-cross"), tiny_model)


@pytest.fixture
def pairs(sentences: list[str]) -> list[tuple[str, str]]:
    return [(sentences[i], sentences[j]) for i in range(0, 12, 2) for j in range(1, 12, 3)]


@pytest.fixture
def engine(tmp_path: Path, tiny_encoder: Encoder, sentences: list[str]) -> SearchEngine:
    return SearchEngine.build(sentences, tmp_path / "index", encoder=tiny_encoder)


def _files(directory: Path) -> dict[str, bytes]:
    return {str(path.relative_to(directory)): path.read_bytes() for path in directory.rglob("*") if path.is_file()}


# --- scoring ---


def test_scores_are_sigmoid_of_the_logit_and_match_sentence_transformers(tiny_cross: Path, pairs: list) -> None:
    from sentence_transformers import CrossEncoder as STCrossEncoder

    ours = CrossEncoder(tiny_cross, device="cpu")
    assert ours.applies_sigmoid
    scores = ours.score(pairs)
    assert scores.dtype == np.float32 and scores.shape == (len(pairs),)
    assert ((scores > 0) & (scores < 1)).all() and np.ptp(scores) > 0.01
    theirs = STCrossEncoder(str(tiny_cross), device="cpu").predict(pairs, batch_size=5)
    np.testing.assert_allclose(scores, theirs, atol=1e-5)


def test_smart_batching_returns_scores_in_input_order(tiny_cross: Path, pairs: list) -> None:
    cross = CrossEncoder(tiny_cross, device="cpu")
    one_by_one = np.array([cross.score([pair])[0] for pair in pairs])
    np.testing.assert_allclose(cross.score(pairs, batch_size=3), one_by_one, atol=1e-5)
    assert cross.score([]).shape == (0,)
    ranked = cross.rank(pairs[0][0], [second for _, second in pairs[:4]])
    assert [score for _, score in ranked] == sorted((score for _, score in ranked), reverse=True)


def test_loads_a_directory_saved_by_sentence_transformers(tiny_cross: Path, tmp_path: Path, pairs: list) -> None:
    """sentence-transformers 6 adds modules.json and config_sentence_transformers.json to the directory."""
    from sentence_transformers import CrossEncoder as STCrossEncoder

    model = STCrossEncoder(str(tiny_cross), device="cpu")
    model.save(str(tmp_path / "st-saved"))
    assert (tmp_path / "st-saved" / "modules.json").is_file()
    np.testing.assert_allclose(
        CrossEncoder(tmp_path / "st-saved", device="cpu").score(pairs), model.predict(pairs), atol=1e-5
    )


def test_an_identity_activation_in_the_config_gives_raw_logits(tiny_cross: Path, tmp_path: Path, pairs: list) -> None:
    """MS MARCO rerankers say so in config.json (`sbert_ce_default_activation_function`); sentence-transformers
    honours it."""
    from sentence_transformers import CrossEncoder as STCrossEncoder

    directory = Path(shutil.copytree(tiny_cross, tmp_path / "identity"))
    config = json.loads((directory / "config.json").read_text())
    config["sbert_ce_default_activation_function"] = IDENTITY
    (directory / "config.json").write_text(json.dumps(config))
    raw = CrossEncoder(directory, device="cpu")
    assert not raw.applies_sigmoid
    logits = raw.score(pairs)
    np.testing.assert_allclose(1 / (1 + np.exp(-logits)), CrossEncoder(tiny_cross).score(pairs), atol=1e-5)
    np.testing.assert_allclose(logits, STCrossEncoder(str(directory), device="cpu").predict(pairs), atol=1e-5)


def test_max_length_truncates_long_pairs(tiny_cross: Path) -> None:
    cross = CrossEncoder(tiny_cross, device="cpu", max_length=16)
    long_text = " ".join(["the cat sat on the mat"] * 20)
    assert cross.max_length == 16 and np.isfinite(cross.score([(long_text, long_text)])).all()
    assert CrossEncoder(tiny_cross).max_length == 64  # the tokenizer's and the model's limit


@pytest.mark.parametrize(
    "which, message",
    [
        ("bi-encoder", "is a sentence encoder (bi-encoder"),
        ("bundled", "is a sentence encoder (bi-encoder"),
        ("plain-transformer", "names BertModel, not a ...ForSequenceClassification"),
        ("classifier", "is a classifier with 3 outputs"),
        ("missing", "does not exist"),
        ("file", "is a file, not a cross-encoder directory"),
        ("empty", "not a model directory"),
        ("default", "there is no bundled cross-encoder"),
    ],
)
def test_what_is_not_a_cross_encoder_is_refused_with_the_fix(
    which: str, message: str, tiny_model: Path, tmp_path: Path
) -> None:
    if which == "bi-encoder":
        model = tiny_model
    elif which == "bundled":
        model = bundled_model_path()
    elif which == "plain-transformer":
        model = tmp_path / "plain"
        model.mkdir()
        for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
            shutil.copy(tiny_model / name, model / name)
    elif which == "classifier":
        model = write_tiny_cross_encoder(tmp_path / "nli", tiny_model, num_labels=3)
    elif which == "missing":
        model = tmp_path / "no-such-model"
    elif which == "file":
        model = tmp_path / "model.bin"
        model.write_bytes(b"x")
    elif which == "empty":
        model = tmp_path / "empty"
        model.mkdir()
    else:
        model = "default"
    with pytest.raises(SearchEngineError, match="cross-encoder") as error:
        CrossEncoder(model)
    assert message in str(error.value)


# --- reranking through the API ---


def test_rerank_orders_the_candidates_by_the_cross_encoder(
    engine: SearchEngine, tiny_cross: Path, sentences: list[str]
) -> None:
    query = "how can i reset the password of my email account"
    plain = engine.search(query, k=len(sentences))
    cosine = {hit.id: hit.score for hit in plain}
    cross = CrossEncoder(tiny_cross)
    expected = sorted(plain, key=lambda hit: -cross.score([(query, hit.text)])[0])[:4]
    hits = engine.search(query, k=4, rerank=tiny_cross, rerank_top=len(sentences))
    assert [hit.id for hit in hits] == [hit.id for hit in expected]
    assert [hit.id for hit in hits] != [hit.id for hit in plain[:4]]  # the tiny cross-encoder disagrees with cosine
    np.testing.assert_allclose([hit.score for hit in hits], cross.score([(query, hit.text) for hit in hits]), atol=1e-6)
    assert all(hit.retrieval_score == pytest.approx(cosine[hit.id]) for hit in hits)
    assert all(hit.retrieval_score is None for hit in plain)


def test_rerank_only_sees_the_top_candidates_and_at_least_k(engine: SearchEngine, tiny_cross: Path) -> None:
    query = "the stock market fell"
    top3 = {hit.id for hit in engine.search(query, k=3)}
    assert {hit.id for hit in engine.search(query, k=2, rerank=tiny_cross, rerank_top=3)} <= top3
    assert len(engine.search(query, k=5, rerank=tiny_cross, rerank_top=2)) == 5
    assert len(engine.search(query, k=5, rerank=tiny_cross, rerank_top=1000)) == 5


def test_rerank_keeps_filters_and_batches(engine: SearchEngine, tiny_cross: Path, sentences: list[str]) -> None:
    hits = engine.search("music", k=3, where=["line<=5"], rerank=tiny_cross)
    assert len(hits) == 3 and all(hit.line <= 5 for hit in hits)
    queries = ["music and songs", "rockets and planets"]
    batch = engine.search_batch(queries, k=3, rerank=tiny_cross, rerank_top=6)
    single = [engine.search(query, k=3, rerank=tiny_cross, rerank_top=6) for query in queries]
    assert [[hit.id for hit in hits] for hits in batch] == [[hit.id for hit in hits] for hits in single]
    # The pairs are batched with others' padding: the same scores to float rounding.
    batch_scores = [[hit.score for hit in hits] for hits in batch]
    np.testing.assert_allclose(batch_scores, [[hit.score for hit in hits] for hits in single], atol=1e-5)


def test_the_cross_encoder_is_loaded_once_per_engine(engine: SearchEngine, tiny_cross: Path) -> None:
    first = engine.cross_encoder(tiny_cross)
    assert engine.cross_encoder(str(tiny_cross)) is first
    engine.search("cat", k=2, rerank=tiny_cross)
    assert engine.cross_encoder(tiny_cross) is first
    loaded = CrossEncoder(tiny_cross)
    assert engine.cross_encoder(loaded) is loaded


def test_a_bad_rerank_model_is_one_error_and_leaves_the_index_alone(
    engine: SearchEngine, tiny_model: Path, tiny_cross: Path
) -> None:
    before = _files(engine.path)
    with pytest.raises(SearchEngineError, match="not a cross-encoder"):
        engine.search("cat", k=2, rerank=tiny_model)
    with pytest.raises(SearchEngineError, match="rerank_top must be at least 1"):
        engine.search("cat", k=2, rerank=tiny_cross, rerank_top=0)
    assert _files(engine.path) == before
    assert len(engine.search("cat", k=2)) == 2


# --- reranking through the CLI ---


def test_cli_query_rerank_json_shows_both_scores(engine: SearchEngine, tiny_cross: Path) -> None:
    result = runner.invoke(
        app, ["query", "reset my password", "-k", "3", "-d", str(engine.path), "--rerank", str(tiny_cross), "--json"]
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["rerank"] == {"model": str(tiny_cross), "top": 100}
    hits = payload["hits"]
    assert len(hits) == 3 and all(hit["retrieval_score"] is not None for hit in hits)
    assert [hit["score"] for hit in hits] == sorted((hit["score"] for hit in hits), reverse=True)
    expected = engine.search("reset my password", k=3, rerank=tiny_cross)
    assert [hit["id"] for hit in hits] == [hit.id for hit in expected]


def test_cli_query_rerank_text_output(engine: SearchEngine, tiny_cross: Path) -> None:
    result = runner.invoke(
        app, ["query", "cat", "-k", "2", "-d", str(engine.path), "--rerank", str(tiny_cross), "--rerank-top", "5"]
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 2 and all("(fused " in line and "; cos " in line and ", bm25 " in line for line in lines)
    assert "from the top 5 by hybrid search: cross-encoder score, then fused score" in result.stderr
    dense = runner.invoke(
        app, ["query", "cat", "-k", "2", "-d", str(engine.path), "--rerank", str(tiny_cross), "--mode", "dense"]
    )
    assert all("(cos " in line for line in dense.stdout.strip().splitlines())
    assert "from the top 100 by dense search: cross-encoder score, then cosine)" in dense.stderr


@pytest.mark.parametrize(
    "extra, fragment",
    [
        (["--rerank", "MODEL"], "not a cross-encoder"),
        (["--rerank", "MISSING"], "does not exist"),
        (["--rerank-top", "5"], "add --rerank MODEL"),
    ],
)
def test_cli_bad_rerank_is_one_line_and_the_index_is_untouched(
    engine: SearchEngine, tiny_model: Path, tmp_path: Path, extra: list[str], fragment: str
) -> None:
    named = {"MODEL": str(tiny_model), "MISSING": str(tmp_path / "none")}
    extra = [named.get(arg, arg) for arg in extra]
    before = _files(engine.path)
    result = runner.invoke(app, ["query", "cat", "-d", str(engine.path), *extra])
    assert result.exit_code == 1, result.output
    message = result.output.strip()
    assert message.startswith("Error: ") and "\n" not in message and "Traceback" not in message, message
    assert fragment in message
    assert _files(engine.path) == before


def test_benchmark_quick_mode_runs(tmp_path: Path) -> None:
    """benchmarks/retrieval/reranking.py --quick as a smoke test: its correctness checks only, never its timings or quality
    (without --cross-encoder it reranks with an untrained head)."""
    out = tmp_path / "reranking.json"
    completed = subprocess.run(
        [sys.executable, str(REPOSITORY / "benchmarks" / "retrieval" / "reranking.py"), "--quick", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["checks"] and all(results["checks"].values()), results["checks"]
    assert set(results["modes"]) == {"bi-encoder", "rerank@20", "rerank@100"}
    assert all(0.0 <= mode[metric] <= 1.0 for mode in results["modes"].values() for metric in ("mrr@10", "recall@10"))
