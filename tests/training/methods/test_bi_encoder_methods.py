"""A few steps of every bi-encoder method on the tiny offline BERT lower its loss, and the result saves as a
model the encoder loads."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
from searchengine.training.loop import TrainingSettings
from searchengine.training.methods.consert import ConSERT
from searchengine.training.methods.sbert_classification import SBERTClassification
from searchengine.training.methods.sbert_regression import SBERTRegression
from searchengine.training.methods.sbert_triplet import SBERTTriplet
from searchengine.training.methods.simcse import SimCSE
from searchengine.training.methods.supervised_contrastive import SupervisedContrastive

from searchengine.encoding.encoder import Encoder
from searchengine.errors import SearchEngineError

SETTINGS = TrainingSettings(steps=24, learning_rate=2e-3, warmup=0.0, eval_every=100, progress=False)


def assert_learned(report) -> None:  # noqa: ANN001
    assert report.steps == SETTINGS.steps and not report.interrupted
    assert statistics.mean(report.losses[-6:]) < statistics.mean(report.losses[:6]), report.losses


def test_sbert_classification(tiny_model, nli_file, sts_file, tmp_path) -> None:
    out = tmp_path / "model"
    report = SBERTClassification(
        base=tiny_model, data=nli_file, out=out, batch_size=6, eval_file=sts_file
    ).train(SETTINGS)
    assert_learned(report)
    assert report.base_score is not None and report.best_score is not None
    assert Encoder(out).encode(["the cat"]).shape == (1, 32)


def test_sbert_regression(tiny_model, sts_file, tmp_path) -> None:
    assert_learned(
        SBERTRegression(base=tiny_model, data=sts_file, out=tmp_path / "m", batch_size=6).train(SETTINGS)
    )


def test_sbert_triplet(tiny_model, triplet_file, tmp_path) -> None:
    assert_learned(
        SBERTTriplet(base=tiny_model, data=triplet_file, out=tmp_path / "m", batch_size=6).train(SETTINGS)
    )


def test_simcse(tiny_model, sentence_file, tmp_path) -> None:
    assert_learned(
        SimCSE(base=tiny_model, data=sentence_file, out=tmp_path / "m", batch_size=8).train(SETTINGS)
    )


def test_supervised_contrastive(tiny_model, triplet_file, tmp_path) -> None:
    report = SupervisedContrastive(base=tiny_model, data=triplet_file, out=tmp_path / "m", batch_size=6).train(SETTINGS)
    assert_learned(report)


@pytest.mark.parametrize(
    ("schedule", "adversarial", "views"),
    [
        ("unsup", None, ("shuffle", "feature_cutoff:0.2")),
        ("unsup", None, ("token_cutoff", "dropout")),
        ("joint", None, ("shuffle", "token_cutoff")),
        ("joint", 0.1, ("none", "none")),
        ("sup-unsup", None, ("shuffle", "feature_cutoff")),
        ("joint-unsup", 0.1, ("shuffle", "feature_cutoff")),
    ],
)
def test_consert_schedules(tiny_model, sentence_file, nli_file, tmp_path, schedule, adversarial, views) -> None:
    report = ConSERT(
        base=tiny_model,
        out=tmp_path / "m",
        schedule=schedule,
        data=sentence_file,
        nli=nli_file,
        views=",".join(views),
        adversarial=adversarial,
        batch_size=8,
        supervised_batch_size=6,
    ).train(SETTINGS)  # fmt: skip
    assert_learned(report)
    if schedule in ("sup-unsup", "joint-unsup"):
        assert report.details["first_phase"]["steps"] == SETTINGS.steps


def test_consert_refuses_adversarial_without_a_supervised_loss(tiny_model, sentence_file, tmp_path) -> None:
    with pytest.raises(SearchEngineError, match="needs one"):
        ConSERT(
            base=tiny_model, out=tmp_path / "m", schedule="unsup", data=sentence_file, adversarial=0.1
        ).train(SETTINGS)
    with pytest.raises(SearchEngineError, match="needs NLI pairs .*: give a file of them as nli"):
        ConSERT(base=tiny_model, out=tmp_path / "m", schedule="joint").train(SETTINGS)
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_the_same_seed_gives_the_same_model(tiny_model, sentence_file, tmp_path, precision) -> None:
    settings = TrainingSettings(steps=4, learning_rate=1e-3, progress=False, seed=7, precision=precision)
    for name in ("a", "b"):
        SimCSE(base=tiny_model, data=sentence_file, out=tmp_path / name, batch_size=4).train(settings)
    texts = ["the cat sat", "snow in the city"]
    np.testing.assert_array_equal(Encoder(tmp_path / "a").encode(texts), Encoder(tmp_path / "b").encode(texts))
