"""ConSERT's adversarial augmentation: a fast-gradient-value (FGV) perturbation of the embedding layer's output,
r = epsilon * g / ||g||, where g is the gradient of a supervised loss. It needs that supervised loss, so it is only
offered together with one (the joint schedules)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from searchengine.training.sentence_model import SentenceModel


def embed_recording_embeddings(
    model: SentenceModel, features: dict[str, torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sentence vectors plus the embedding layer's output they were computed from (for its gradient)."""
    recorded: list[torch.Tensor] = []

    def record(embeddings: torch.Tensor, _mask: torch.Tensor) -> torch.Tensor:
        recorded.append(embeddings)
        return embeddings

    with model.editing_embeddings(record):
        vectors = model(features)
    return vectors, recorded[0]


def fgv_perturbation(loss: torch.Tensor, embeddings: torch.Tensor, epsilon: float) -> torch.Tensor:
    """epsilon * g / ||g||_2 per sentence, g = d loss / d embeddings; detached, the graph is kept for backward."""
    (gradient,) = torch.autograd.grad(loss, embeddings, retain_graph=True)
    norms = torch.linalg.vector_norm(gradient.flatten(1), dim=1).clamp(min=1e-12)
    return (epsilon * gradient / norms.view(-1, 1, 1)).detach()


def embed_perturbed(
    model: SentenceModel, features: dict[str, torch.Tensor], perturbation: torch.Tensor
) -> torch.Tensor:
    """Sentence vectors with `perturbation` added to the embedding layer's output."""
    add: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = lambda e, _mask: e + perturbation  # noqa: E731
    with model.editing_embeddings(add):
        return model(features)
