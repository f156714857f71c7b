"""Mixed precision for training: the transformer's matrix products run in bf16 under torch's autocast where the
CPU computes bf16 natively, while weights, gradients, optimizer state and losses stay float32.

Measured with benchmarks/training/training_speed.py on 2 cores of an AMD EPYC Zen 4 (AVX512-BF16, no AMX): bf16 autocast
trains faster than fp32 at the same STS-B dev Spearman (docs/benchmarks.md, "Training speed"). A CPU without
native bf16 only emulates it, at a fraction of fp32's speed (searchengine.encoding.precision), so "auto" is fp32
there."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import torch

from searchengine.encoding.precision import CPUINFO, cpu_has_native_bf16
from searchengine.errors import SearchEngineError

TRAINING_PRECISIONS = ("auto", "fp32", "bf16")
Loss = TypeVar("Loss", bound=Callable[..., torch.Tensor])


def resolve_training_precision(precision: str, cpuinfo: Path = CPUINFO) -> str:
    """What `precision` means on this CPU, "fp32" or "bf16" ("auto": bf16 where the CPU has native bf16)."""
    if precision not in TRAINING_PRECISIONS:
        raise SearchEngineError(
            f"unknown training precision {precision!r}; choose one of {', '.join(TRAINING_PRECISIONS)}"
        )
    if precision == "auto":
        return "bf16" if cpu_has_native_bf16(cpuinfo) else "fp32"
    return precision


def autocast(precision: str) -> torch.autocast:
    """The autocast block a training step's forward pass runs in: bf16 for "bf16", a no-op for "fp32"."""
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")


def full_precision(loss: Loss) -> Loss:
    """`loss` computed in float32 even inside an autocast block: its tensor arguments are cast to float32 and autocast
    is off while it runs. A similarity matrix divided by a temperature of 0.05 would lose its small differences in
    bf16 (8 bits of mantissa)."""

    @functools.wraps(loss)
    def in_float32(*args: object, **kwargs: object) -> torch.Tensor:
        with torch.autocast("cpu", enabled=False):
            return loss(*map(_float32, args), **{name: _float32(value) for name, value in kwargs.items()})

    return in_float32  # type: ignore[return-value]


def _float32(value: object) -> object:
    return value.float() if isinstance(value, torch.Tensor) and value.is_floating_point() else value
