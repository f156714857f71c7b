"""SBERT on NLI (Reimers & Gurevych 2019, §3): a siamese encoder whose (u, v, |u - v|) feeds a 3-way softmax
classifier trained with cross-entropy; the classifier is dropped, the encoder kept."""

from __future__ import annotations

from pathlib import Path

import torch
from searchengine.training.bi_encoder_run import run_bi_encoder_training
from searchengine.training.loop import TrainingReport, TrainingSettings, cycle, seed_everything
from searchengine.training.objectives.softmax_classification import SoftmaxClassifier, softmax_classification_loss
from searchengine.training.sentence_model import SentenceModel, TrainablePooling

from searchengine.evaluation.labelled_data import LabelledPair, read_labelled_pairs


def train_sbert_classification(
    *,
    base: str | Path,
    data: Path,
    out: Path | None,
    settings: TrainingSettings,
    batch_size: int = 16,
    eval_file: Path | None = None,
    pooling: TrainablePooling | None = None,
    max_seq_length: int = 64,
    model: SentenceModel | None = None,
) -> TrainingReport:
    """Train on `premise<TAB>hypothesis<TAB>label` rows. Pass `model` to continue training one in memory."""
    pairs = read_labelled_pairs(data)
    seed_everything(settings.seed)
    model = model or SentenceModel(base, pooling, max_seq_length)
    classifier = SoftmaxClassifier(model.dimension)

    def loss(batch: list[LabelledPair]) -> torch.Tensor:
        u = model.embed_texts([pair.premise for pair in batch])
        v = model.embed_texts([pair.hypothesis for pair in batch])
        labels = torch.tensor([pair.label for pair in batch], device=u.device)
        return softmax_classification_loss(classifier, u, v, labels)

    return run_bi_encoder_training(
        "sbert-classification",
        model,
        loss,
        cycle(pairs, batch_size, settings.seed),
        settings,
        out,
        eval_file,
        texts_per_batch=lambda batch: 2 * len(batch),
        extra_parameters=list(classifier.parameters()),
        details={"data": str(data), "pairs": len(pairs), "batch_size": batch_size},
    )
