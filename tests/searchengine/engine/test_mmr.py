"""The mmr retrieval mode (searchengine.engine.mmr): maximal marginal relevance over the stored vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from searchengine import BuildSettings, SearchEngine, SearchEngineError
from searchengine.encoding.encoder import Encoder
from searchengine.engine.mmr import matched_vector_ids
from searchengine.engine.search import dense_rankings
from tests.conftest import SENTENCES


def test_mmr_picks_as_its_formula_says_and_takes_only_its_options(tmp_path: Path, tiny_encoder: Encoder) -> None:
    texts = [*SENTENCES, "the cat sat on the mat.", "a cat sat on the mat"]
    with SearchEngine.build(texts, tmp_path / "i", encoder=tiny_encoder) as engine:
        query = "the cat sat on a mat"
        dense = engine.search(query, k=8, mode="dense")
        assert [h.id for h in engine.search(query, k=8, mode="mmr", mode_options={"lambda_mult": 1})] == [
            h.id for h in dense
        ]
        picked = engine.search(query, k=4, mode="mmr", mode_options={"fetch_k": 8, "lambda_mult": 0.2})
        # the formula, step by step, over the 8 candidates' stored vectors
        ids, stored = next(engine.stored_vectors())
        vector = dict(zip(ids.tolist(), stored))
        q = engine.encode([query])[0]
        chosen: list[int] = []
        candidates = [h.id for h in dense]
        while len(chosen) < 4:
            def value(i: int) -> float:
                unlike = max((float(vector[i] @ vector[j]) for j in chosen), default=0.0)
                return 0.2 * float(vector[i] @ q) - 0.8 * unlike if chosen else float(vector[i] @ q)

            chosen.append(max((i for i in candidates if i not in chosen), key=value))
        assert [h.id for h in picked] == chosen
        by_vector = engine.search_by_vector(q, k=4, mmr={"fetch_k": 8, "lambda_mult": 0.2})
        assert [h.id for h in by_vector] == [h.id for h in picked]  # the query's own vector: the same picks
        assert [h.score for h in by_vector] == pytest.approx([h.score for h in picked], abs=1e-5)
        with pytest.raises(SearchEngineError, match="mode mmr takes fetch_k and lambda_mult, not depth"):
            engine.search_by_vector(q, mmr={"depth": 3})
        assert all(h.score == pytest.approx(float(vector[h.id] @ q), abs=1e-5) for h in picked)
        assert len(engine.search(query, k=3, mode="mmr", where=["line>=10"])) == 3
        for options, message in (
            ({"fetch_k": 0}, "fetch_k must be a whole number"),
            ({"lambda_mult": 1.5}, "lambda_mult must be a number from 0 to 1"),
            ({"depth": 3}, "mode mmr takes fetch_k and lambda_mult, not depth"),
        ):
            with pytest.raises(SearchEngineError, match=message):
                engine.search(query, mode="mmr", mode_options=options)
        with pytest.raises(SearchEngineError, match="mode dense takes no options"):
            engine.search(query, mode="dense", mode_options={"fetch_k": 3})
        with pytest.raises(SearchEngineError, match="add mode=NAME"):
            engine.search(query, mode_options={"fetch_k": 3})


def test_a_split_document_is_judged_by_the_passage_it_matched(tmp_path: Path, tiny_encoder: Encoder) -> None:
    """MMR compares a document split into passages by the vector of the passage that made it a candidate (its
    best, whose cosine is its score), not by its first passage's."""
    text = " ".join([SENTENCES[1]] * 30 + [SENTENCES[4]] * 30)  # cats first, then rockets: several passages
    settings = BuildSettings(passages=True)
    with SearchEngine.build([text, *SENTENCES], tmp_path / "i", settings, encoder=tiny_encoder) as engine:
        store, vectors = engine.reader.store, engine.reader.vectors
        assert store.passages.any()
        query = engine.encode([SENTENCES[4]])
        row = dense_rankings(vectors, store, query, 6)[0]
        split = next(scored for scored in row if scored.span is not None)
        assert split.span[0] > 0  # matched by a passage after its first
        used = vectors.reconstruct(matched_vector_ids(store, row))
        np.testing.assert_allclose(used @ query[0], [scored.score for scored in row], atol=1e-5)
        assert engine.search(SENTENCES[4], k=3, mode="mmr", mode_options={"lambda_mult": 0.3})
