"""A few steps of every bi-encoder method on the tiny offline BERT lower its loss, and the result saves as a
model the encoder loads."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
from searchengine.training.augmentations import Augmentation
from searchengine.training.loop import TrainingSettings
from searchengine.training.methods.consert import train_consert
from searchengine.training.methods.sbert_classification import train_sbert_classification
from searchengine.training.methods.sbert_regression import train_sbert_regression
from searchengine.training.methods.sbert_triplet import train_sbert_triplet
from searchengine.training.methods.simcse import train_simcse
from searchengine.training.methods.supervised_contrastive import train_supervised_contrastive

from searchengine.encoding.encoder import Encoder
from searchengine.errors import SearchEngineError

SETTINGS = TrainingSettings(steps=24, learning_rate=2e-3, warmup=0.0, eval_every=100, progress=False)


def assert_learned(report) -> None:  # noqa: ANN001
    assert report.steps == SETTINGS.steps and not report.interrupted
    assert statistics.mean(report.losses[-6:]) < statistics.mean(report.losses[:6]), report.losses


def test_sbert_classification(tiny_model, nli_file, sts_file, tmp_path) -> None:
    out = tmp_path / "model"
    report = train_sbert_classification(
        base=tiny_model, data=nli_file, out=out, settings=SETTINGS, batch_size=6, eval_file=sts_file
    )
    assert_learned(report)
    assert report.base_score is not None and report.best_score is not None
    assert Encoder(out).encode(["the cat"]).shape == (1, 32)


def test_sbert_regression(tiny_model, sts_file, tmp_path) -> None:
    assert_learned(
        train_sbert_regression(base=tiny_model, data=sts_file, out=tmp_path / "m", settings=SETTINGS, batch_size=6)
    )


def test_sbert_triplet(tiny_model, triplet_file, tmp_path) -> None:
    assert_learned(
        train_sbert_triplet(base=tiny_model, data=triplet_file, out=tmp_path / "m", settings=SETTINGS, batch_size=6)
    )


def test_simcse(tiny_model, sentence_file, tmp_path) -> None:
    assert_learned(
        train_simcse(base=tiny_model, data=sentence_file, out=tmp_path / "m", settings=SETTINGS, batch_size=8)
    )


def test_supervised_contrastive(tiny_model, triplet_file, tmp_path) -> None:
    report = train_supervised_contrastive(
        base=tiny_model, data=triplet_file, out=tmp_path / "m", settings=SETTINGS, batch_size=6
    )
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
    report = train_consert(
        base=tiny_model, out=tmp_path / "m", settings=SETTINGS, schedule=schedule, data=sentence_file, nli=nli_file,
        views=tuple(Augmentation.parse(v) for v in views), adversarial=adversarial, batch_size=8, supervised_batch_size=6,
    )  # fmt: skip
    assert_learned(report)
    if schedule in ("sup-unsup", "joint-unsup"):
        assert report.details["first_phase"]["steps"] == SETTINGS.steps


def test_consert_refuses_adversarial_without_a_supervised_loss(tiny_model, sentence_file, tmp_path) -> None:
    with pytest.raises(SearchEngineError, match="needs one"):
        train_consert(
            base=tiny_model,
            out=tmp_path / "m",
            settings=SETTINGS,
            schedule="unsup",
            data=sentence_file,
            adversarial=0.1,
        )
    with pytest.raises(SearchEngineError, match="needs NLI pairs .*: give a file of them as nli"):
        train_consert(base=tiny_model, out=tmp_path / "m", settings=SETTINGS, schedule="joint")
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_the_same_seed_gives_the_same_model(tiny_model, sentence_file, tmp_path, precision) -> None:
    settings = TrainingSettings(steps=4, learning_rate=1e-3, progress=False, seed=7, precision=precision)
    for name in ("a", "b"):
        train_simcse(base=tiny_model, data=sentence_file, out=tmp_path / name, settings=settings, batch_size=4)
    texts = ["the cat sat", "snow in the city"]
    np.testing.assert_array_equal(Encoder(tmp_path / "a").encode(texts), Encoder(tmp_path / "b").encode(texts))
