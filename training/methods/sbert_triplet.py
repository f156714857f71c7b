"""SBERT triplet objective (Reimers & Gurevych 2019, §3): max(||a - p|| - ||a - n|| + margin, 0), Euclidean."""

from __future__ import annotations

from pathlib import Path

import torch
from searchengine.training.bi_encoder_run import run_bi_encoder_training
from searchengine.training.loop import TrainingReport, TrainingSettings, cycle, seed_everything
from searchengine.training.objectives.triplet import triplet_loss
from searchengine.training.sentence_model import SentenceModel, TrainablePooling

from searchengine.evaluation.labelled_data import Triplet, read_triplets


def train_sbert_triplet(
    *,
    base: str | Path,
    data: Path,
    out: Path | None,
    settings: TrainingSettings,
    batch_size: int = 16,
    eval_file: Path | None = None,
    pooling: TrainablePooling | None = None,
    max_seq_length: int = 64,
    margin: float = 1.0,
) -> TrainingReport:
    """Train on `anchor<TAB>positive<TAB>negative` rows."""
    triplets = read_triplets(data)
    seed_everything(settings.seed)
    model = SentenceModel(base, pooling, max_seq_length)

    def loss(batch: list[Triplet]) -> torch.Tensor:
        anchor, positive, negative = model.embed_triplets(batch)
        return triplet_loss(anchor, positive, negative, margin)

    return run_bi_encoder_training(
        "sbert-triplet",
        model,
        loss,
        cycle(triplets, batch_size, settings.seed),
        settings,
        out,
        eval_file,
        texts_per_batch=lambda batch: 3 * len(batch),
        details={"data": str(data), "triplets": len(triplets), "batch_size": batch_size, "margin": margin},
    )
