"""What every training loop run is told: steps, learning rate, evaluation cadence, seed. A plain dataclass in a
module that imports no torch, so the command line can build it before any training code loads."""

from __future__ import annotations

from dataclasses import dataclass


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
