"""Why a hit matched: sentences split as passages are, the sentence nearest to the query by each mode's measure,
and the query's words as character spans into the document's text."""

from __future__ import annotations

from pathlib import Path

import pytest
from searchengine.indexer.tables.store import Document

from searchengine import SearchEngine
from searchengine.encoding.encoder import Encoder
from searchengine.engine.highlight import MAX_EMBEDDED_SENTENCES, MIN_SHOWN_CHARS, sentence_spans
from searchengine.engine.query_words import query_stems, word_spans

LONG = (
    "Wheels need care before a long ride on rough roads and gravel paths. "
    "Every cyclist should carry a pump and tyre levers in the saddle bag. "
    "To fix a puncture, remove the inner tube and patch the small hole carefully. "
    "Chains need oil after rain, or they rust within a week of wet weather."
)


@pytest.fixture
def engine(tmp_path: Path, tiny_encoder: Encoder) -> SearchEngine:
    documents = [
        Document(LONG, external_id="bike"),
        Document("Stock prices fell as the market rate rose.", external_id="stock"),
        Document("Bake the bread in a hot oven. Let it cool.", external_id="bread"),
    ]
    return SearchEngine.build(documents, tmp_path / "idx", encoder=tiny_encoder)


def _sentences(text: str) -> list[str]:
    return [text[start:end] for start, end in sentence_spans(text)]


def test_sentences_end_where_the_passage_splitter_ends_them() -> None:
    assert _sentences("One. Two! Three? Four… five") == ["One.", "Two!", "Three?", "Four…", "five"]
    assert _sentences('  He said "stop." Then left.  ') == ['He said "stop."', "Then left."]
    assert _sentences("version 3.11 is out") == ["version 3.11 is out"]  # no space after the dot: no end
    assert sentence_spans("a. b", 3) == [(3, 4)] and sentence_spans("   ") == []


def test_query_words_match_as_the_keyword_index_stems_them() -> None:
    stems = query_stems("Fixing the punctures")
    text = "He fixed a puncture; the fix held. Café FIXES"
    assert [text[s:e] for s, e in word_spans(text, stems)] == ["fixed", "puncture", "fix", "FIXES"]
    assert "the" not in {text[s:e] for s, e in word_spans(text, stems)}  # a stop word, with other words there
    assert word_spans("to be or not", query_stems("to be")) == [(0, 2), (3, 5)]  # a query of nothing else keeps them
    assert word_spans("café", query_stems("cafe")) == [(0, 4)]  # diacritics folded as FTS5's unicode61 folds them
    assert word_spans("anything", frozenset()) == []


def test_keyword_mode_shows_the_sentence_holding_the_query_words(engine: SearchEngine) -> None:
    hit = engine.search("puncture hole", k=1, mode="keyword", highlight=True)[0]
    start, end = hit.highlight.span  # the sentence, and the next one: it is shorter than MIN_SHOWN_CHARS
    assert hit.text[start:end].startswith("To fix a puncture") and hit.text[start:end].endswith("wet weather.")
    assert [hit.text[s:e] for s, e in hit.highlight.words] == ["puncture", "hole"]
    assert hit.snippet(200).startswith("…To fix a puncture")  # the text before it is left out, and said so


def test_dense_mode_shows_the_sentence_nearest_by_the_index_encoder(engine: SearchEngine) -> None:
    sentence = "Every cyclist should carry a pump and tyre levers in the saddle bag."
    hit = next(h for h in engine.search(sentence, k=3, mode="dense", highlight=True) if h.external_id == "bike")
    assert hit.text[slice(*hit.highlight.span)].startswith(sentence)  # cosine 1 with itself, whatever the model knows
    shown = [hit.text[s:e] for s, e in hit.highlight.words]
    assert shown == "Every cyclist should carry pump tyre levers saddle bag".split()  # less a, and, in, the


def test_hybrid_mode_weighs_both_and_every_hit_gets_a_highlight(engine: SearchEngine) -> None:
    hits = engine.search("oil the chains after rain", k=3, mode="hybrid", highlight=True)
    bike = next(hit for hit in hits if hit.external_id == "bike")
    assert bike.text[slice(*bike.highlight.span)].startswith("Chains need oil after rain")
    assert all(hit.highlight is not None for hit in hits)
    assert all(hit.highlight is None for hit in engine.search("oil the chains", k=3))  # only when asked for


def test_a_short_sentence_is_shown_with_the_ones_after_it(engine: SearchEngine) -> None:
    hit = engine.search("bread oven", k=1, mode="keyword", highlight=True)[0]
    assert hit.text[slice(*hit.highlight.span)] == "Bake the bread in a hot oven. Let it cool."  # both, under 100
    assert MIN_SHOWN_CHARS > len(hit.text)


def test_a_hit_with_many_sentences_embeds_only_the_most_promising(tmp_path: Path, tiny_encoder: Encoder) -> None:
    sentences = [f"Filler sentence number {i} about nothing much." for i in range(3 * MAX_EMBEDDED_SENTENCES)]
    sentences[-1] = "The rare zeppelin landed."
    engine = SearchEngine.build([" ".join(sentences)], tmp_path / "idx", encoder=tiny_encoder)
    calls = []
    embed = engine.reader._embed_sentences
    engine.reader._embed_sentences = lambda texts: calls.append(len(texts)) or embed(texts)
    hit = engine.search("zeppelin", k=1, mode="hybrid", highlight=True)[0]
    assert calls == [1 + MAX_EMBEDDED_SENTENCES]  # the query and 4 of the 12 sentences, in one call
    assert hit.text[slice(*hit.highlight.span)] == "The rare zeppelin landed."  # it holds the word: embedded


def test_hits_of_one_sentence_cost_no_encoder_call(tmp_path: Path, tiny_encoder: Encoder) -> None:
    lines = ["Stock prices fell as the market rate rose.", "Bake the bread in a hot oven!", "A zeppelin landed."]
    engine = SearchEngine.build(lines, tmp_path / "idx", encoder=tiny_encoder)
    calls = []
    embed = engine.reader._embed_sentences
    engine.reader._embed_sentences = lambda texts: calls.append(len(texts)) or embed(texts)
    for mode in ("dense", "hybrid"):
        for hits in engine.search_batch(["zeppelin landed", "bread"], k=3, mode=mode, highlight=True):
            assert len(hits) == 3
            assert all(hit.highlight.span == (0, len(hit.text)) for hit in hits)  # nothing to choose: all of it
    assert calls == []  # so nothing was embedded, not even the queries again


def test_a_reranked_or_filtered_empty_result_has_nothing_to_highlight(engine: SearchEngine) -> None:
    assert engine.search("puncture", k=3, mode="keyword", min_score=1.01, highlight=True) == []
