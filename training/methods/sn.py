"""`searchengine train sn`: standard normalisation fitted on a corpus (training/fit_normalisation.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from searchengine.training.method import FitMethod


@dataclass(kw_only=True)
class SNFit(FitMethod):
    """Standard normalisation (x - mean) / std per dimension, saved as a Dense module of the model."""

    def run(self) -> Any:
        from searchengine.training.fit_normalisation import fit_sn

        return fit_sn(**self.arguments())
