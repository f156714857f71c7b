"""Smoke test of benchmarks/storage/memory_check.py at 5,000 vectors with the tiny model: it builds, measures in a
fresh process and ends with the one JSON line the issue asks for; never its timings."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[3]
KEYS = {"index_type", "resident_mb", "mapped_cache_mb", "recall_at_10", "p50_ms", "p99_ms", "add10_ms", "retrained"}


def tiny_data(tmp_path: Path) -> Path:
    """A tiny Wikipedia file (400 sentences) and STS-B test file (30 pairs) in the shared data's layout."""
    data = tmp_path / "data"
    (data / "unsup").mkdir(parents=True, exist_ok=True)
    (data / "stsb").mkdir(exist_ok=True)
    words = ["cat", "dog", "rain", "piano", "rocket", "bread", "river", "king", "train", "snow", "goal", "seed"]
    sentences = [f"the {words[i % 12]} and the {words[(i * 7) % 12]} number {i}" for i in range(400)]
    with gzip.open(data / "unsup" / "wiki_sentences.txt.gz", "wt", encoding="utf-8") as handle:
        handle.write("\n".join(sentences) + "\n")
    pairs = [f"{i % 5}.0\ta {words[i % 12]} in the {words[(i + 3) % 12]}\tthe {words[(i + 5) % 12]}" for i in range(30)]
    (data / "stsb" / "test.tsv").write_text("score\tsentence1\tsentence2\n" + "\n".join(pairs) + "\n", "utf-8")
    return data


def check(tmp_path: Path, tiny_model: Path, *options: str) -> subprocess.CompletedProcess:
    """memory_check.py on the tiny data and model (20 queries), with `options` after the common ones."""
    command = [
        sys.executable,
        str(REPOSITORY / "benchmarks" / "storage" / "memory_check.py"),
        "--model",
        str(tiny_model),
    ]
    command += [
        "--data",
        str(tiny_data(tmp_path)),
        "--real",
        "400",
        "--queries",
        "20",
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    return subprocess.run([*command, *options], capture_output=True, text=True, timeout=600)


def test_memory_check_runs_tiny_and_ends_with_its_json(tmp_path: Path, tiny_model: Path) -> None:
    options = ["--vectors", "5000", "--memory-budget", "300MB", "--warmup", "2", "--add-runs", "1"]
    completed = check(tmp_path, tiny_model, *options, "--out", str(tmp_path / "o.json"), "--keep", str(tmp_path / "kept"))
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert KEYS <= set(result)
    assert result["index_type"] == "Flat"  # 5,000 vectors of 32 dimensions fit 300 MB exactly
    assert result["recall_at_10"] == 1.0 and result["recall_at_10_real"] == 1.0  # exact search
    assert result["retrained"] is False and result["new_segment_types"] == ["Flat"] and result["nprobe"] == []
    assert 0 < result["index_resident_mb"] < result["resident_mb"]
    assert result["info_mb"]["resident"] >= result["info_mb"]["codes"] > 0  # `info`'s parts, beside the check's
    assert result["mapped_cache_mb"] > 0 and result["p50_ms"] <= result["p99_ms"]
    assert result["build"]["vectors"] == 5000 and result["build"]["real_vectors"] == 400
    assert json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))["index_type"] == "Flat"
    assert result["build"]["build_cpu_s"] > 0 and "vector index" in result["build"]["build_stages_cpu_s"]
    again = check(tmp_path, tiny_model, "--measure", str(tmp_path / "kept"), "--warmup", "2", "--out", str(tmp_path / "a"))
    assert again.returncode == 0, again.stderr[-3000:]
    record = json.loads((tmp_path / "a").read_text(encoding="utf-8"))  # the kept build's record rides along
    assert record["index_type"] == "Flat" and record["build"]["vectors"] == 5000
    assert 0.9 < record["recall_at_10"] <= 1.0  # the kept index also holds the 10 documents the add put in it
    assert record["build"]["build_s"] == result["build"]["build_s"] and "machine" in record and "command" in record


def test_a_work_folder_is_made_once_reused_and_refused_for_other_settings(tmp_path: Path, tiny_model: Path) -> None:
    work = tmp_path / "work"
    made = check(tmp_path, tiny_model, "--vectors", "3000", "--work", str(work), "--prepare-only")
    assert made.returncode == 0, made.stderr[-3000:]
    assert json.loads(made.stdout.strip().splitlines()[-1])["made"]["reused"] is False
    truth = np.load(work / "truth_rows.npy")
    assert truth.shape == (20, 10) and np.load(work / "vectors.npy", mmap_mode="r").shape[0] == 3000
    options = ["--vectors", "3000", "--work", str(work), "--memory-budget", "300MB", "--warmup", "2", "--add-runs", "0"]
    options += ["--cold", "--scanned-codes", "2000", "--rescore", "0", "50"]
    built = check(tmp_path, tiny_model, *options)
    assert built.returncode == 0, built.stderr[-3000:]
    result = json.loads(built.stdout.strip().splitlines()[-1])
    assert result["build"]["prepared"]["reused"] is True and result["recall_at_10"] == 1.0
    assert result["cold_recall_at_10"] == 1.0 and result["cold_p50_ms"] <= result["cold_p99_ms"]
    [swept] = result["scanned_codes_sweep"]  # a Flat index: no IVF segment to bound, exact as before
    assert swept["scanned_codes"] == 2000 and swept["nprobe"] == [] and swept["recall_at_10_real"] == 1.0
    assert [(depth["rescore"], depth["nprobe"]) for depth in result["rescore_sweep"]] == [(0, []), (50, [])]  # Flat
    assert all(depth["recall_at_10"] == 1.0 == depth["recall_at_10_real"] for depth in result["rescore_sweep"])
    assert np.array_equal(np.load(work / "truth_rows.npy"), truth) and (work / "vectors.npy").is_file()
    other = check(tmp_path, tiny_model, "--vectors", "3000", "--noise", "0.05", "--work", str(work), "--prepare-only")
    assert (
        other.returncode != 0 and "holds vectors made with" in other.stderr and "another --work folder" in other.stderr
    )


def test_a_scanned_codes_bound_sets_each_ivf_segments_probes() -> None:
    """--scanned-codes: an IVF segment probes at most the bound's codes at its mean list size, never more than half
    its lists; an exact segment is left alone."""
    from searchengine.indexer.vectors.segments import Segment, SegmentRecord, SegmentSet
    from searchengine.indexer.vectors.vector_index import VectorIndex

    from benchmarks.storage.memory_check import set_scanned_codes

    vectors = np.random.default_rng(0).standard_normal((3200, 16)).astype(np.float32)
    ids = np.arange(len(vectors))
    ivf, flat = VectorIndex.create("IVF64,Flat", 16), VectorIndex.create("Flat", 16)
    ivf.train(vectors)
    for index in (ivf, flat):
        index.add(vectors, ids)
    segments = SegmentSet(
        [
            Segment(SegmentRecord(f"s{n}", index.factory, len(ids), 0, ""), index, ids)
            for n, index in enumerate((ivf, flat))
        ],
        "IVF64,Flat",
        16,
    )
    assert set_scanned_codes(segments, 500) == [10]  # 500 codes at 50 a list: 10 lists
    assert set_scanned_codes(segments, 10**6) == [32]  # half the lists at most


def test_measuring_a_folder_no_build_kept_is_a_one_line_error(tmp_path: Path) -> None:
    script = REPOSITORY / "benchmarks" / "storage" / "memory_check.py"
    completed = subprocess.run([sys.executable, str(script), "--measure", str(tmp_path)], capture_output=True, text=True)
    assert completed.returncode == 2 and "Traceback" not in completed.stderr
    assert "no index kept by --keep there" in completed.stderr.strip().splitlines()[-1]
