"""Each shard's term statistics kept between searches by the process that fans them out, under the number of the
shard's last acknowledged write (its sequence): while no write reaches the shard, its statistics for a word do not
change, so a keyword or hybrid search whose words every shard has already counted skips the statistics round (one
call to every shard) and still scores as one index does. A write moves the shard's sequence on, and what was kept
under the old one is dropped at the next keep."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace

from searchengine.indexer.query.global_bm25 import TermStatistics

MAX_KEPT_WORDS = 200_000
"""Words kept a shard; past it the shard's statistics start afresh (a bound on the ingress's memory)."""


class StatisticsCache:
    """Term statistics by shard, each kept with the sequence it was counted at."""

    def __init__(self, max_words: int = MAX_KEPT_WORDS) -> None:
        self.max_words = max_words
        self._lock = threading.Lock()
        self._kept: dict[int, tuple[int, TermStatistics]] = {}

    def known(self, shard: int, sequence: int, words: Sequence[str]) -> TermStatistics | None:
        """The shard's statistics for `words` at `sequence`, when every word was counted at that sequence; else
        None (the shard must be asked)."""
        with self._lock:
            entry = self._kept.get(shard)
        if entry is None or entry[0] != sequence or any(word not in entry[1].tokens_of for word in words):
            return None
        return _restricted(entry[1], words)

    def keep(self, shard: int, sequence: int, statistics: TermStatistics) -> None:
        """Keep the shard's `statistics`, counted at `sequence` with no write in between."""
        with self._lock:
            entry = self._kept.get(shard)
            if entry is not None and entry[0] == sequence and len(entry[1].tokens_of) < self.max_words:
                statistics = _joined(entry[1], statistics)
            self._kept[shard] = (sequence, statistics)


def _restricted(statistics: TermStatistics, words: Sequence[str]) -> TermStatistics:
    """`statistics` for `words` alone (the shard's counts are kept whole)."""
    tokens_of = {word: statistics.tokens_of[word] for word in words}
    tokens = {token for phrase in tokens_of.values() for token in phrase}
    return replace(
        statistics,
        tokens_of=tokens_of,
        token_documents={token: statistics.token_documents[token] for token in tokens},
        phrase_documents={word: statistics.phrase_documents[word] for word in words},
    )


def _joined(kept: TermStatistics, new: TermStatistics) -> TermStatistics:
    """One shard's statistics for the words of both, counted at the same sequence."""
    return replace(
        new,
        tokens_of={**kept.tokens_of, **new.tokens_of},
        token_documents={**kept.token_documents, **new.token_documents},
        phrase_documents={**kept.phrase_documents, **new.phrase_documents},
    )
