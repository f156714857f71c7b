"""STS evaluation: Spearman correlation (x100) between cosine similarity and gold scores, the 'all' setting
(every pair of a file pooled together) that SBERT, SimCSE and PromptBERT report."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from searchengine.errors import SearchEngineError
from searchengine.evaluation.labelled_data import RatedPair, read_scored_pairs

EmbedFunction = Callable[[Sequence[str]], np.ndarray]


def read_sts_pairs(path: Path, max_score: float = 5.0) -> list[RatedPair]:
    """The scored pairs of an STS file to correlate against, refused (one error naming the file) when every pair
    has the same gold score, one pair included: Spearman's correlation is then undefined, and it printed as nan."""
    pairs = read_scored_pairs(path, max_score)
    if len({pair.score for pair in pairs}) < 2:
        raise SearchEngineError(
            f"{path}: all {len(pairs)} pair(s) have the same gold score; a correlation needs pairs with at least two "
            "different scores"
        )
    return pairs


def sts_spearman(embed: EmbedFunction, pairs: Sequence[RatedPair]) -> float:
    """Spearman x 100 of cos(embed(first), embed(second)) against the gold scores.

    Each distinct sentence is embedded once."""
    texts = list(dict.fromkeys(text for pair in pairs for text in (pair.first, pair.second)))
    vectors = np.asarray(embed(texts), dtype=np.float64)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    row = {text: i for i, text in enumerate(texts)}
    first = vectors[[row[pair.first] for pair in pairs]]
    second = vectors[[row[pair.second] for pair in pairs]]
    cosines = (first * second).sum(axis=1)
    return float(spearmanr(cosines, [pair.score for pair in pairs]).statistic * 100)
