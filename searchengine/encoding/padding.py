"""Token id rows into the padded tensors a transformer takes, built by numpy in one go."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch


def padded(ids: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask) of token id rows, padded on the right to the longest. One array for all rows, an
    order of magnitude faster than a tensor per row: on a CPU that is lost in the model's time, on a GPU it is host
    time the GPU waits for (measured in docs/benchmarks.md#gpu)."""
    lengths = np.fromiter((len(row) for row in ids), dtype=np.int64, count=len(ids))
    mask = np.arange(lengths.max()) < lengths[:, None]
    input_ids = np.full(mask.shape, pad_id, dtype=np.int64)
    input_ids[mask] = np.fromiter((token for row in ids for token in row), dtype=np.int64, count=int(lengths.sum()))
    return torch.from_numpy(input_ids), torch.from_numpy(mask.astype(np.int64))
