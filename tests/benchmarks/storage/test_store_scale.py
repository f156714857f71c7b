"""benchmarks/storage/store_scale.py on a tiny store: a fill in two steps, then --existing on the store it kept:
that every number is there and the filters match the same rows with and without field indexes, never how fast."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]
SCRIPT = REPOSITORY / "benchmarks" / "storage" / "store_scale.py"


def _run(*arguments: str) -> None:
    completed = subprocess.run([sys.executable, str(SCRIPT), *arguments], capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]


def test_a_fill_in_steps_then_the_fixes_on_the_store_it_kept(tmp_path: Path) -> None:
    texts = tmp_path / "sentences.txt"
    texts.write_text("".join(f"sentence {i} about topic {i % 11} and a man playing music\n" for i in range(300)))
    queries = tmp_path / "test.tsv"
    queries.write_text("score\tsentence1\tsentence2\n" + "".join(f"1.0\ta man {i}\tx\n" for i in range(5)))
    common = ("--texts", str(texts), "--queries", str(queries), "--keyword-queries", "3", "--work", str(tmp_path / "w"))
    out = tmp_path / "fill.json"
    _run(
        *("--steps", "1500,3000", "--window", "1000", "--lookups", "20", "--cold-lookups", "3", "--filter-runs", "1"),
        *common,
        *("--out", str(out), "--keep", "--no-optimize"),
    )
    fill = json.loads(out.read_text(encoding="utf-8"))
    assert [step["rows"] for step in fill["steps"]] == [1500, 3000]
    last = fill["steps"][-1]
    assert fill["filled_as"] == "a build (start_build)"
    assert fill["steps"][0]["hash_keys_reloaded_s"] is None and last["hash_keys_reloaded_s"] >= 0
    assert last["hash_index_made_s"] >= 0
    assert last["insert"]["rows_per_s"] > 0 and last["insert"]["windows"][-1]["rows"] == 3000
    assert last["size"]["bytes_per_row"] > 0 and last["size"]["fts5_segments"] >= 1
    assert last["fetch"]["one_warm"]["n"] == 20 and last["fetch"]["one_cold"]["n"] == 3
    assert last["keyword"]["first_pass"]["n"] == 3
    assert fill["metadata_index"]["plan_with_index"] == ["SEARCH documents USING INDEX bench_category (<expr>=?)"]
    fixes_out = tmp_path / "fixes.json"
    _run("--existing", "--more-rows", "300", *common, "--out", str(fixes_out))
    fixes = json.loads(fixes_out.read_text(encoding="utf-8"))["fixes"]
    assert fixes["rows"] == 3000
    assert set(fixes["index_build_s"]) == {"lang", "category", "year", "views"}
    assert len(fixes["index_bytes_per_row"]) == 4
    for name, measured in fixes["with_index"].items():
        assert measured["matches"] == last["filters"][name]["matches"] > 0
    assert fixes["fts5_optimize"]["segments_after"] == 1
    assert fixes["insert_rows_per_s_with_4_indexes"] > 0 and fixes["insert_rows_per_s_without_them"] > 0
    assert not (tmp_path / "w").exists()  # removed without --keep
