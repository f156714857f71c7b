"""Pseudo-queries: contrastive query -> passage training on a corpus that has no queries. Each document gives one
pair: its title (a metadata field, when the corpus has one) or else its first sentence stands in for a query,
and the rest of the document is the passage it must find among the batch's other passages (InfoNCE with
in-batch negatives: MultipleNegativesRankingLoss at scale 1 / temperature). No query generator is needed; the
price is that a title or lead sentence is not how users ask."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchengine.training.method import BiEncoderMethod
from searchengine.training.options import TRUNCATE_HELP, option

from searchengine.errors import SearchEngineError

if TYPE_CHECKING:
    import torch
    from searchengine.training.loop import LossFunction
    from searchengine.training.sentence_model import SentenceModel

SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
"""Where a sentence ends: . ! or ? and white space before a capital, a digit or an opening quote or bracket."""
MIN_QUERY_WORDS = 3
MIN_PASSAGE_WORDS = 8


@dataclass(frozen=True)
class QueryPassage:
    query: str
    passage: str


def pseudo_query(text: str, title: str | None = None) -> QueryPassage | None:
    """The pair one document gives, or None when it has no usable query or passage.

    With a title: the title, and the text less the title where the text starts with it (a document indexed as
    title + " " + text). Without: the first sentence (of MIN_QUERY_WORDS words at least), and the sentences after
    it. The passage needs MIN_PASSAGE_WORDS words."""
    text = text.strip()
    if title and title.strip():
        query = title.strip()
        passage = text[len(query) :].strip() if text.startswith(query) else text
    else:
        parts = SENTENCE_END.split(text, maxsplit=1)
        if len(parts) < 2:
            return None
        query, passage = parts[0].strip(), parts[1].strip()
        if len(query.split()) < MIN_QUERY_WORDS:
            return None
    if len(passage.split()) < MIN_PASSAGE_WORDS:
        return None
    return QueryPassage(query, passage)


def read_pseudo_queries(path: Path, query_field: str | None = None, limit: int | None = None) -> list[QueryPassage]:
    """The pairs of a corpus file (.txt or .jsonl, gzipped or not); `query_field` names the metadata field holding
    each document's title (a document without one falls back to its first sentence)."""
    from searchengine.reading.corpus import read_corpus

    pairs = []
    for document in read_corpus(Path(path)):
        title = document.metadata.get(query_field) if query_field else None
        pair = pseudo_query(document.text, title if isinstance(title, str) else None)
        if pair is not None:
            pairs.append(pair)
            if limit is not None and len(pairs) >= limit:
                break
    if len(pairs) < 2:
        raise SearchEngineError(
            f"{path}: {len(pairs)} document(s) give a pseudo-query (a title or a first sentence of {MIN_QUERY_WORDS} "
            f"words or more, then {MIN_PASSAGE_WORDS} words or more); contrastive training needs 2"
        )
    return pairs


@dataclass(kw_only=True)
class PseudoQueries(BiEncoderMethod):
    """Pseudo-queries: each document's title (--query-field) or first sentence is a query for the rest of it;
    InfoNCE with in-batch negatives (MultipleNegativesRankingLoss). Adapts a model to a corpus without queries.

    Example: searchengine train pseudo-queries --data data/retrieval/nfcorpus/corpus.jsonl --query-field title --out pq-model
    """

    data: Path = option(help='Documents: .txt (one per line) or .jsonl (a "text" field, the rest metadata), or .gz.')
    query_field: str | None = option(
        None, help="A .jsonl field holding each document's title, the query (without it: the first sentence)."
    )
    batch_size: int = option(16, min=2, help="Pairs per batch (in-batch negatives).")
    max_seq_length: int = option(128, min=8, help=TRUNCATE_HELP)
    temperature: float = option(0.05, min=1e-4)
    limit: int | None = option(None, min=2, help="Use only the first N documents that give a pair.")

    report_name = "pseudo-queries"

    def read(self) -> list[QueryPassage]:
        """The (pseudo-query, passage) pairs of a corpus file."""
        return read_pseudo_queries(self.data, self.query_field, self.limit)

    def loss(self, model: SentenceModel) -> LossFunction:
        from searchengine.training.objectives.contrastive import info_nce

        def loss(batch: list[QueryPassage]) -> torch.Tensor:
            queries = model.embed_texts([pair.query for pair in batch])
            passages = model.embed_texts([pair.passage for pair in batch])
            return info_nce(queries, passages, self.temperature)

        return loss

    def details(self, examples: list) -> dict[str, Any]:
        return {
            "data": str(self.data),
            "query_field": self.query_field,
            "pairs": len(examples),
            "batch_size": self.batch_size,
            "temperature": self.temperature,
        }
