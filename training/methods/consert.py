"""ConSERT (Yan et al. 2021): contrastive learning between two augmented views of each sentence (NT-Xent),
alone or combined with SBERT's NLI classification objective in the paper's three schedules:

- unsup: NT-Xent on unlabelled sentences (`data`).
- joint: L_ce + alpha * L_con, both on the NLI pairs (`nli`).
- sup-unsup: L_ce on NLI first, then NT-Xent on the unlabelled sentences.
- joint-unsup: the joint objective on NLI first, then NT-Xent on the unlabelled sentences.

The two views are any two augmentations of training.augmentations. With `adversarial` (an epsilon), the joint
objective's second view is instead the FGV adversarial perturbation of the supervised loss (training.adversarial),
which needs that supervised loss: so it is refused for the unsup and sup-unsup schedules."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import torch
from searchengine.training.adversarial import embed_perturbed, embed_recording_embeddings, fgv_perturbation
from searchengine.training.augmentations import Augmentation, embed_view
from searchengine.training.bi_encoder_run import run_bi_encoder_training
from searchengine.training.loop import TrainingReport, TrainingSettings, cycle, seed_everything
from searchengine.training.method_options import Schedule
from searchengine.training.methods.sbert_classification import train_sbert_classification
from searchengine.training.objectives.contrastive import nt_xent
from searchengine.training.objectives.softmax_classification import SoftmaxClassifier, softmax_classification_loss
from searchengine.training.sentence_model import SentenceModel, TrainablePooling
from searchengine.training.sentences import read_sentences

from searchengine.errors import SearchEngineError
from searchengine.evaluation.labelled_data import LabelledPair, read_labelled_pairs

SCHEDULES = get_args(Schedule)
DEFAULT_VIEWS = (Augmentation("shuffle"), Augmentation("feature_cutoff", 0.2))


def train_consert(
    *,
    base: str | Path,
    out: Path,
    settings: TrainingSettings,
    schedule: Schedule = "unsup",
    data: Path | None = None,
    nli: Path | None = None,
    views: tuple[Augmentation, Augmentation] = DEFAULT_VIEWS,
    temperature: float = 0.1,
    alpha: float = 0.1,
    adversarial: float | None = None,
    supervised_settings: TrainingSettings | None = None,
    batch_size: int = 32,
    supervised_batch_size: int = 16,
    eval_file: Path | None = None,
    pooling: TrainablePooling | None = None,
    max_seq_length: int = 64,
    limit: int | None = None,
) -> TrainingReport:
    """Run one ConSERT schedule. `settings` drive the last phase (the one saved to `out`);
    `supervised_settings` the NLI phase of sup-unsup and joint-unsup (default: the same)."""
    if schedule not in SCHEDULES:
        raise SearchEngineError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
    if schedule != "joint" and data is None:
        raise SearchEngineError(f"the {schedule} schedule trains on unlabelled sentences: give a file of them as data")
    if schedule != "unsup" and nli is None:
        raise SearchEngineError(
            f"the {schedule} schedule needs NLI pairs (premise, hypothesis, label): give a file of them as nli"
        )
    if adversarial is not None and schedule not in ("joint", "joint-unsup"):
        raise SearchEngineError(
            "adversarial augmentation perturbs along the gradient of a supervised loss, so it needs one: "
            "use the joint or joint-unsup schedule with a file of NLI pairs as nli"
        )
    if len(views) != 2:
        raise SearchEngineError(f"ConSERT contrasts exactly two views, got {len(views)}")
    sentences = read_sentences(data, limit) if data is not None else []
    pairs = read_labelled_pairs(nli) if nli is not None else []
    seed_everything(settings.seed)
    model = SentenceModel(base, pooling, max_seq_length)
    details = {
        "schedule": schedule,
        "views": [f"{view.name}:{view.rate:g}" for view in views],
        "temperature": temperature,
        "data": str(data) if data else None,
        "nli": str(nli) if nli else None,
    }
    if schedule in ("joint", "joint-unsup"):
        details.update(alpha=alpha, adversarial_epsilon=adversarial)
    first_settings = supervised_settings or settings

    if schedule == "joint":
        return _train_joint(
            model,
            pairs,
            out,
            settings,
            views,
            temperature,
            alpha,
            adversarial,
            supervised_batch_size,
            eval_file,
            details,
        )
    if schedule == "sup-unsup":
        first = train_sbert_classification(
            base=base, data=nli, out=None, settings=first_settings, batch_size=supervised_batch_size, model=model
        )
    elif schedule == "joint-unsup":
        first = _train_joint(
            model, pairs, None, first_settings, views, temperature, alpha, adversarial, supervised_batch_size, None, {}
        )
    else:
        first = None
    if first is not None:
        details["first_phase"] = {
            "steps": first.steps,
            "seconds": round(first.seconds, 1),
            "final_loss": first.final_loss,
        }
        if first.interrupted:
            raise KeyboardInterrupt

    def contrastive(batch: list[str]) -> torch.Tensor:
        features = model.tokenize(batch)
        return nt_xent(embed_view(model, features, views[0]), embed_view(model, features, views[1]), temperature)

    return run_bi_encoder_training(
        f"consert-{schedule}",
        model,
        contrastive,
        cycle(sentences, batch_size, settings.seed),
        settings,
        out,
        eval_file,
        texts_per_batch=lambda batch: 2 * len(batch),
        details={**details, "sentences": len(sentences), "batch_size": batch_size},
    )


def _train_joint(
    model: SentenceModel,
    pairs: list[LabelledPair],
    out: Path | None,
    settings: TrainingSettings,
    views: tuple[Augmentation, Augmentation],
    temperature: float,
    alpha: float,
    adversarial: float | None,
    batch_size: int,
    eval_file: Path | None,
    details: dict,
) -> TrainingReport:
    """L_ce + alpha * L_con on NLI pairs; L_con contrasts two views of every premise and hypothesis."""
    classifier = SoftmaxClassifier(model.dimension)

    def joint(batch: list[LabelledPair]) -> torch.Tensor:
        premises = model.tokenize([pair.premise for pair in batch])
        hypotheses = model.tokenize([pair.hypothesis for pair in batch])
        labels = torch.tensor([pair.label for pair in batch], device=model.device)
        if adversarial is None:
            supervised = softmax_classification_loss(classifier, model(premises), model(hypotheses), labels)
            both = model.tokenize([pair.premise for pair in batch] + [pair.hypothesis for pair in batch])
            first, second = embed_view(model, both, views[0]), embed_view(model, both, views[1])
        else:
            u, u_embeddings = embed_recording_embeddings(model, premises)
            v, v_embeddings = embed_recording_embeddings(model, hypotheses)
            supervised = softmax_classification_loss(classifier, u, v, labels)
            first = torch.cat([u, v])
            second = torch.cat(
                [
                    embed_perturbed(model, premises, fgv_perturbation(supervised, u_embeddings, adversarial)),
                    embed_perturbed(model, hypotheses, fgv_perturbation(supervised, v_embeddings, adversarial)),
                ]
            )
        return supervised + alpha * nt_xent(first, second, temperature)

    return run_bi_encoder_training(
        "consert-joint",
        model,
        joint,
        cycle(pairs, batch_size, settings.seed),
        settings,
        out,
        eval_file,
        texts_per_batch=lambda batch: (6 if adversarial is None else 4) * len(batch),  # forward passes per pair
        extra_parameters=list(classifier.parameters()),
        details={**details, "pairs": len(pairs), "supervised_batch_size": batch_size},
    )
