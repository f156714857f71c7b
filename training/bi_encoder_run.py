"""What every bi-encoder method does around its loss: seed, load the base, evaluate on an STS dev file, train,
save in the sentence-transformers layout."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import torch
from searchengine.training.loop import Batch, TrainingReport, TrainingSettings, train
from searchengine.training.sentence_model import SentenceModel

from searchengine.evaluation.labelled_data import read_scored_pairs
from searchengine.evaluation.sts import sts_spearman


def sts_evaluator(model: SentenceModel, eval_file: Path | None) -> Callable[[], float] | None:
    """Spearman x 100 on an STS file with the model's current weights, or None without a file."""
    if eval_file is None:
        return None
    pairs = read_scored_pairs(eval_file)
    return lambda: sts_spearman(model.encode, pairs)


def run_bi_encoder_training(
    method: str,
    model: SentenceModel,
    loss_function: Callable[[Batch], torch.Tensor],
    batches: Iterator[Batch],
    settings: TrainingSettings,
    out: Path | None,
    eval_file: Path | None = None,
    texts_per_batch: Callable[[Batch], int] = len,
    extra_parameters: list[torch.nn.Parameter] | None = None,
    details: dict | None = None,
) -> TrainingReport:
    """train() with the STS evaluator and the model's own save, and the base recorded in the log."""
    details = {
        "base": model.source.name,
        "pooling": model.pooling,
        "max_seq_length": model.max_seq_length,
        **(details or {}),
    }
    return train(
        method,
        model,
        loss_function,
        batches,
        settings,
        out,
        evaluate=sts_evaluator(model, eval_file) if out is not None else None,
        texts_per_batch=texts_per_batch,
        extra_parameters=extra_parameters,
        details=details,
    )
