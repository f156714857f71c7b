"""Contrastive objectives with in-batch negatives.

info_nce (SimCSE, Gao et al. 2021): row i of `anchors` must pick row i of `positives` among all positives (and,
for supervised SimCSE, among the hard negatives too) by cosine similarity / temperature.
nt_xent (ConSERT, Yan et al. 2021, after SimCLR): both views act as anchors; each of the 2N vectors must pick its
partner among the other 2N - 1."""

from __future__ import annotations

import torch
from searchengine.training.precision import full_precision
from torch.nn.functional import cross_entropy, normalize


@full_precision
def info_nce(
    anchors: torch.Tensor,
    positives: torch.Tensor,
    temperature: float = 0.05,
    hard_negatives: torch.Tensor | None = None,
) -> torch.Tensor:
    a, p = normalize(anchors, dim=1), normalize(positives, dim=1)
    candidates = p if hard_negatives is None else torch.cat([p, normalize(hard_negatives, dim=1)])
    logits = a @ candidates.T / temperature
    return cross_entropy(logits, torch.arange(len(a), device=a.device))


@full_precision
def nt_xent(first: torch.Tensor, second: torch.Tensor, temperature: float = 0.1) -> torch.Tensor:
    z = normalize(torch.cat([first, second]), dim=1)
    n = len(first)
    logits = z @ z.T / temperature
    logits = logits.masked_fill(torch.eye(2 * n, dtype=torch.bool, device=z.device), float("-inf"))
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)
    return cross_entropy(logits, targets)
