"""`searchengine train flow`: BERT-flow trained on a corpus's embeddings (training/fit_flow.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from searchengine.training.method import FitMethod
from searchengine.training.options import SEED_HELP, option


@dataclass(kw_only=True)
class FlowFit(FitMethod):
    """BERT-flow: an invertible flow trained by maximum likelihood on the frozen encoder's embeddings, which
    are then mapped to its Gaussian latent."""

    epochs: int = option(10, help="Passes over the corpus embeddings.")
    learning_rate: float = option(1e-3, flag="--lr", help="Adam learning rate.")
    blocks: int = option(8, help="Flow blocks (actnorm, permutation, additive coupling).")
    hidden: int = option(256, help="Hidden units of each coupling layer's network.")
    batch_size: int = option(256, help="Embeddings per optimisation step.")
    seed: int = option(0, help=SEED_HELP)

    def run(self) -> Any:
        from searchengine.training.fit_flow import fit_flow

        return fit_flow(**self.arguments())
