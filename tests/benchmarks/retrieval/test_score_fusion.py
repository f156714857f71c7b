"""Smoke tests of benchmarks/retrieval/score_fusion.py and benchmarks/retrieval/snippets.py on two tiny BEIR-style sets: they run and
report every fusion's nDCG@10 and AUC, a --min-score threshold, and the snippets' quality; never their timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from searchengine.cli import app

REPOSITORY = Path(__file__).resolve().parents[3]


def _tiny_set(data: Path, texts: list[str], queries: list[str], prefix: str, tiny_model: Path) -> Path:
    data.mkdir(parents=True)
    (data / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"{prefix}d{n}", "text": text}) + "\n" for n, text in enumerate(texts)),
        encoding="utf-8",
    )
    (data / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"{prefix}q{n}", "text": text}) + "\n" for n, text in enumerate(queries)),
        encoding="utf-8",
    )
    rows = "".join(f"{prefix}q{n}\t{prefix}d{n}\t1\n" for n in range(len(queries)))
    (data / "qrels_test.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows, encoding="utf-8")
    index = data.parent.parent / f"{prefix}index"
    arguments = ["index", str(data / "corpus.jsonl"), "--id-field", "_id", "-d", str(index), "-m", str(tiny_model)]
    built = CliRunner().invoke(app, [*arguments, "-q"])
    assert built.exit_code == 0, built.output
    return index


def _run(script: str, *arguments: object) -> None:
    completed = subprocess.run(
        [sys.executable, str(REPOSITORY / "benchmarks" / "retrieval" / script), *map(str, arguments)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]


def test_score_fusion_and_snippets_run_on_two_tiny_sets(tmp_path: Path, tiny_model: Path, sentences: list[str]) -> None:
    pets = ["the cat sat on the mat. It slept there all day.", "a dog barked at the postman", "fish swim in a bowl"]
    pet_index = _tiny_set(
        tmp_path / "data" / "pets", pets, ["cat on a mat", "dog barking", "fish bowl"], "p", tiny_model
    )
    other = sentences[:6]
    other_index = _tiny_set(tmp_path / "data" / "misc", other, other[:3], "m", tiny_model)
    out = tmp_path / "fusion.json"
    _run("score_fusion.py", "--index", f"pets={pet_index}", "--index", f"misc={other_index}",
         "--data", tmp_path / "data", "--check", "1", "--out", out)  # fmt: skip
    results = json.loads(out.read_text(encoding="utf-8"))
    pets_tune = results["sets"]["pets"]["tune"]
    assert {"dense", "keyword bounded", "hybrid minmax w=0.5 (before)", "hybrid bounded w=0.5"} <= set(pets_tune)
    assert all(0 <= row["ndcg@10"] <= 1 and 0 <= row["auc"] <= 1 for row in pets_tune.values())
    assert results["sets"]["pets"]["check_default_fusion_equals_engine"] is True
    assert "threshold" in results["min_score"]["hybrid bounded w=0.5"]
    out = tmp_path / "snippets.json"
    _run("snippets.py", "--set", "pets", "--index", pet_index, "--data", tmp_path / "data", "--runs", "1", "--out", out)
    snippets = json.loads(out.read_text(encoding="utf-8"))
    assert set(snippets["modes"]) == {"dense", "keyword", "hybrid"}
    quality = snippets["modes"]["keyword"]["snippet_quality"]
    assert quality["after"]["relevant_hits"] == quality["before"]["relevant_hits"] > 0
