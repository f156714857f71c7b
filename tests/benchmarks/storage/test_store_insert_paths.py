"""benchmarks/storage/store_insert_paths.py on a tiny store that store_scale.py filled: every path adds its rows to a
copy, never to the store given, and each reports its numbers; never how fast."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]
SCRIPTS = REPOSITORY / "benchmarks" / "storage"


def _run(script: str, *arguments: str) -> None:
    completed = subprocess.run(
        [sys.executable, str(SCRIPTS / script), *arguments], capture_output=True, text=True, timeout=600
    )
    assert completed.returncode == 0, completed.stderr[-3000:]


def test_each_path_adds_to_a_copy(tmp_path: Path) -> None:
    texts = tmp_path / "sentences.txt"
    texts.write_text("".join(f"sentence {i} about topic {i % 11} and a man playing music\n" for i in range(300)))
    queries = tmp_path / "test.tsv"
    queries.write_text("score\tsentence1\tsentence2\n" + "".join(f"1.0\ta man {i}\tx\n" for i in range(5)))
    _run(
        "store_scale.py",
        *("--steps", "3000", "--lookups", "5", "--cold-lookups", "1", "--filter-runs", "1", "--filters", "3"),
        *("--texts", str(texts), "--queries", str(queries), "--keyword-queries", "2", "--work", str(tmp_path / "w")),
        *("--out", str(tmp_path / "fill.json"), "--keep", "--no-optimize", "--no-metadata-index"),
    )
    store = tmp_path / "w" / "documents.db"
    out = tmp_path / "paths.json"
    _run(
        "store_insert_paths.py",
        "--store",
        str(store),
        "--rounds",
        "1",
        "--chunks",
        "1",
        "--texts",
        str(texts),
        "--out",
        str(out),
    )
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["store_rows"] == 3000
    for path in ("before", "adds", "build"):
        assert result["median"][path]["rows_per_s"] > 0 and result["median"][path]["write_bytes_per_row"] > 0
    assert result["median"]["build"]["finish_s"] >= 0
    assert result["ratios_to_before"]["before"]["rows_per_s"] == 1.0
    assert sorted(p.name for p in store.parent.iterdir() if p.suffix == ".db") == ["documents.db"]
