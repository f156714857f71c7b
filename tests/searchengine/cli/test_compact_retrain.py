"""`searchengine compact --retrain` and the trained template in `info`: an index of a trained type shows what its
template was trained on and how the vectors added since fit it; a retrain trains it again and says so; an index
without a quantizer refuses it in one line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.searchengine.cli.test_cli import assert_one_line_error, run

CORPUS = Path(__file__).resolve().parents[3] / "examples" / "corpus.txt"


def test_info_shows_the_template_and_compact_retrain_trains_it_again(tmp_path: Path, tiny_model: Path) -> None:
    target = tmp_path / "sq8"
    built = run("index", CORPUS, "-d", target, "--model", tiny_model, "--index", "SQ8", "-q")
    assert built.exit_code == 0, built.output
    documents = json.loads(run("info", "-d", target, "--json").output)["count"]["documents"]
    added = tmp_path / "more.txt"
    added.write_text("\n".join(f"a new note number {i} about tides" for i in range(20)) + "\n", encoding="utf-8")
    assert run("add", added, "-d", target).exit_code == 0
    info = run("info", "-d", target)
    (line,) = [line for line in info.output.splitlines() if line.startswith("trained template:")]
    assert f"SQ8 trained on {documents:,} vectors, 20 vectors" in line and "quantization error" in line
    template = json.loads(run("info", "-d", target, "--json").output)["template"]
    assert template["trained_vectors"] == documents and template["added_since_training"] == 20
    assert template["error_ratio"] > 0
    retrained = run("compact", "--retrain", "-d", target)
    assert retrained.exit_code == 0, retrained.output
    assert f"Retrained: SQ8 on {documents + 20:,} vectors; every segment re-encoded." in retrained.output
    template = json.loads(run("info", "-d", target, "--json").output)["template"]
    assert template["trained_vectors"] == documents + 20 and template["added_since_training"] == 0
    assert run("verify", "-d", target).exit_code == 0


def test_compact_retrain_of_an_index_without_a_quantizer_is_one_line(tmp_path: Path, tiny_model: Path) -> None:
    target = tmp_path / "flat"
    assert run("index", CORPUS, "-d", target, "--model", tiny_model, "-q").exit_code == 0
    assert_one_line_error(run("compact", "--retrain", "-d", target), "has nothing to train", "without --retrain")
    assert "trained template:" not in run("info", "-d", target).output
