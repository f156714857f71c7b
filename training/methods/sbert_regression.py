"""SBERT regression (Reimers & Gurevych 2019, §3): the mean squared error between cos(u, v) and the gold
similarity scaled to [0, 1]."""

from __future__ import annotations

from pathlib import Path

import torch
from searchengine.training.bi_encoder_run import run_bi_encoder_training
from searchengine.training.loop import TrainingReport, TrainingSettings, cycle, seed_everything
from searchengine.training.objectives.cosine_regression import cosine_regression_loss
from searchengine.training.sentence_model import SentenceModel, TrainablePooling

from searchengine.evaluation.labelled_data import RatedPair, read_scored_pairs


def train_sbert_regression(
    *,
    base: str | Path,
    data: Path,
    out: Path | None,
    settings: TrainingSettings,
    batch_size: int = 16,
    eval_file: Path | None = None,
    pooling: TrainablePooling | None = None,
    max_seq_length: int = 64,
    max_score: float = 5.0,
) -> TrainingReport:
    """Train on `score<TAB>sentence1<TAB>sentence2` rows with scores in [0, max_score]."""
    pairs = read_scored_pairs(data, max_score)
    seed_everything(settings.seed)
    model = SentenceModel(base, pooling, max_seq_length)

    def loss(batch: list[RatedPair]) -> torch.Tensor:
        u = model.embed_texts([pair.first for pair in batch])
        v = model.embed_texts([pair.second for pair in batch])
        return cosine_regression_loss(u, v, torch.tensor([pair.score for pair in batch], device=u.device))

    return run_bi_encoder_training(
        "sbert-regression",
        model,
        loss,
        cycle(pairs, batch_size, settings.seed),
        settings,
        out,
        eval_file,
        texts_per_batch=lambda batch: 2 * len(batch),
        details={"data": str(data), "pairs": len(pairs), "batch_size": batch_size},
    )
