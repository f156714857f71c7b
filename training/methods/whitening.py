"""`searchengine train whitening`: BERT-whitening(-k) fitted on a corpus (training/fit_whitening.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from searchengine.training.method import FitMethod
from searchengine.training.options import option


@dataclass(kw_only=True)
class WhiteningFit(FitMethod):
    """BERT-whitening(-k), the same fit as `index --whiten-k`, saved as a Dense module of the model."""

    k: int | None = option(
        None, help="Dimensions to keep (whitening-k) [default: every direction the embeddings span]."
    )

    def run(self) -> Any:
        from searchengine.training.fit_whitening import fit_whitening

        return fit_whitening(**self.arguments())
