"""Adding a training method is one class in one file plus one registration line: the toy method below is written
the way a contributor would write one (its options, how it reads its data, its loss, its log details), registered
with one line, and `searchengine train` lists it, shows its options and trains it."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchengine.training.method import BiEncoderMethod
from searchengine.training.options import option

from searchengine.encoding.encoder import Encoder

if TYPE_CHECKING:
    from searchengine.training.loop import LossFunction
    from searchengine.training.sentence_model import SentenceModel

REPOSITORY = Path(__file__).resolve().parents[2]


@dataclass(kw_only=True)
class ToyPairs(BiEncoderMethod):
    """Toy pairs: pulls the two sentences of each pair together, loss 1 - cos(u, v).

    Example: searchengine train toy-pairs --data pairs.tsv --out toy-model
    """

    data: Path = option(help="Pairs: sentence1<TAB>sentence2.")
    batch_size: int = option(2, min=1, help="Pairs per batch.")

    report_name = "toy-pairs"

    def read(self) -> list[tuple[str, str]]:
        lines = self.data.read_text(encoding="utf-8").splitlines()
        return [(first, second) for first, second in (line.split("\t") for line in lines if line)]

    def loss(self, model: SentenceModel) -> LossFunction:
        import torch

        def loss(batch: list[tuple[str, str]]) -> torch.Tensor:
            u = model.embed_texts([first for first, _ in batch])
            v = model.embed_texts([second for _, second in batch])
            return (1 - torch.cosine_similarity(u, v)).mean()

        return loss

    def details(self, examples: list) -> dict[str, Any]:
        return {"data": str(self.data), "pairs": len(examples), "batch_size": self.batch_size}


CLI = """
import sys
from searchengine.training.registry import METHODS
from tests.training.test_adding_a_method import ToyPairs

METHODS["toy-pairs"] = ToyPairs  # the one registration line

from typer.testing import CliRunner
from searchengine.cli import app

runner = CliRunner()
wide = {"COLUMNS": "200"}
for arguments in (["train", "--help"], ["train", "toy-pairs", "--help"], ["train", "toy-pairs", *sys.argv[1:]]):
    result = runner.invoke(app, arguments, env=wide)
    print(result.output)
    if result.exit_code:
        sys.exit(result.exit_code)
"""


def test_a_method_in_one_file_is_listed_and_trained_by_the_cli(tiny_model: Path, tmp_path: Path) -> None:
    data = tmp_path / "pairs.tsv"
    data.write_text("the cat sat\ta cat sat\nreset my password\tforgot my password\nrain in the city\tsnow\n")
    out = tmp_path / "toy-model"
    arguments = ["--base", str(tiny_model), "--data", str(data), "--out", str(out), "--steps", "2", "--quiet"]
    result = subprocess.run(
        [sys.executable, "-c", CLI, *arguments], cwd=REPOSITORY, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "│ toy-pairs " in result.stdout and "Toy pairs: pulls the two sentences" in result.stdout
    assert "Pairs per batch." in result.stdout and "--max-seq-length" in result.stdout
    assert "toy-pairs: 2 steps" in result.stdout and f"Saved to {out}" in result.stdout
    log = json.loads((out / "training_log.json").read_text())
    assert log["method"] == "toy-pairs" and log["details"]["pairs"] == 3 and log["steps"] == 2
    assert Encoder(out).encode(["the cat"]).shape == (1, 32)
