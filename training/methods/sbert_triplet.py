"""SBERT triplet objective (Reimers & Gurevych 2019, §3): max(||a - p|| - ||a - n|| + margin, 0), Euclidean."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchengine.training.method import BiEncoderMethod
from searchengine.training.options import option

if TYPE_CHECKING:
    import torch
    from searchengine.training.loop import LossFunction
    from searchengine.training.sentence_model import SentenceModel

    from searchengine.evaluation.labelled_data import Triplet


@dataclass(kw_only=True)
class SBERTTriplet(BiEncoderMethod):
    """SBERT triplet objective: max(||a - p|| - ||a - n|| + margin, 0).

    Example: searchengine train sbert-triplet --data data/nli/triplets.tsv.gz --eval data/stsb/dev.tsv --out triplet-model
    """

    data: Path = option(help="Triplets: anchor<TAB>positive<TAB>negative.")
    batch_size: int = option(16, min=2)
    margin: float = option(1.0, min=0.0, help="Euclidean margin epsilon.")

    report_name = "sbert-triplet"
    texts_per_example = 3

    def read(self) -> list[Triplet]:
        """`anchor<TAB>positive<TAB>negative` rows."""
        from searchengine.evaluation.labelled_data import read_triplets

        return read_triplets(self.data)

    def loss(self, model: SentenceModel) -> LossFunction:
        from searchengine.training.objectives.triplet import triplet_loss

        def loss(batch: list[Triplet]) -> torch.Tensor:
            anchor, positive, negative = model.embed_triplets(batch)
            return triplet_loss(anchor, positive, negative, self.margin)

        return loss

    def details(self, examples: list) -> dict[str, Any]:
        return {"data": str(self.data), "triplets": len(examples), "batch_size": self.batch_size, "margin": self.margin}
