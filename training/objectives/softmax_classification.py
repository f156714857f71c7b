"""SBERT's classification objective (Reimers & Gurevych 2019, §3): softmax(W [u; v; |u - v|]) trained with
cross-entropy on NLI labels. The classifier head is thrown away after training."""

from __future__ import annotations

from collections.abc import Callable

import torch
from searchengine.training.precision import full_precision
from torch import nn

from searchengine.evaluation.labelled_data import LabelledPair


class SoftmaxClassifier(nn.Module):
    """The head W of shape (3 * dimension, labels)."""

    def __init__(self, dimension: int, labels: int = 3) -> None:
        super().__init__()
        self.linear = nn.Linear(3 * dimension, labels)

    def forward(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.linear(torch.cat([u, v, (u - v).abs()], dim=1))


@full_precision
def softmax_classification_loss(
    classifier: SoftmaxClassifier, u: torch.Tensor, v: torch.Tensor, labels: torch.Tensor
) -> torch.Tensor:
    """Mean cross-entropy of the classifier's logits for (u, v) against integer labels."""
    return nn.functional.cross_entropy(classifier(u, v), labels)


class SoftmaxLoss(nn.Module):
    """SBERT's classification loss on a batch of NLI pairs (sentence-transformers' SoftmaxLoss): each premise and
    hypothesis embedded by `embed`, and the classifier head, this module's only parameters, trained along."""

    def __init__(self, embed: Callable[[list[str]], torch.Tensor], dimension: int, labels: int = 3) -> None:
        super().__init__()
        self.embed = embed
        self.classifier = SoftmaxClassifier(dimension, labels)

    def forward(self, batch: list[LabelledPair]) -> torch.Tensor:
        u = self.embed([pair.premise for pair in batch])
        v = self.embed([pair.hypothesis for pair in batch])
        labels = torch.tensor([pair.label for pair in batch], device=u.device)
        return softmax_classification_loss(self.classifier, u, v, labels)
