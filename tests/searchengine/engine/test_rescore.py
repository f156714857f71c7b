"""`rescore` end to end: an index built with a compressed type (SQ8) keeps its originals, and a search through the
API, the CLI and its server request rescores from them; an exact index ignores it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from searchengine.cli import app
from searchengine.encoding.encoder import Encoder
from searchengine.engine.build_settings import BuildSettings
from searchengine.engine.search_engine import SearchEngine

TOPICS = ("garden", "kitchen", "rocket", "music")
TEXTS = [f"{word} {i} of the {topic} list" for i, topic in enumerate(TOPICS * 5) for word in ("alpha", "beta")]


def test_a_compressed_index_rescores_to_the_exact_indexes_hits(tmp_path: Path, tiny_encoder: Encoder) -> None:
    exact = SearchEngine.build(TEXTS, tmp_path / "flat", BuildSettings(index="Flat"), encoder=tiny_encoder)
    compressed = SearchEngine.build(
        TEXTS, tmp_path / "sq8", BuildSettings(index="SQ8", originals="float32"), encoder=tiny_encoder
    )
    assert len(list((tmp_path / "sq8").glob("segment.*.npy"))) == 1 and not list((tmp_path / "flat").glob("*.npy"))
    for query in ("rocket list", "gamma in the kitchen", "music"):
        expected = exact.search(query, 5, mode="dense")
        rescored = compressed.search(query, 5, mode="dense", rescore=20)
        assert [hit.id for hit in rescored] == [hit.id for hit in expected]  # float32 originals: the exact order
        assert np.allclose([hit.score for hit in rescored], [hit.score for hit in expected], atol=1e-5)
        assert [hit.id for hit in exact.search(query, 5, mode="dense", rescore=0)] == [hit.id for hit in expected]


def test_the_cli_builds_with_originals_and_queries_with_rescore(tmp_path: Path, tiny_model: Path) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    index = str(tmp_path / "index")
    runner = CliRunner()
    built = runner.invoke(app, ["index", str(corpus), "--index-dir", index, "--model", str(tiny_model), "--index",
                                "SQ8", "--originals", "float16", "--quiet"])
    assert built.exit_code == 0, built.output
    found = runner.invoke(app, ["query", "rocket list", "--index-dir", index, "--mode", "dense", "--rescore", "50",
                                "--json"])
    assert found.exit_code == 0, found.output
    assert len(json.loads(found.output)["hits"]) == 10
    refused = runner.invoke(app, ["index", str(corpus), "--index-dir", index, "--originals", "float8"])
    assert refused.exit_code != 0 and "originals must be float16 or float32" in refused.output
