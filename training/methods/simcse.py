"""Unsupervised SimCSE (Gao et al. 2021): each sentence goes through the encoder twice; dropout alone makes the
two vectors differ, and InfoNCE with in-batch negatives pulls them together."""

from __future__ import annotations

from pathlib import Path

import torch
from searchengine.training.bi_encoder_run import run_bi_encoder_training
from searchengine.training.loop import TrainingReport, TrainingSettings, cycle, seed_everything
from searchengine.training.objectives.contrastive import info_nce
from searchengine.training.sentence_model import SentenceModel, TrainablePooling
from searchengine.training.sentences import read_sentences


def train_simcse(
    *,
    base: str | Path,
    data: Path,
    out: Path | None,
    settings: TrainingSettings,
    batch_size: int = 64,
    eval_file: Path | None = None,
    pooling: TrainablePooling | None = None,
    max_seq_length: int = 32,
    temperature: float = 0.05,
    limit: int | None = None,
) -> TrainingReport:
    """Train on the sentences of a corpus file (one per line, or .jsonl)."""
    sentences = read_sentences(data, limit)
    seed_everything(settings.seed)
    model = SentenceModel(base, pooling, max_seq_length)

    def loss(batch: list[str]) -> torch.Tensor:
        first, second = model.embed_texts(batch + batch).chunk(2)  # one pass, two dropout masks
        return info_nce(first, second, temperature)

    return run_bi_encoder_training(
        "simcse",
        model,
        loss,
        cycle(sentences, batch_size, settings.seed),
        settings,
        out,
        eval_file,
        texts_per_batch=lambda batch: 2 * len(batch),
        details={"data": str(data), "sentences": len(sentences), "batch_size": batch_size, "temperature": temperature},
    )
