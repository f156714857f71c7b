"""A trainable cross-encoder: a sequence-classification transformer with one output and its tokenizer, saved as a
Hugging Face directory whose config.json names the sigmoid activation the way sentence-transformers v4-v5 write
it; and the Spearman of its scores on rated pairs (the cross-encoder method's evaluation)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from scipy.stats import spearmanr

from searchengine.encoding.cross_encoder import SIGMOID, score_pairs
from searchengine.encoding.hf_loading import load_pretrained
from searchengine.encoding.model_source import locate_model
from searchengine.evaluation.labelled_data import RatedPair


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
