"""STS evaluation: Spearman correlation (x100) between cosine similarity and gold scores, the 'all' setting
(every pair of a file pooled together) that SBERT, SimCSE and PromptBERT report."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy.stats import spearmanr

from searchengine.evaluation.labelled_data import RatedPair

EmbedFunction = Callable[[Sequence[str]], np.ndarray]


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

