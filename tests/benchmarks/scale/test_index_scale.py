"""benchmarks/scale/index_scale.py on a tiny corpus: its corpus, its rows and its stages, never its timings."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]
SENTENCES = [f"sentence number {i} says something about topic {i % 7} today" for i in range(40)]


def _run(tmp_path: Path, *arguments: str) -> None:
    completed = subprocess.run(
        [
            sys.executable,
            str(REPOSITORY / "benchmarks" / "scale" / "index_scale.py"),
            *arguments,
            "--sentences",
            str(tmp_path / "sentences.txt.gz"),
            "--work",
            str(tmp_path / "work"),
            "--out",
            str(tmp_path / "out.json"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]


def test_encode_then_stages_at_a_larger_size(tmp_path: Path) -> None:
    with gzip.open(tmp_path / "sentences.txt.gz", "wt", encoding="utf-8") as file:
        file.write("\n".join(SENTENCES) + "\n")
    _run(tmp_path, "--part", "encode", "--n", "60")
    _run(tmp_path, "--part", "stages", "--n", "300", "--vectors", str(tmp_path / "work" / "encode-60"))
    lines = (tmp_path / "work" / "corpus-300.txt").read_text(encoding="utf-8").splitlines()
    assert lines[:40] == SENTENCES and len(lines) == 300
    assert all(len(line.split()) == len(SENTENCES[i % 40].split()) - 1 for i, line in enumerate(lines) if i >= 40)
    results = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    encoded, stored = results["encode-60"], results["stages-300"]
    assert encoded["documents"] == 60 and stored["documents"] == 300
    assert list(encoded["stages"]) == ["reading", "storing", "encoding", "vector index", "commit"]
    assert list(stored["stages"]) == ["reading", "storing", "vector index", "commit"]  # the vectors came with them
    assert encoded["index_type"] == stored["index_type"] == "Flat"
    assert encoded["peak_memory_gib"] > 0 and stored["machine"]["cores"] >= 1
