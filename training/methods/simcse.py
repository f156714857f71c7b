"""Unsupervised SimCSE (Gao et al. 2021): each sentence goes through the encoder twice; dropout alone makes the
two vectors differ, and InfoNCE with in-batch negatives pulls them together."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchengine.training.method import BiEncoderMethod
from searchengine.training.options import IN_BATCH_HELP, SENTENCES_HELP, TRUNCATE_HELP, option

if TYPE_CHECKING:
    import torch
    from searchengine.training.loop import LossFunction
    from searchengine.training.sentence_model import SentenceModel


@dataclass(kw_only=True)
class SimCSE(BiEncoderMethod):
    """Unsupervised SimCSE: the same sentence twice through dropout, InfoNCE with in-batch negatives.

    Example: searchengine train simcse --data data/unsup/wiki_sentences.txt.gz --eval data/stsb/dev.tsv --out simcse-model
    """

    data: Path = option(help=SENTENCES_HELP)
    batch_size: int = option(64, min=2, help=IN_BATCH_HELP)
    max_seq_length: int = option(32, min=8, help=TRUNCATE_HELP)
    temperature: float = option(0.05, min=1e-4)
    limit: int | None = option(None, min=2, help="Use only the first N sentences.")

    report_name = "simcse"

    def read(self) -> list[str]:
        """The sentences of a corpus file (one per line, or .jsonl)."""
        from searchengine.training.sentences import read_sentences

        return read_sentences(self.data, self.limit)

    def loss(self, model: SentenceModel) -> LossFunction:
        from searchengine.training.objectives.contrastive import info_nce

        def loss(batch: list[str]) -> torch.Tensor:
            first, second = model.embed_texts(batch + batch).chunk(2)  # one pass, two dropout masks
            return info_nce(first, second, self.temperature)

        return loss

    def details(self, examples: list) -> dict[str, Any]:
        return {
            "data": str(self.data),
            "sentences": len(examples),
            "batch_size": self.batch_size,
            "temperature": self.temperature,
        }
