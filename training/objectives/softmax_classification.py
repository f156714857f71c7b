"""SBERT's classification objective (Reimers & Gurevych 2019, §3): softmax(W [u; v; |u - v|]) trained with
cross-entropy on NLI labels. The classifier head is thrown away after training."""

from __future__ import annotations

import torch
from searchengine.training.precision import full_precision
from torch import nn


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
