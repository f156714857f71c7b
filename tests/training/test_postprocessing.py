"""`searchengine train whitening|flow|sn|natsv`: the written model directory (a copy of the base with the new
module before Normalize), stacking on a calibrated base, indexing and querying with it, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from searchengine.training.fit_normalisation import fit_sn
from searchengine.training.fit_whitening import fit_whitening
from typer.testing import CliRunner

from searchengine.cli import app
from searchengine.encoding.encoder import Encoder
from tests.training.postprocessing_data import write_corpus

runner = CliRunner()


def run(*args: object):  # noqa: ANN201
    return runner.invoke(app, [str(a) for a in args])


def assert_one_line_error(result, *fragments: str) -> None:  # noqa: ANN001
    assert result.exit_code == 1, result.output
    message = result.output.strip()
    assert "Traceback" not in message and message.startswith("Error: ") and "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus.txt", 200)


@pytest.mark.parametrize(
    ("command", "options", "dimension"),
    [
        ("whitening", ["--k", "12"], 12),
        ("sn", [], 32),
        ("natsv", ["--k", "2"], 32),
        ("natsv", ["--k", "2", "--centre"], 32),
        ("flow", ["--epochs", "1", "--blocks", "2", "--hidden", "8", "--seed", "3"], 32),
    ],
)
def test_each_command_writes_a_model(
    tiny_model: Path, corpus: Path, tmp_path: Path, command: str, options: list[str], dimension: int
) -> None:
    result = run("train", command, "--base", tiny_model, "--data", corpus, "--out", tmp_path / "m", "-q", *options)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Wrote {tmp_path / 'm'}") and "200 texts" in result.output
    if command == "flow":
        assert "log-likelihood per dimension" in result.output
    modules = json.loads((tmp_path / "m" / "modules.json").read_text())
    assert [m["path"] for m in modules][2] == f"2_{'Flow' if command == 'flow' else 'Dense'}"
    assert Encoder(tmp_path / "m").encode(["the cat sat"]).shape == (1, dimension)
    # The base is copied, not changed.
    assert len(json.loads((tiny_model / "modules.json").read_text())) == 3


def test_stacking_on_a_calibrated_base(tiny_model: Path, corpus: Path, tmp_path: Path) -> None:
    """A module is fitted on what it will receive: the base's own transforms run first."""
    fit_whitening(base=tiny_model, corpus=corpus, out=tmp_path / "w", k=12, progress=False)
    fit_sn(base=tmp_path / "w", corpus=corpus, out=tmp_path / "ws", progress=False)
    modules = json.loads((tmp_path / "ws" / "modules.json").read_text())
    assert [m["path"] for m in modules] == ["", "1_Pooling", "2_Dense", "3_Dense", "2_Normalize"]
    assert [m["idx"] for m in modules] == [0, 1, 2, 3, 4]
    texts = corpus.read_text(encoding="utf-8").split("\n")[:-1]
    vectors = Encoder(tmp_path / "ws", precision="fp32").encode(texts, pre_normalize=True).astype(np.float64)
    assert vectors.shape[1] == 12 and np.abs(vectors.std(axis=0) - 1).max() < 1e-3


def test_index_and_query_with_a_calibrated_model(tiny_model: Path, corpus: Path, tmp_path: Path) -> None:
    model = tmp_path / "w"
    assert run("train", "whitening", "-b", tiny_model, "-d", corpus, "-o", model, "--k", "16", "-q").exit_code == 0
    built = run("index", corpus, "-d", tmp_path / "idx", "--model", model)
    assert built.exit_code == 0, built.output
    manifest = json.loads(run("info", "-d", tmp_path / "idx", "--json").output)
    assert manifest["model"]["dimension"] == 16 and manifest["index"]["dimension"] == 16
    assert manifest["model"]["fingerprint"] == Encoder(model).fingerprint != Encoder(tiny_model).fingerprint
    text = corpus.read_text(encoding="utf-8").split("\n")[7]
    result = run("query", text, "-k", "1", "--json", "--mode", "dense", "-d", tmp_path / "idx")
    assert result.exit_code == 0, result.output
    hit = json.loads(result.output)["hits"][0]
    assert hit["text"] == text and hit["score"] == pytest.approx(1.0, abs=1e-4)
    # Another model with the same dimension is not mistaken for the calibrated one.
    assert_one_line_error(run("query", text, "-d", tmp_path / "idx", "--model", tiny_model))


@pytest.mark.parametrize("command", ["whitening", "flow", "sn", "natsv"])
def test_bad_input_is_one_line(tiny_model: Path, corpus: Path, tmp_path: Path, command: str) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    out = tmp_path / "out"
    assert_one_line_error(run("train", command, "-b", tiny_model, "-d", empty, "-o", out, "-q"), "no texts to fit on")
    assert_one_line_error(
        run("train", command, "-b", tmp_path / "missing-model", "-d", corpus, "-o", out, "-q"), "does not exist"
    )
    assert_one_line_error(
        run("train", command, "-b", tiny_model, "-d", tmp_path / "missing.txt", "-o", out, "-q"), "does not exist"
    )
    assert not out.exists()


@pytest.mark.parametrize(("command", "k"), [("whitening", "33"), ("natsv", "32")])
def test_k_too_large_is_one_line(tiny_model: Path, corpus: Path, tmp_path: Path, command: str, k: str) -> None:
    result = run("train", command, "-b", tiny_model, "-d", corpus, "-o", tmp_path / "o", "--k", k, "-q")
    assert_one_line_error(result, "embedding dimension 32", f"not {k}")


def test_a_failed_fit_leaves_the_previous_model(tiny_model: Path, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "m"
    assert run("train", "sn", "-b", tiny_model, "-d", corpus, "-o", out, "-q").exit_code == 0
    before = (out / "2_Dense" / "model.safetensors").read_bytes()
    assert_one_line_error(run("train", "whitening", "-b", tiny_model, "-d", corpus, "-o", out, "--k", "40", "-q"))
    assert (out / "2_Dense" / "model.safetensors").read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_precomputed_vectors_fit_the_same_model(tiny_model: Path, corpus: Path, tmp_path: Path) -> None:
    """One embedding pass can serve several fits: the result is the model an own pass gives."""
    from safetensors.numpy import load_file
    from searchengine.training.fit_normalisation import fit_natsv
    from searchengine.training.postprocessing import embed_all, load_base, read_texts

    from searchengine.errors import SearchEngineError

    vectors = embed_all(load_base(tiny_model), read_texts(corpus), False, "test")
    fit_natsv(base=tiny_model, corpus=corpus, out=tmp_path / "own", k=2, progress=False)
    fit_natsv(base=tiny_model, corpus=corpus, out=tmp_path / "shared", k=2, progress=False, vectors=vectors)
    own, shared = (load_file(str(tmp_path / name / "2_Dense" / "model.safetensors")) for name in ("own", "shared"))
    assert all(np.abs(own[key] - shared[key]).max() < 1e-6 for key in own)
    with pytest.raises(SearchEngineError, match="precomputed vectors have shape"):
        fit_sn(base=tiny_model, corpus=corpus, out=tmp_path / "bad", progress=False, vectors=vectors[:10])
