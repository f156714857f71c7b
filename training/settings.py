"""What every training loop run is told: steps, learning rate, evaluation cadence, seed, precision, threads. A
plain dataclass in a module that imports no torch, so the command line can build it before any training code
loads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

TrainingPrecision = Literal["auto", "fp32", "bf16"]
"""auto: bf16 autocast on a CPU with native bf16 (measured faster at the same quality), fp32 elsewhere."""


@dataclass
class TrainingSettings:
    steps: int = 500
    """Optimizer steps (batches) to run."""
    learning_rate: float = 2e-5
    warmup: float = 0.1
    """Fraction of the steps with a linearly rising learning rate."""
    eval_every: int = 100
    """Evaluate (or, without an evaluation, save) every this many steps and at the end."""
    seed: int = 0
    max_grad_norm: float = 1.0
    progress: bool = True
    precision: TrainingPrecision = "auto"
    """The forward pass's precision (training/precision.py); weights, gradients and losses stay float32."""
    threads: int | None = None
    """torch threads while training; None: OMP_NUM_THREADS if set, else every core this process may use
    (training/threads.py)."""
