"""Cross-encoder training on the tiny offline BERT: the loss falls, save -> load reproduces the scores exactly in
searchengine and within 1e-5 in sentence-transformers, seeds, Ctrl-C, and the CLI end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from searchengine.training.cross_encoder_model import CrossEncoderModel
from searchengine.training.loop import TrainingSettings
from searchengine.training.methods.cross_encoder import CrossEncoderTraining
from typer.testing import CliRunner

from searchengine.cli import app
from searchengine.encoding.cross_encoder import CrossEncoder
from searchengine.errors import SearchEngineError
from searchengine.evaluation.labelled_data import read_scored_pairs

runner = CliRunner()


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models on a shared machine: one thread avoids OpenMP threads spinning against other processes."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def scored(tmp_path: Path, sentences: list[str]) -> Path:
    """Each sentence with itself (5), with a reworded copy (4) and with an unrelated one (0)."""
    rows = []
    for i, sentence in enumerate(sentences):
        rows.append(f"5.0\t{sentence}\t{sentence}")
        rows.append(f"4.0\t{sentence}\t{' '.join(sentence.split()[::-1])}")
        rows.append(f"0.0\t{sentence}\t{sentences[(i + 5) % len(sentences)]}")
    path = tmp_path / "scored.tsv"
    path.write_text("score\tsentence1\tsentence2\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _bce(scores: np.ndarray, gold: np.ndarray) -> float:
    scores = np.clip(scores.astype(np.float64), 1e-7, 1 - 1e-7)
    return float(-(gold * np.log(scores) + (1 - gold) * np.log(1 - scores)).mean())


def _settings(steps: int, **changes: object) -> TrainingSettings:
    settings = {"steps": steps, "learning_rate": 3e-3, "eval_every": steps, "progress": False, **changes}
    return TrainingSettings(**settings)


def test_a_few_steps_lower_the_loss_on_the_training_pairs(tiny_model: Path, scored: Path, tmp_path: Path) -> None:
    pairs = read_scored_pairs(scored)
    texts = [(pair.first, pair.second) for pair in pairs]
    gold = np.array([pair.score for pair in pairs])
    torch.manual_seed(0)
    before = CrossEncoderModel(tiny_model).predict(texts).numpy()  # the head a seed-0 run starts from
    report = CrossEncoderTraining(base=tiny_model, data=scored, out=tmp_path / "ce", batch_size=8).train(_settings(60))
    after = CrossEncoder(tmp_path / "ce").score(texts)
    assert report.steps == 60 and report.saved and np.isfinite(report.final_loss)
    assert _bce(after, gold) < _bce(before, gold) - 0.01
    log = json.loads((tmp_path / "ce" / "training_log.json").read_text())
    assert log["method"] == "cross-encoder" and log["details"]["loss"].startswith("BCEWithLogits")


def test_saved_model_scores_exactly_as_trained_and_in_sentence_transformers(
    tiny_model: Path, tmp_path: Path, sentences: list[str]
) -> None:
    from sentence_transformers import CrossEncoder as STCrossEncoder
    from transformers import AutoModelForSequenceClassification

    model = CrossEncoderModel(tiny_model, max_seq_length=48)
    with torch.no_grad():  # a head with a spread, so the comparison is not between near-constant scores
        model.transformer.classifier.weight.normal_(0.0, 1.0)
    pairs = [(a, b) for a in sentences[:5] for b in sentences[5:]]
    expected = model.predict(pairs).numpy()
    model.save(tmp_path / "ce")
    loaded = CrossEncoder(tmp_path / "ce", device="cpu")
    assert loaded.max_length == 48 and loaded.applies_sigmoid
    np.testing.assert_array_equal(loaded.score(pairs), expected)
    np.testing.assert_allclose(STCrossEncoder(str(tmp_path / "ce"), device="cpu").predict(pairs), expected, atol=1e-5)
    assert AutoModelForSequenceClassification.from_pretrained(tmp_path / "ce").config.num_labels == 1


def test_the_same_seed_gives_the_same_model(
    tiny_model: Path, scored: Path, tmp_path: Path, sentences: list[str]
) -> None:
    pairs = [(sentences[0], sentence) for sentence in sentences]
    runs = {}
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        CrossEncoderTraining(
            base=tiny_model, data=scored, out=tmp_path / name, batch_size=4
        ).train(_settings(3, seed=seed))
        runs[name] = CrossEncoder(tmp_path / name).score(pairs)
    np.testing.assert_array_equal(runs["a"], runs["b"])
    assert not np.array_equal(runs["a"], runs["c"])


def test_eval_file_scores_spearman_and_keeps_the_best(tiny_model: Path, scored: Path, tmp_path: Path) -> None:
    report = CrossEncoderTraining(
        base=tiny_model, data=scored, out=tmp_path / "ce", eval_file=scored
    ).train(_settings(6, eval_every=2))
    assert report.base_score is not None and [e.step for e in report.evaluations] == [2, 4, 6]
    assert all(-100 <= e.score <= 100 for e in report.evaluations)
    assert report.best_score == max(e.score for e in report.evaluations)
    log = json.loads((tmp_path / "ce" / "training_log.json").read_text())
    assert log["best_step"] == report.best_step


def test_ctrl_c_keeps_the_last_good_checkpoint(
    tiny_model: Path, scored: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "ce"
    CrossEncoderTraining(base=tiny_model, data=scored, out=out, batch_size=4).train(_settings(2))
    good = {path.name: path.read_bytes() for path in out.iterdir()}
    calls = {"n": 0}
    original = CrossEncoderModel.logits

    def interrupted(self: CrossEncoderModel, pairs: list) -> torch.Tensor:
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return original(self, pairs)

    monkeypatch.setattr(CrossEncoderModel, "logits", interrupted)
    report = CrossEncoderTraining(
        base=tiny_model, data=scored, out=out, batch_size=4
    ).train(_settings(10, eval_every=5))
    assert report.interrupted and report.steps == 2 and not report.saved
    assert {path.name: path.read_bytes() for path in out.iterdir()} == good
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".")]


def test_bad_input_is_a_clear_error(tiny_model: Path, scored: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("score\tsentence1\tsentence2\n7\ta\tb\n", encoding="utf-8")
    with pytest.raises(SearchEngineError, match="bad.tsv:2"):
        CrossEncoderTraining(base=tiny_model, data=bad, out=tmp_path / "ce").train(_settings(1))
    with pytest.raises(SearchEngineError, match="does not exist"):
        CrossEncoderTraining(base=tmp_path / "no-model", data=scored, out=tmp_path / "ce").train(_settings(1))
    assert not (tmp_path / "ce").exists()


def test_cli_trains_then_reranks_with_the_model(
    tiny_model: Path, scored: Path, tmp_path: Path, sentences: list[str], tiny_encoder
) -> None:
    from searchengine import SearchEngine

    out = tmp_path / "ce"
    result = runner.invoke(app, [
        "train", "cross-encoder", "--base", str(tiny_model), "--data", str(scored), "--eval", str(scored),
        "--out", str(out), "--steps", "4", "--eval-every", "2", "--batch-size", "4", "--seed", "3", "--quiet",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "cross-encoder: 4 steps" in result.output and f"Saved to {out}" in result.output
    SearchEngine.build(sentences, tmp_path / "index", encoder=tiny_encoder)
    query = runner.invoke(
        app, ["query", "cat", "-k", "2", "-d", str(tmp_path / "index"), "--rerank", str(out), "--json"]
    )
    assert query.exit_code == 0, query.output
    assert len(json.loads(query.stdout)["hits"]) == 2


def test_cli_bad_data_is_one_line(tiny_model: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, [
        "train", "cross-encoder", "--base", str(tiny_model), "--data", str(tmp_path / "none.tsv"),
        "--out", str(tmp_path / "ce"), "--steps", "2",
    ])  # fmt: skip
    assert result.exit_code == 1 and result.output.startswith("Error: ") and "no such file" in result.output
    assert result.output.count("\n") == 1 and not (tmp_path / "ce").exists()
