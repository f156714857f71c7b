"""benchmarks/files/file_search.py on a tiny Markdown folder written here (no Debian packages, no extractor beyond
markdown-it-py): it scores every variant in every mode, counts the file no extractor can read, and its scoring
counts a hit only on the question's file and pages."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[3]
NOTES = {
    "garden": "# Garden\n\nWater the plant and the seed in the soil when the sun is up.\n",
    "music": "# Music\n\nPlay the piano song, then the guitar song.\n",
    "bank": "# Bank\n\nThe stock price fell while the market rate rose.\n",
}
QUESTIONS = [("water the seed in the soil", "garden"), ("a piano and guitar song", "music"), ("stock price", "bank")]


def test_file_search_scores_a_tiny_markdown_folder(tmp_path: Path, tiny_model: Path) -> None:
    corpus = tmp_path / "notes"
    for name, text in NOTES.items():
        (corpus / name).mkdir(parents=True)
        (corpus / name / "README.md").write_text(text, encoding="utf-8")
    (corpus / "broken").mkdir()
    (corpus / "broken" / "README.md").write_bytes(b"\xff\xfe\x00\x01 not text")
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        "".join(
            json.dumps({"corpus": "tiny", "question": q, "file": f"{name}/README.md", "pages": None, "section": None})
            + "\n"
            for q, name in QUESTIONS
        ),
        encoding="utf-8",
    )
    out = tmp_path / "results.json"
    completed = subprocess.run(
        [sys.executable, str(REPOSITORY / "benchmarks" / "files" / "file_search.py"), "--root", f"tiny=markdown:{corpus}",
         "--corpora", "tiny", "--questions", str(questions), "--work", str(tmp_path / "work"),
         "--results", str(out), "--model", str(tiny_model), "--folder"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    tiny = results["corpora"]["tiny"]
    assert tiny["files"] == 4 and tiny["questions"] == 3
    assert set(tiny["variants"]) == {"raw", "markdown-it"}
    for variant in tiny["variants"].values():
        extraction = variant["extraction"]
        assert extraction["failed_files"] == 1 and extraction["pages"] == 3
        assert extraction["failures"][0]["reason"].startswith("UnicodeDecodeError")
        assert extraction["failures"][0]["example"] == "broken/README.md"
        passages = variant["passages"]
        assert passages["documents"] == 3 and set(passages["modes"]) == {"dense", "keyword", "hybrid"}
        keyword = passages["modes"]["keyword"]  # each question's words are in one note: found first
        assert keyword == {"recall@5": 1.0, "mrr@10": 1.0, "ranks": [1, 1, 1]}
        for mode in passages["modes"].values():
            assert 0.0 <= mode["recall@5"] <= 1.0 and 0.0 <= mode["mrr@10"] <= 1.0 and len(mode["ranks"]) == 3
    copied = tmp_path / "work" / "tiny" / "folder-files"
    assert sorted(path.parent.name for path in copied.glob("*/README.md")) == ["bank", "broken", "garden", "music"]
    assert set(tiny["folder"]) == {"passage-headings", "no-passage-headings"}  # `searchengine index DIR`, each way
    for folder in tiny["folder"].values():  # the unreadable file skipped, the three notes found by path
        assert folder["documents"] == 3 and folder["modes"]["keyword"]["ranks"] == [1, 1, 1], folder
        assert folder["vectors"] >= 3
    assert "no_passages" in tiny["variants"]["raw"] and "no_passages" not in tiny["variants"]["markdown-it"]
    assert results["extractor_install_size"]["markdown-it"]["bytes"] > 0
    assert results["extractor_install_size"]["raw"]["bytes"] == 0
    assert results["machine"]["cpu"]


def test_extractors_picks_which_run_and_names_an_unknown_one(tmp_path: Path, tiny_model: Path) -> None:
    corpus = tmp_path / "notes"
    (corpus / "garden").mkdir(parents=True)
    (corpus / "garden" / "README.md").write_text(NOTES["garden"], encoding="utf-8")
    questions = tmp_path / "questions.jsonl"
    row = {"corpus": "tiny", "question": "water the seed", "file": "garden/README.md", "pages": None, "section": None}
    questions.write_text(json.dumps(row) + "\n", encoding="utf-8")
    command = [
        sys.executable, str(REPOSITORY / "benchmarks" / "files" / "file_search.py"), "--root", f"tiny=markdown:{corpus}",
        "--corpora", "tiny", "--questions", str(questions), "--work", str(tmp_path / "work"),
        "--results", str(tmp_path / "results.json"), "--model", str(tiny_model),
    ]  # fmt: skip
    unknown = subprocess.run([*command, "--extractors", "raw,pandoc"], capture_output=True, text=True, timeout=600)
    assert unknown.returncode == 2 and "--extractors: pandoc unknown" in unknown.stderr
    completed = subprocess.run([*command, "--extractors", "raw"], capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert set(results["corpora"]["tiny"]["variants"]) == {"raw"}
    assert set(results["extractor_install_size"]) == {"raw"}


def test_a_hit_counts_only_on_the_questions_file_and_pages() -> None:
    file_search = importlib.import_module("benchmarks.files.file_search")
    paged = file_search.Question("r", "cite R", "R-FAQ.pdf", (12, 13))
    whole = file_search.Question("p", "csv rows as dicts", "library/csv.html")
    rankings = [
        [("R-FAQ.pdf", 11), ("R-intro.pdf", 12), ("R-FAQ.pdf", None), ("R-FAQ.pdf", 13)],  # first answer at rank 4
        [("a.html", None)] * 5 + [("library/csv.html", None)],  # at rank 6: in MRR@10, not in recall@5
    ]
    scores = file_search.score([paged, whole], rankings)
    assert scores == {"recall@5": 0.5, "mrr@10": pytest.approx((1 / 4 + 1 / 6) / 2)}
    assert file_search.line_location("R-FAQ.pdf#12", paged=True) == ("R-FAQ.pdf", 12)
    assert file_search.line_location("a#b.html", paged=False) == ("a#b.html", None)
