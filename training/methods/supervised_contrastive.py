"""Supervised contrastive learning with hard negatives (supervised SimCSE, Gao et al. 2021) on NLI triplets:
the premise must pick its entailment among every entailment and every contradiction in the batch."""

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
class SupervisedContrastive(BiEncoderMethod):
    """Supervised contrastive learning with hard negatives (supervised SimCSE) on NLI triplets.

    Example: searchengine train supervised-contrastive --data data/nli/triplets.tsv.gz --eval data/stsb/dev.tsv --out supcon-model
    """

    data: Path = option(help="NLI triplets: anchor<TAB>positive<TAB>negative (premise, entailment, contradiction).")
    batch_size: int = option(32, min=2)
    temperature: float = option(0.05, min=1e-4)

    report_name = "supervised-contrastive"
    texts_per_example = 3

    def read(self) -> list[Triplet]:
        """`anchor<TAB>positive<TAB>negative` rows (premise, entailment, contradiction)."""
        from searchengine.evaluation.labelled_data import read_triplets

        return read_triplets(self.data)

    def loss(self, model: SentenceModel) -> LossFunction:
        from searchengine.training.objectives.contrastive import info_nce

        def loss(batch: list[Triplet]) -> torch.Tensor:
            anchor, positive, negative = model.embed_triplets(batch)
            return info_nce(anchor, positive, self.temperature, hard_negatives=negative)

        return loss

    def details(self, examples: list) -> dict[str, Any]:
        return {
            "data": str(self.data),
            "triplets": len(examples),
            "batch_size": self.batch_size,
            "temperature": self.temperature,
        }
