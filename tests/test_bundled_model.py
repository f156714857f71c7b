"""Integration tests on the bundled all-MiniLM-L6-v2: parity with sentence-transformers and real retrieval."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from searchengine import Encoder, SearchEngine

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).parent / "fixtures" / "minilm_reference.npz"


@pytest.fixture(scope="module")
def minilm() -> Encoder:
    return Encoder(precision="fp32")  # the reference is fp32; auto may pick bf16


def test_embeddings_match_sentence_transformers(minilm: Encoder) -> None:
    """Reference vectors were computed once with sentence-transformers (tests/fixtures/make_minilm_reference.py)."""
    reference = np.load(FIXTURE)
    ours = minilm.encode([str(s) for s in reference["sentences"]], batch_size=5)
    assert np.abs(ours - reference["vectors"]).max() < 1e-5


def test_sample_corpus_answers_the_readme_query(minilm: Encoder, tmp_path: Path) -> None:
    engine = SearchEngine.build(ROOT / "examples" / "corpus.txt", tmp_path / "demo", encoder=minilm)
    dense = [hit.text.lower() for hit in engine.search("how do I reset my password", k=3, mode="dense")]
    assert "password" in dense[0] and "password" in dense[1], dense
    # Hybrid (the default) finds the same three, as the README shows: the keyword side lifts the one that shares
    # "how do I ... my" with the query.
    hybrid = [hit.text.lower() for hit in engine.search("how do I reset my password", k=3)]
    assert sorted(hybrid) == sorted(dense), (hybrid, dense)
    assert all(re.search(r"password|login|account", text) for text in hybrid), hybrid
    # The README's --min-score example: gibberish scores low in bounded fusion and gets nothing at 0.35, while
    # the real question keeps its hits (docs/retrieval.md, "Scores that mean the same for every query").
    assert engine.search("zzzxqv qqq", k=3, min_score=0.35) == []
    assert len(engine.search("how do I reset my password", k=3, min_score=0.35)) == 3
    assert "puncture" in engine.search("bicycle puncture", k=1, highlight=True)[0].snippet()


def test_readme_commands_are_the_ones_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    commands = re.findall(r"```(?:bash|sh)?\n(.*?)\n```", readme, flags=re.S)
    assert commands[1].strip() == ci
    assert "searchengine index docs/ -d docs-index" in commands[0]
