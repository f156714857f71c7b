"""SBERT on NLI (Reimers & Gurevych 2019, §3): a siamese encoder whose (u, v, |u - v|) feeds a 3-way softmax
classifier trained with cross-entropy; the classifier is dropped, the encoder kept."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchengine.training.method import BiEncoderMethod
from searchengine.training.options import option

if TYPE_CHECKING:
    from searchengine.training.objectives.softmax_classification import SoftmaxLoss
    from searchengine.training.sentence_model import SentenceModel

    from searchengine.evaluation.labelled_data import LabelledPair


@dataclass(kw_only=True)
class SBERTClassification(BiEncoderMethod):
    """SBERT classification: softmax over (u, v, |u - v|) with the 3 NLI labels.

    Example: searchengine train sbert-nli --data data/nli/train.tsv.gz --eval data/stsb/dev.tsv --out nli-model
    """

    data: Path = option(help="NLI pairs: premise<TAB>hypothesis<TAB>label (.tsv or .tsv.gz).")
    batch_size: int = option(16, min=2)

    report_name = "sbert-classification"

    def read(self) -> list[LabelledPair]:
        """`premise<TAB>hypothesis<TAB>label` rows."""
        from searchengine.evaluation.labelled_data import read_labelled_pairs

        return read_labelled_pairs(self.data)

    def loss(self, model: SentenceModel) -> SoftmaxLoss:
        from searchengine.training.objectives.softmax_classification import SoftmaxLoss

        return SoftmaxLoss(model.embed_texts, model.dimension)

    def details(self, examples: list) -> dict[str, Any]:
        return {"data": str(self.data), "pairs": len(examples), "batch_size": self.batch_size}
