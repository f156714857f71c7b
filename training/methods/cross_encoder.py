"""Cross-encoder (SBERT's cross-encoder recipe): both sentences in one pass through the transformer, a new
one-output regression head on its [CLS] vector (transformers' sequence-classification head), trained on scored
pairs with binary cross-entropy on the logit against the gold score scaled to [0, 1]: sentence-transformers'
default loss for one-label cross-encoders (BinaryCrossEntropyLoss), so sigmoid(logit) estimates the score.

The model is saved as a Hugging Face sequence-classification directory whose config.json names the sigmoid
activation the way sentence-transformers v4-v5 write it, which `transformers.AutoModelForSequenceClassification`,
`sentence_transformers.CrossEncoder` and `searchengine.encoding.cross_encoder.CrossEncoder` all load."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchengine.training.method import TrainingMethod
from searchengine.training.options import MAX_SCORE_HELP, SCORED_PAIRS_HELP, option

if TYPE_CHECKING:
    import torch
    from searchengine.training.cross_encoder_model import CrossEncoderModel
    from searchengine.training.loop import LossFunction

    from searchengine.evaluation.labelled_data import RatedPair


@dataclass(kw_only=True)
class CrossEncoderTraining(TrainingMethod):
    """Cross-encoder: both sentences in one pass, a new one-output head on the base's transformer, trained with
    binary cross-entropy against the score scaled to [0, 1]; scores are sigmoid(logit). --eval reports Spearman
    x 100 of its scores. The model loads in `searchengine query --rerank`, transformers and sentence-transformers.

    Example: searchengine train cross-encoder --data data/stsb/train.tsv --eval data/stsb/dev.tsv --out ce-model
    """

    data: Path = option(help=SCORED_PAIRS_HELP)
    batch_size: int = option(16, min=1, help="Pairs per batch.")
    max_seq_length: int = option(256, min=8, help="Truncate each pair (both sentences together) to this many tokens.")
    max_score: float = option(5.0, help=MAX_SCORE_HELP)
    both_orders: bool = option(
        True, flag="--both-orders/--one-order", help="Train on (a, b) and (b, a), so the score ignores the order."
    )

    report_name = "cross-encoder"

    def read(self) -> list[RatedPair]:
        """`score<TAB>sentence1<TAB>sentence2` rows with scores in [0, max_score]; with both_orders, each pair
        also reversed, as SBERT's STS-B cross-encoder example does, so the score does not depend on the order."""
        from searchengine.evaluation.labelled_data import RatedPair, read_scored_pairs

        pairs = read_scored_pairs(self.data, self.max_score)
        if self.both_orders:
            pairs = pairs + [RatedPair(pair.second, pair.first, pair.score) for pair in pairs]
        return pairs

    def load_model(self) -> CrossEncoderModel:
        """The base's transformer with a new one-output head (a bi-encoder, Hugging Face model or Hub id), or a
        one-output cross-encoder to train further."""
        from searchengine.training.cross_encoder_model import CrossEncoderModel

        return CrossEncoderModel(self.base, self.max_seq_length)

    def loss(self, model: CrossEncoderModel) -> LossFunction:
        import torch

        bce = torch.nn.BCEWithLogitsLoss()

        def loss(batch: list[RatedPair]) -> torch.Tensor:
            logits = model.logits([(pair.first, pair.second) for pair in batch]).float()  # bf16 under autocast
            return bce(logits, torch.tensor([pair.score for pair in batch], device=logits.device))

        return loss

    def evaluator(self, model: CrossEncoderModel) -> Callable[[], float] | None:
        """Spearman x 100 of the predicted scores on the eval file against the gold ones."""
        if self.eval_file is None:
            return None
        from searchengine.training.cross_encoder_model import pair_spearman

        from searchengine.evaluation.sts import read_sts_pairs

        dev = read_sts_pairs(self.eval_file, self.max_score)
        return lambda: pair_spearman(model.predict, dev)

    def log_details(self, model: CrossEncoderModel, examples: list) -> dict[str, Any]:
        from searchengine.encoding.cross_encoder import SIGMOID

        return {
            "base": model.source.name,
            "data": str(self.data),
            "pairs": len(examples),
            "both_orders": self.both_orders,
            "batch_size": self.batch_size,
            "max_seq_length": model.max_seq_length,
            "loss": "BCEWithLogits(logit, gold / max_score)",
            "activation": SIGMOID,
            "eval": "Spearman x 100 of sigmoid(logit) vs gold" if self.eval_file is not None else None,
        }
