"""`searchengine train natsv`: the top singular directions of a corpus nulled (training/fit_normalisation.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from searchengine.training.method import FitMethod
from searchengine.training.options import option


@dataclass(kw_only=True)
class NATSVFit(FitMethod):
    """NATSV: null the top-k singular directions of the corpus embeddings, saved as a Dense module of the model."""

    k: int = option(1, help="Top singular directions to null.")
    centre: bool = option(False, help="Subtract the corpus mean first (all-but-the-top).")

    def run(self) -> Any:
        from searchengine.training.fit_normalisation import fit_natsv

        return fit_natsv(**self.arguments())
