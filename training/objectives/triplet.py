"""SBERT's triplet objective: max(||a - p|| - ||a - n|| + margin, 0) with Euclidean distance, margin 1."""

from __future__ import annotations

import torch
from searchengine.training.precision import full_precision


@full_precision
def triplet_loss(
    anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor, margin: float = 1.0
) -> torch.Tensor:
    closer = torch.linalg.vector_norm(anchor - positive, dim=1)
    farther = torch.linalg.vector_norm(anchor - negative, dim=1)
    return torch.relu(closer - farther + margin).mean()
