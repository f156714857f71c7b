"""Supervised contrastive learning with hard negatives (supervised SimCSE, Gao et al. 2021) on NLI triplets:
the premise must pick its entailment among every entailment and every contradiction in the batch."""

from __future__ import annotations

from pathlib import Path

import torch
from searchengine.training.bi_encoder_run import run_bi_encoder_training
from searchengine.training.loop import TrainingReport, TrainingSettings, cycle, seed_everything
from searchengine.training.objectives.contrastive import info_nce
from searchengine.training.sentence_model import SentenceModel, TrainablePooling

from searchengine.evaluation.labelled_data import Triplet, read_triplets


def train_supervised_contrastive(
    *,
    base: str | Path,
    data: Path,
    out: Path | None,
    settings: TrainingSettings,
    batch_size: int = 32,
    eval_file: Path | None = None,
    pooling: TrainablePooling | None = None,
    max_seq_length: int = 64,
    temperature: float = 0.05,
) -> TrainingReport:
    """Train on `anchor<TAB>positive<TAB>negative` rows (premise, entailment, contradiction)."""
    triplets = read_triplets(data)
    seed_everything(settings.seed)
    model = SentenceModel(base, pooling, max_seq_length)

    def loss(batch: list[Triplet]) -> torch.Tensor:
        anchor, positive, negative = model.embed_triplets(batch)
        return info_nce(anchor, positive, temperature, hard_negatives=negative)

    return run_bi_encoder_training(
        "supervised-contrastive",
        model,
        loss,
        cycle(triplets, batch_size, settings.seed),
        settings,
        out,
        eval_file,
        texts_per_batch=lambda batch: 3 * len(batch),
        details={"data": str(data), "triplets": len(triplets), "batch_size": batch_size, "temperature": temperature},
    )
