"""SBERT's regression objective: mean squared error between cos(u, v) and the gold score scaled to [0, 1]."""

from __future__ import annotations

import torch
from searchengine.training.precision import full_precision


@full_precision
def cosine_regression_loss(u: torch.Tensor, v: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.mse_loss(torch.cosine_similarity(u, v, dim=1), scores)
