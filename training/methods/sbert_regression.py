"""SBERT regression (Reimers & Gurevych 2019, §3): the mean squared error between cos(u, v) and the gold
similarity scaled to [0, 1]."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchengine.training.method import BiEncoderMethod
from searchengine.training.options import MAX_SCORE_HELP, SCORED_PAIRS_HELP, option

if TYPE_CHECKING:
    from searchengine.training.loop import LossFunction
    from searchengine.training.sentence_model import SentenceModel

    from searchengine.evaluation.labelled_data import RatedPair


@dataclass(kw_only=True)
class SBERTRegression(BiEncoderMethod):
    """SBERT regression: mean squared error between cos(u, v) and the score scaled to [0, 1].

    Example: searchengine train sbert-sts --data data/stsb/train.tsv --eval data/stsb/dev.tsv --out sts-model
    """

    data: Path = option(help=SCORED_PAIRS_HELP)
    batch_size: int = option(16, min=2)
    max_score: float = option(5.0, help=MAX_SCORE_HELP)

    report_name = "sbert-regression"

    def read(self) -> list[RatedPair]:
        """`score<TAB>sentence1<TAB>sentence2` rows with scores in [0, max_score]."""
        from searchengine.evaluation.labelled_data import read_scored_pairs

        return read_scored_pairs(self.data, self.max_score)

    def loss(self, model: SentenceModel) -> LossFunction:
        import torch
        from searchengine.training.objectives.cosine_regression import cosine_regression_loss

        def loss(batch: list[RatedPair]) -> torch.Tensor:
            u = model.embed_texts([pair.first for pair in batch])
            v = model.embed_texts([pair.second for pair in batch])
            return cosine_regression_loss(u, v, torch.tensor([pair.score for pair in batch], device=u.device))

        return loss

    def details(self, examples: list) -> dict[str, Any]:
        return {"data": str(self.data), "pairs": len(examples), "batch_size": self.batch_size}
