"""Cross-encoder (SBERT's cross-encoder recipe): both sentences in one pass through the transformer, a new
one-output regression head on its [CLS] vector (transformers' sequence-classification head), trained on scored
pairs with binary cross-entropy on the logit against the gold score scaled to [0, 1]: sentence-transformers'
default loss for one-label cross-encoders (BinaryCrossEntropyLoss), so sigmoid(logit) estimates the score.

The model is saved as a Hugging Face sequence-classification directory whose config.json names the sigmoid
activation the way sentence-transformers v4-v5 write it, which `transformers.AutoModelForSequenceClassification`,
`sentence_transformers.CrossEncoder` and `searchengine.encoding.cross_encoder.CrossEncoder` all load."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from scipy.stats import spearmanr
from searchengine.training.loop import TrainingReport, TrainingSettings, cycle, seed_everything, train

from searchengine.encoding.cross_encoder import SIGMOID, score_pairs
from searchengine.encoding.hf_loading import load_pretrained
from searchengine.encoding.model_source import locate_model
from searchengine.evaluation.labelled_data import RatedPair, read_scored_pairs


class CrossEncoderModel(torch.nn.Module):
    """A sequence-classification transformer with one output, its tokenizer, and save()."""

    def __init__(self, base: str | Path = "default", max_seq_length: int = 256) -> None:
        super().__init__()
        self.source = locate_model(base)
        # A bi-encoder or plain transformer gets a new (seeded) head; a one-output cross-encoder keeps its own.
        self.tokenizer, self.transformer = load_pretrained(
            self.source.transformer_path,
            "the base model",
            "AutoModelForSequenceClassification",
            num_labels=1,
            ignore_mismatched_sizes=True,
        )
        self.max_seq_length = min(max_seq_length, self.transformer.config.max_position_embeddings)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def logits(self, pairs: list[tuple[str, str]]) -> torch.Tensor:
        """(batch,) logits with gradients."""
        features = self.tokenizer(
            [first for first, _ in pairs],
            [second for _, second in pairs],
            truncation="longest_first",
            max_length=self.max_seq_length,
            padding=True,
            return_tensors="pt",
        )
        return self.transformer(**{key: value.to(self.device) for key, value in features.items()}).logits[:, 0]

    def predict(self, pairs: list[tuple[str, str]], batch_size: int = 64) -> torch.Tensor:
        """Eval-mode sigmoid scores, without gradients."""
        logits = score_pairs(self.transformer, self.tokenizer, pairs, self.max_seq_length, batch_size, self.device)
        return torch.sigmoid(torch.from_numpy(logits))

    def save(self, directory: Path) -> None:
        """A Hugging Face directory; config.json says (for sentence-transformers) that scores are sigmoid(logit),
        and the tokenizer truncates at the length the model was trained with."""
        config = self.transformer.config
        config.sentence_transformers = {"activation_fn": SIGMOID, "version": "searchengine"}
        config.id2label, config.label2id = {0: "LABEL_0"}, {"LABEL_0": 0}
        self.transformer.save_pretrained(directory, safe_serialization=True)
        self.tokenizer.model_max_length = self.max_seq_length
        self.tokenizer.save_pretrained(directory)


def pair_spearman(score: Callable[[list[tuple[str, str]]], object], pairs: list[RatedPair]) -> float:
    """Spearman x 100 between the predicted scores of the pairs and their gold scores."""
    predicted = [float(value) for value in score([(pair.first, pair.second) for pair in pairs])]
    return float(spearmanr(predicted, [pair.score for pair in pairs]).statistic * 100)


def train_cross_encoder(
    *,
    base: str | Path,
    data: Path,
    out: Path | None,
    settings: TrainingSettings,
    eval_file: Path | None = None,
    batch_size: int = 16,
    max_seq_length: int = 256,
    max_score: float = 5.0,
    both_orders: bool = True,
) -> TrainingReport:
    """Train a cross-encoder on `score<TAB>sentence1<TAB>sentence2` rows with scores in [0, max_score].

    base: a bi-encoder or Hugging Face model directory or Hub id ("default": the bundled MiniLM), whose
    transformer gets a new one-output head; or a one-output cross-encoder to train further. both_orders: train
    on (a, b) and (b, a), as SBERT's STS-B cross-encoder example does, so the score does not depend on the order.
    eval_file scores: Spearman x 100 of the predicted scores against the gold ones."""
    pairs = read_scored_pairs(data, max_score)
    if both_orders:
        pairs = pairs + [RatedPair(pair.second, pair.first, pair.score) for pair in pairs]
    dev = read_scored_pairs(eval_file, max_score) if eval_file is not None else None
    seed_everything(settings.seed)
    model = CrossEncoderModel(base, max_seq_length)
    bce = torch.nn.BCEWithLogitsLoss()

    def loss(batch: list[RatedPair]) -> torch.Tensor:
        logits = model.logits([(pair.first, pair.second) for pair in batch]).float()  # bf16 under autocast
        return bce(logits, torch.tensor([pair.score for pair in batch], device=logits.device))

    evaluate = (lambda: pair_spearman(model.predict, dev)) if dev is not None and out is not None else None
    return train(
        "cross-encoder",
        model,
        loss,
        cycle(pairs, batch_size, settings.seed),
        settings,
        out,
        save=model.save,
        evaluate=evaluate,
        texts_per_batch=lambda batch: 2 * len(batch),
        details={
            "base": model.source.name,
            "data": str(data),
            "pairs": len(pairs),
            "both_orders": both_orders,
            "batch_size": batch_size,
            "max_seq_length": model.max_seq_length,
            "loss": "BCEWithLogits(logit, gold / max_score)",
            "activation": SIGMOID,
            "eval": "Spearman x 100 of sigmoid(logit) vs gold" if dev is not None else None,
        },
    )
