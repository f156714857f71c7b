"""ConSERT's data augmentations (Yan et al. 2021, §3.2), applied in the embedding layer so the text is never
rewritten: each one makes a different "view" of the same sentence for contrastive learning.

- shuffle: permute the position ids of a sentence's tokens ([CLS] and [SEP] keep their places), so the
  transformer sees the tokens in a different order.
- token_cutoff: zero the embedding vectors of a random fraction of the tokens.
- feature_cutoff: zero a random fraction of the embedding dimensions, the same ones for every token of a
  sentence.
- dropout: zero random elements of the embedding matrix (no rescaling, as the paper describes it).
- none: no augmentation; the model's own dropout still makes two passes differ (SimCSE's view).

Padding is never touched. Randomness comes from torch's global generator, so `--seed` reproduces a run."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from searchengine.training.sentence_model import SentenceModel

from searchengine.errors import SearchEngineError

AUGMENTATIONS = ("none", "shuffle", "token_cutoff", "feature_cutoff", "dropout")
DEFAULT_RATES = {"token_cutoff": 0.15, "feature_cutoff": 0.2, "dropout": 0.1}


@dataclass(frozen=True)
class Augmentation:
    name: str
    rate: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Augmentation:
        """'shuffle', 'feature_cutoff', or 'feature_cutoff:0.3' (name:rate)."""
        name, _, rate = text.strip().partition(":")
        name = name.replace("-", "_")
        if name not in AUGMENTATIONS:
            raise SearchEngineError(f"unknown augmentation {name!r}; choose from {', '.join(AUGMENTATIONS)}")
        try:
            value = float(rate) if rate else DEFAULT_RATES.get(name, 0.0)
        except ValueError:
            raise SearchEngineError(
                f"augmentation rate {rate!r} is not a number (write e.g. token_cutoff:0.15)"
            ) from None
        if not 0.0 <= value < 1.0:
            raise SearchEngineError(f"augmentation rate {value} must lie in [0, 1)")
        return cls(name, value)


def shuffled_position_ids(attention_mask: torch.Tensor) -> torch.Tensor:
    """Position ids with the inner tokens of each sentence permuted; [CLS] (first), [SEP] (last real token)
    and padding keep their own positions."""
    batch, width = attention_mask.shape
    positions = torch.arange(width, device=attention_mask.device).repeat(batch, 1)
    for row, length in enumerate(attention_mask.sum(dim=1).tolist()):
        inner = int(length) - 2
        if inner > 1:
            positions[row, 1 : 1 + inner] = 1 + torch.randperm(inner, device=attention_mask.device)
    return positions


def token_cutoff(embeddings: torch.Tensor, attention_mask: torch.Tensor, rate: float) -> torch.Tensor:
    """Zero ceil(rate x length) random real tokens of each sentence (at least one when rate > 0)."""
    keep = torch.ones(embeddings.shape[:2], dtype=embeddings.dtype, device=embeddings.device)
    for row, length in enumerate(attention_mask.sum(dim=1).tolist()):
        count = int(torch.ceil(torch.tensor(rate * length)).item())
        if count:
            keep[row, torch.randperm(int(length), device=embeddings.device)[:count]] = 0
    return embeddings * keep.unsqueeze(-1)


def feature_cutoff(embeddings: torch.Tensor, rate: float) -> torch.Tensor:
    """Zero ceil(rate x dim) random dimensions of each sentence, across all its tokens."""
    batch, _, dim = embeddings.shape
    count = int(torch.ceil(torch.tensor(rate * dim)).item())
    keep = torch.ones((batch, dim), dtype=embeddings.dtype, device=embeddings.device)
    for row in range(batch):
        keep[row, torch.randperm(dim, device=embeddings.device)[:count]] = 0
    return embeddings * keep.unsqueeze(1)


def element_dropout(embeddings: torch.Tensor, rate: float) -> torch.Tensor:
    """Zero each element with probability `rate` (no 1/(1 - rate) rescaling)."""
    return embeddings * (torch.rand_like(embeddings) >= rate).to(embeddings.dtype)


def embed_view(model: SentenceModel, features: dict[str, torch.Tensor], augmentation: Augmentation) -> torch.Tensor:
    """Sentence vectors of one augmented view of the tokenized batch `features`."""
    name, rate = augmentation.name, augmentation.rate
    if name == "none":
        return model(features)
    if name == "shuffle":
        return model(features, position_ids=shuffled_position_ids(features["attention_mask"]))
    if name == "token_cutoff":
        edit = lambda e, mask: token_cutoff(e, mask, rate)  # noqa: E731
    elif name == "feature_cutoff":
        edit = lambda e, mask: feature_cutoff(e, rate)  # noqa: ARG005, E731
    else:
        edit = lambda e, mask: element_dropout(e, rate)  # noqa: ARG005, E731
    with model.editing_embeddings(edit):
        return model(features)
