"""Smoke test of the retrieval benchmarks (split_queries, retrieval_pairs' splitting, adaptation, retrieval_rerank) on
tiny BEIR-shaped sets and the tiny offline models: their plumbing and checks, never their numbers."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from searchengine.indexer.tables.store import Document
from searchengine.training.loop import TrainingSettings
from searchengine.training.methods.cross_encoder import CrossEncoderTraining

from searchengine import BuildSettings, SearchEngine
from tests.conftest import SENTENCES

REPOSITORY = Path(__file__).resolve().parents[3]
BENCHMARKS = REPOSITORY / "benchmarks" / "retrieval"


def write_set(directory: Path, own_ids: bool) -> None:
    """12 documents and 6 queries, each judged relevant to one document. With `own_ids` each query is a document,
    with its id, and judged relevant to itself: a hit the benchmarks must drop (ArguAna's rule)."""
    directory.mkdir(parents=True)
    documents = [{"_id": f"d{i}", "title": f"title {i}", "text": text} for i, text in enumerate(SENTENCES)]
    queries = [{"_id": f"d{i}" if own_ids else f"q{i}", "text": SENTENCES[i]} for i in range(6)]
    (directory / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    (directory / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    rows = [f"{q['_id']}\td{i if own_ids else i + 6}\t1\n" for i, q in enumerate(queries)]
    (directory / "qrels_test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(rows), encoding="utf-8")


def run(script: str, *arguments: object) -> str:
    completed = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *map(str, arguments)], capture_output=True, text=True, timeout=1200
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout


@pytest.fixture
def tiny_cross_encoder(tiny_model: Path, tmp_path: Path) -> Path:
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("score\tsentence1\tsentence2\n1\tcat mat\tthe cat sat\n0\tcat mat\tstocks fell\n", "utf-8")
    out = tmp_path / "ce"
    settings = TrainingSettings(steps=1, eval_every=1, progress=False)
    CrossEncoderTraining(base=tiny_model, data=pairs, out=out, batch_size=2, max_seq_length=32).train(settings)
    return out


def test_split_adaptation_and_rerank_run(tmp_path: Path, tiny_model: Path, tiny_cross_encoder: Path) -> None:
    data, halves = tmp_path / "data", tmp_path / "halves"
    write_set(data / "nfcorpus", own_ids=False)
    write_set(data / "arguana", own_ids=True)
    assert "nfcorpus: 3 tune queries, 3 held-back queries" in run("split_queries.py", "--data", data, "--out", halves)
    tune = (halves / "nfcorpus" / "qrels_tune.tsv").read_text().splitlines()[1:]
    heldback = (halves / "nfcorpus" / "qrels_heldback.tsv").read_text().splitlines()[1:]
    assert not {row.split("\t")[0] for row in tune} & {row.split("\t")[0] for row in heldback}

    for name in ("nfcorpus", "arguana"):
        index = tmp_path / f"{name}-index"
        rerank_json = tmp_path / "rerank.json"
        common = ("--data", data, "--halves", halves, "--set", name)
        printed = run(
            "retrieval_rerank.py", *common, "--cross-encoder", tiny_cross_encoder, "--model", tiny_model,
            "--index", index, "--latency-queries", 2, "--runs", 1, "--check", 3, "--out", rerank_json,
        )  # fmt: skip
        assert "hybrid, rerank top 100" in printed
        (rows,) = [run["rows"] for run in json.loads(rerank_json.read_text()).values() if run["set"] == name]
        assert set(rows) == {
            f"{mode}{rerank}" for mode in ("dense", "hybrid") for rerank in ("", ", rerank top 20", ", rerank top 100")
        }
        assert all(row["p50_ms"] > 0 for row in rows.values())
        # ArguAna: the only relevant document is the query's own, never returned; NFCorpus: found in 12 documents
        assert all((row["ndcg@10"] == 0.0) == (name == "arguana") for row in rows.values()), rows

        adaptation_json = tmp_path / "adaptation.json"
        assert "held-back" in run("adaptation.py", *common, "--index", f"base={index}", "--out", adaptation_json)
        base = json.loads(adaptation_json.read_text())[name]["base"]
        assert {"dense", "keyword", "hybrid"} <= set(base)
        dense = base["dense"]
        assert dense["heldback"]["queries"] == 3 and dense["tune"]["queries"] == 3
        expected_recall = 0.0 if name == "arguana" else 1.0
        assert dense["tune"]["recall@100"] == dense["heldback"]["recall@100"] == expected_recall


def test_stop_words_benchmark_runs_both_parts(tmp_path: Path, tiny_model: Path) -> None:
    data = tmp_path / "data"
    write_set(data / "retrieval" / "nfcorpus", own_ids=False)
    documents = [
        json.loads(line) for line in (data / "retrieval" / "nfcorpus" / "corpus.jsonl").read_text().splitlines()
    ]
    index = tmp_path / "nf-index"
    SearchEngine.build(
        [Document(d["text"], external_id=d["_id"]) for d in documents],
        index,
        BuildSettings(model=tiny_model),
    ).close()
    (data / "unsup").mkdir()
    with gzip.open(data / "unsup" / "wiki_sentences.txt.gz", "wt", encoding="utf-8") as handle:
        handle.write("".join(f"{text} and a word {i} of the day\n" for i, text in enumerate(SENTENCES * 2)))
    speed_index = tmp_path / "speed-index"
    SearchEngine.build(SENTENCES, speed_index, BuildSettings(model=tiny_model)).close()
    printed = run(
        "stop_words.py", "--set", "nfcorpus", "--index", index, "--speed-index", speed_index,
        "--speed-docs", len(SENTENCES), "--rounds", 1, "--data", data,
    )  # fmt: skip
    for mode in ("keyword", "hybrid"):
        assert f"nfcorpus {mode:<8} stop words off: nDCG@10" in printed and f"{mode:<8} stop words on : p50" in printed
    assert "dense    stop words on : p50" in printed
