"""Token-to-sentence pooling: the variants the Sentence-BERT and BERT-flow papers compare."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

from searchengine.errors import SearchEngineError

if TYPE_CHECKING:  # torch loads where vectors are pooled, so finding a model and listing the modes stay cheap
    import torch

PoolingMode = Literal["mean", "cls", "max", "mean_sqrt_len", "last2avg", "first_last_avg"]
"""mean/cls/max/mean_sqrt_len pool the last layer. last2avg averages the last two layers, then mean-pools.
first_last_avg averages the embedding layer (hidden_states[0]) and the last layer, then mean-pools, as the
BERT-flow and SimCSE code do (PromptBERT points out that this 'first' is the static embedding layer)."""
POOLING_MODES: tuple[str, ...] = get_args(PoolingMode)

NEEDS_ALL_LAYERS = frozenset({"last2avg", "first_last_avg"})


def _masked_mean(tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    mask = mask.unsqueeze(-1).to(tokens.dtype)
    return (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


def pool(mode: PoolingMode, hidden_states: tuple[torch.Tensor, ...], attention_mask: torch.Tensor) -> torch.Tensor:
    """Pool token vectors (batch, seq, dim) into sentence vectors (batch, dim), ignoring padding.

    `hidden_states` holds every layer's output (embeddings first) for the layer-mixing modes and at least
    the last layer for the others.
    """
    last = hidden_states[-1]
    if mode == "mean":
        return _masked_mean(last, attention_mask)
    if mode == "cls":
        return last[:, 0]
    if mode == "max":
        import torch

        masked = last.masked_fill(attention_mask.unsqueeze(-1) == 0, torch.finfo(last.dtype).min)
        return masked.max(dim=1).values
    if mode == "mean_sqrt_len":
        mask = attention_mask.unsqueeze(-1).to(last.dtype)
        return (last * mask).sum(1) / mask.sum(1).sqrt().clamp(min=1e-9)
    if mode == "last2avg":
        return _masked_mean((hidden_states[-1] + hidden_states[-2]) / 2, attention_mask)
    if mode == "first_last_avg":
        return _masked_mean((hidden_states[0] + hidden_states[-1]) / 2, attention_mask)
    raise SearchEngineError(f"unknown pooling mode {mode!r}; choose one of {', '.join(POOLING_MODES)}")
