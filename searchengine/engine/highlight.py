"""Why a hit matched: the sentence (or sentences) of its passage nearest to the query, and the query's words in it.

- Sentences end where the passage splitter ends them (searchengine.encoding.passages.SENTENCE_END: `.`, `!`, `?`
  or `…`, closing quotes or brackets, then whitespace), so a snippet never starts where a passage could not.
  A well-kept sentence splitter (pysbd, syntok) knows abbreviations better, but costs a dependency and, for pysbd,
  about a millisecond a paragraph; what is chosen here is only what to show first.
- A sentence's nearness is the mode's: the share of the query's words it holds (keyword), its cosine to the query
  with the index's own encoder and whitening (dense), or the mean of the two, the cosine clipped at 0 (hybrid).
  Only the k hits shown are read, and at most MAX_EMBEDDED_SENTENCES sentences of each are embedded (those that
  hold the most query words, then the first), so a hit costs at most that many short encoder inputs; a hit of one
  sentence has nothing to choose and costs none, and a query none of whose hits has two costs no encoder call.
- A query's words are matched as the keyword index matches them (searchengine.engine.query_words).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from searchengine.encoding.passages import SENTENCE_END
from searchengine.engine.query_words import query_stems, stem, word_spans
from searchengine.engine.search import Hit
from searchengine.engine.snippets import DEFAULT_SNIPPET_CHARS, Highlight, Span

MAX_EMBEDDED_SENTENCES = 4
"""Sentences of one hit embedded at most (dense and hybrid), so that highlighting k hits costs at most 4k short
encoder inputs whatever the documents' size (docs/retrieval.md, "Snippets", measures 4 against 16)."""
SENTENCE_BATCH = 8
"""Texts a forward pass when embedding highlights' sentences. One call holds the query and up to 4 sentences of
each of k hits, of very different lengths, so one batch of 64 pads every text to the longest; sorted batches of 8
pad little and make the call much cheaper (measured in docs/retrieval.md#snippets-that-show-why-a-hit-matched)."""
MAX_SCANNED_CHARS = 100_000
"""Characters of a hit's passage searched for sentences: a whole long document is not read past this."""
MIN_SHOWN_CHARS = DEFAULT_SNIPPET_CHARS // 2
"""A chosen sentence shorter than this is shown with the sentences after it, up to this length."""

Embed = Callable[[list[str]], np.ndarray]
"""Texts to unit vectors in the index's space (the index's encoder, then its whitening)."""


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Characters [start, end) of each sentence of text[start:end] (leading and trailing whitespace left out), in
    order; the whole range when it holds one sentence."""
    end = len(text) if end is None else end
    stops = [match.end() for match in SENTENCE_END.finditer(text, start, end)] + [end]
    spans, begin = [], start
    for stop in stops:
        piece = text[begin:stop]
        stripped = piece.strip()
        if stripped:
            first = begin + len(piece) - len(piece.lstrip())
            spans.append((first, first + len(stripped)))
        begin = stop
    return spans


@dataclass(frozen=True)
class _Candidates:
    hit: Hit
    sentences: list[Span]
    shares: list[float]
    """The share of the query's distinct stems each sentence holds."""
    embedded: list[int]
    """Which sentences are embedded (dense and hybrid modes)."""


def with_highlights(
    queries: Sequence[str], results: list[list[Hit]], sides: Sequence[str], embed: Embed | None
) -> list[list[Hit]]:
    """Each hit with its `highlight`: the sentence(s) of its passage nearest to its query by the measure of the
    mode's `sides` (see the module's docstring) and the query's words there. `embed` is needed when the sides
    include dense; all the sentences of every query's hits are embedded in one call, with the queries."""
    stems = [query_stems(query) for query in queries]
    candidates = [[_candidates(hit, own) for hit in hits] for hits, own in zip(results, stems)]
    choices = any(candidate.embedded for hits in candidates for candidate in hits)
    cosines: list[list[np.ndarray]] = [[np.zeros(0) for _ in hits] for hits in results]
    if "dense" in sides and embed is not None and choices:
        texts = list(queries)
        for hits in candidates:
            for candidate in hits:
                texts += [candidate.hit.text[slice(*candidate.sentences[i])] for i in candidate.embedded]
        vectors = embed(texts)
        at = len(queries)
        for number, hits in enumerate(candidates):
            for position, candidate in enumerate(hits):
                rows = vectors[at : at + len(candidate.embedded)]
                at += len(candidate.embedded)
                cosines[number][position] = rows @ vectors[number]
    out = []
    for number, hits in enumerate(candidates):
        out.append(
            [
                replace(
                    candidate.hit,
                    highlight=_choose(candidate, cosines[number][position], "keyword" in sides, stems[number]),
                )
                for position, candidate in enumerate(hits)
            ]
        )
    return out


def _candidates(hit: Hit, stems: frozenset[str]) -> _Candidates:
    start, end = hit.span or (0, len(hit.text))
    sentences = sentence_spans(hit.text, start, min(end, start + MAX_SCANNED_CHARS)) or [(start, start)]
    shares = []
    for sentence in sentences:
        held = {stem(hit.text[s:e]) for s, e in word_spans(hit.text, stems, *sentence)}
        shares.append(len(held) / len(stems) if stems else 0.0)
    if len(sentences) == 1:  # nothing to choose: no sentence is embedded
        return _Candidates(hit, sentences, shares, [])
    order = sorted(range(len(sentences)), key=lambda i: (-shares[i], i))
    return _Candidates(hit, sentences, shares, sorted(order[:MAX_EMBEDDED_SENTENCES]))


def _choose(candidate: _Candidates, cosines: np.ndarray, words: bool, stems: frozenset[str]) -> Highlight:
    """The best sentence by the mode's measure (the cosine; with `words`, the share of the query's words too; ties:
    the first), widened to the sentences after it while the
    shown text is shorter than MIN_SHOWN_CHARS, with the query's words in it."""
    scores = list(candidate.shares)
    if len(cosines):
        by_cosine = dict(zip(candidate.embedded, map(float, cosines)))
        if not words:
            scores = [by_cosine.get(i, -1.0) for i in range(len(scores))]
        else:
            scores = [(max(0.0, by_cosine.get(i, 0.0)) + share) / 2 for i, share in enumerate(scores)]
    best = max(range(len(scores)), key=lambda i: (scores[i], -i))
    sentences = candidate.sentences
    start, end = sentences[best]
    following = best + 1
    while end - start < MIN_SHOWN_CHARS and following < len(sentences):
        end = sentences[following][1]
        following += 1
    return Highlight((start, end), tuple(word_spans(candidate.hit.text, stems, start, end)))
