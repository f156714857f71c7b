"""benchmarks/harness/results.py: a results file is written as the committed ones are, and read back to merge."""

from __future__ import annotations

from pathlib import Path

from benchmarks.harness.results import read_results, write_results

REPOSITORY = Path(__file__).resolve().parents[3]


def test_a_committed_results_file_is_written_back_byte_for_byte(tmp_path: Path) -> None:
    for committed in (
        REPOSITORY / "benchmarks" / "storage" / "results" / "write_cost.json",  # indent 2
        REPOSITORY / "benchmarks" / "scale" / "results" / "ray_parts.json",  # indent 1
    ):
        indent = 1 if committed.name == "ray_parts.json" else 2
        out = tmp_path / "new" / committed.name
        write_results(out, read_results(committed), indent=indent)
        assert out.read_bytes() == committed.read_bytes()


def test_text_outside_ascii_is_kept_as_it_is_where_asked(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    write_results(out, {"sentence": "café"}, ensure_ascii=False)
    assert out.read_text(encoding="utf-8") == '{\n  "sentence": "café"\n}\n'
    write_results(out, {"sentence": "café"})
    assert out.read_text(encoding="utf-8") == '{\n  "sentence": "caf\\u00e9"\n}\n'


def test_a_missing_file_reads_as_no_rows(tmp_path: Path) -> None:
    assert read_results(tmp_path / "none.json") == {}
