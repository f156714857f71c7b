"""Smoke test of benchmarks/retrieval/retrieval_modes.py on a tiny BEIR-style set: it runs and reports every mode for every
index; never its timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from searchengine.cli import app

REPOSITORY = Path(__file__).resolve().parents[3]


def test_retrieval_modes_runs_on_a_tiny_set(tmp_path: Path, tiny_model: Path, sentences: list[str]) -> None:
    data = tmp_path / "data" / "tiny"
    data.mkdir(parents=True)
    (data / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"d{n}", "text": text}) + "\n" for n, text in enumerate(sentences)), encoding="utf-8"
    )
    queries = ["reset my password", "a cat on a mat", "the piano song", "an unjudged query"]
    (data / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"q{n}", "text": text}) + "\n" for n, text in enumerate(queries)), encoding="utf-8"
    )
    (data / "qrels_test.tsv").write_text("query-id\tcorpus-id\tscore\nq0\td0\t1\nq1\td1\t1\nq2\td9\t1\n")
    index = tmp_path / "index"
    built = CliRunner().invoke(
        app, ["index", str(data / "corpus.jsonl"), "--id-field", "_id", "-d", str(index), "-m", str(tiny_model), "-q"]
    )
    assert built.exit_code == 0, built.output
    out = tmp_path / "modes.json"
    completed = subprocess.run(
        [sys.executable, str(REPOSITORY / "benchmarks" / "retrieval" / "retrieval_modes.py"), "--index", f"tiny={index}",
         "--data", str(tmp_path / "data"), "--runs", "2", "--warmup", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    tiny = results["sets"]["tiny"]
    assert tiny["queries_timed"] == 3 and tiny["documents"] == len(sentences)  # the judged queries only
    assert set(tiny["modes"]) == {"dense", "keyword", "hybrid", "mmr"}
    assert tiny["modes"]["dense"]["median_ratio_to_dense"] == 1.0
    assert all(mode["p50_ms"] > 0 for mode in tiny["modes"].values())
    assert results["machine"]["cpu"] and results["fusion"]
