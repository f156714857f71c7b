"""Adding an encoder backend is two files: the toy backend below is one class (its module's worth of code) and one
`register_backend` call, and the Encoder and the command line run it by name, with no other change; once removed,
its name is refused again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from searchengine.cli import app
from searchengine.encoding.backend import EncoderBackend, backend_choices, register_backend, registered_backends
from searchengine.encoding.encoder import Encoder
from searchengine.errors import SearchEngineError

TEXTS = ["a piano song", "the cat sat on the mat", "rain in the city"]


class CountingTorch(EncoderBackend):
    """The torch model as it is, counting the forward passes it runs: a runtime no built-in backend is."""

    name = "toy"
    precisions = ("fp32",)
    computes_in_torch = True

    def __init__(self) -> None:
        self.passes = 0

    def problem(self, device: str, pooling: str, precision: str) -> str | None:  # noqa: ARG002
        return None if precision in self.precisions else f"the toy backend runs fp32, not {precision}"

    def load(self, encoder: Encoder) -> Any:  # noqa: ANN401
        model = encoder.model

        def run(**inputs: Any) -> Any:  # noqa: ANN401
            self.passes += 1
            return model(**inputs)

        return run


@pytest.fixture
def toy() -> Any:  # noqa: ANN401
    backend = register_backend(CountingTorch())  # the one registration
    try:
        yield backend
    finally:
        del registered_backends()[backend.name]


def test_a_registered_backend_encodes_by_name(tiny_model: Path, toy: CountingTorch) -> None:
    encoder = Encoder(tiny_model, device="cpu", backend="toy")
    assert (encoder.backend, encoder.precision) == ("toy", "fp32")
    vectors = encoder.encode(TEXTS)
    assert toy.passes >= 1
    torch_vectors = Encoder(tiny_model, device="cpu", backend="torch", precision="fp32").encode(TEXTS)
    np.testing.assert_allclose(vectors, torch_vectors, atol=1e-6)
    with pytest.raises(SearchEngineError, match="the toy backend runs fp32, not int8"):
        Encoder(tiny_model, device="cpu", backend="toy", precision="int8")
    assert Encoder(tiny_model, device="cpu").backend != "toy"  # "auto" picks a backend only where it says so


def test_the_command_line_runs_a_registered_backend(tmp_path: Path, tiny_model: Path, toy: CountingTorch) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    index = tmp_path / "index"
    result = CliRunner().invoke(
        app, ["index", str(corpus), "-d", str(index), "--model", str(tiny_model), "--backend", "toy", "-q"]
    )
    assert result.exit_code == 0, result.output
    assert toy.passes >= 1


def test_an_unregistered_backend_is_refused(tiny_model: Path) -> None:
    assert "toy" not in backend_choices()
    with pytest.raises(SearchEngineError, match="unknown backend 'toy'; choose one of auto, torch, onnx, openvino"):
        Encoder(tiny_model, device="cpu", backend="toy")
