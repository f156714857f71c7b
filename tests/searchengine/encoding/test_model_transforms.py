"""Post-processing modules (Dense with Identity activation, searchengine.encoding.flow.Flow) between Pooling and Normalize:
run by the Encoder exactly as sentence-transformers runs them, checked, and part of the model's fingerprint."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from searchengine.encoding.encoder import Encoder
from searchengine.encoding.flow import Flow
from searchengine.encoding.model_source import DENSE_MODULE_TYPE, FLOW_MODULE_TYPE, locate_model
from searchengine.encoding.model_transforms import IDENTITY_ACTIVATION, write_dense_module
from searchengine.errors import SearchEngineError

TEXTS = ["the cat sat on the mat", "how do i reset my password", "a storm brought cold wind and snow to the city"]


def with_modules(base: Path, target: Path, *modules: tuple[str, str]) -> Path:
    """Copy `base` to `target`, listing (type, folder) modules after Pooling and before Normalize."""
    shutil.copytree(base, target)
    entries = json.loads((target / "modules.json").read_text())
    position = next(i for i, entry in enumerate(entries) if entry["type"].endswith("Normalize"))
    for offset, (module_type, folder) in enumerate(modules):
        entries.insert(position + offset, {"idx": 0, "name": folder, "path": folder, "type": module_type})
    for idx, entry in enumerate(entries):
        entry["idx"] = idx
    (target / "modules.json").write_text(json.dumps(entries))
    return target


@pytest.fixture(scope="module")
def dense_weights() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(8, 32)).astype(np.float32), rng.normal(size=8).astype(np.float32)


@pytest.fixture(scope="module")
def dense_model(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory, dense_weights) -> Path:  # noqa: ANN001
    model = with_modules(tiny_model, tmp_path_factory.mktemp("dense") / "m", (DENSE_MODULE_TYPE, "2_Dense"))
    write_dense_module(model / "2_Dense", *dense_weights)
    return model


@pytest.fixture(scope="module")
def flow_model(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = with_modules(tiny_model, tmp_path_factory.mktemp("flow") / "m", (FLOW_MODULE_TYPE, "2_Flow"))
    torch.manual_seed(0)
    flow = Flow(32, blocks=2, hidden=8, seed=1)
    with torch.no_grad():
        for parameter in flow.parameters():
            parameter.normal_(0.0, 0.2)
    flow.save(model / "2_Flow")
    return model


def test_dense_runs_between_pooling_and_normalize(
    dense_model: Path, tiny_encoder: Encoder, dense_weights: tuple[np.ndarray, np.ndarray]
) -> None:
    encoder = Encoder(dense_model, precision="fp32")
    assert (encoder.pooled_dimension, encoder.dimension) == (32, 8)
    pooled = tiny_encoder.encode(TEXTS, pre_normalize=True)
    weight, bias = dense_weights
    expected = pooled @ weight.T + bias
    assert np.abs(encoder.encode(TEXTS, pre_normalize=True) - expected).max() < 1e-4
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.abs(encoder.encode(TEXTS) - expected).max() < 1e-5


def test_flow_runs_and_dense_stacks_after_it(flow_model: Path, tiny_encoder: Encoder, tmp_path: Path) -> None:
    flow = Flow.load(flow_model / "2_Flow")
    pooled = torch.from_numpy(tiny_encoder.encode(TEXTS, pre_normalize=True))
    with torch.no_grad():
        expected = flow.transform(pooled).numpy()
    assert np.abs(Encoder(flow_model, precision="fp32").encode(TEXTS, pre_normalize=True) - expected).max() < 1e-5
    stacked = with_modules(flow_model, tmp_path / "stacked", (DENSE_MODULE_TYPE, "3_Dense"))
    write_dense_module(stacked / "3_Dense", 2 * np.eye(32, dtype=np.float32)[:5], np.zeros(5, dtype=np.float32))
    assert locate_model(stacked).transforms == (
        (FLOW_MODULE_TYPE, stacked / "2_Flow"),
        (DENSE_MODULE_TYPE, stacked / "3_Dense"),
    )
    vectors = Encoder(stacked, precision="fp32").encode(TEXTS, pre_normalize=True)
    assert np.abs(vectors - 2 * expected[:, :5]).max() < 1e-5


def test_fingerprint_covers_module_folders(tiny_model: Path, dense_model: Path, tmp_path: Path) -> None:
    base = locate_model(tiny_model).fingerprint()
    calibrated = locate_model(dense_model).fingerprint()
    assert calibrated != base
    changed = shutil.copytree(dense_model, tmp_path / "changed")
    write_dense_module(changed / "2_Dense", np.eye(32, dtype=np.float32)[:8], np.zeros(8, dtype=np.float32))
    assert locate_model(changed).fingerprint() not in (base, calibrated)
    assert locate_model(shutil.copytree(dense_model, tmp_path / "same")).fingerprint() == calibrated


def test_other_activation_is_refused(dense_model: Path, tmp_path: Path) -> None:
    model = shutil.copytree(dense_model, tmp_path / "tanh")
    config = json.loads((model / "2_Dense" / "config.json").read_text())
    assert config["activation_function"] == IDENTITY_ACTIVATION
    (model / "2_Dense" / "config.json").write_text(
        json.dumps({**config, "activation_function": "torch.nn.modules.activation.Tanh"})
    )
    with pytest.raises(SearchEngineError, match="Identity activation only"):
        Encoder(model)


def test_wrong_input_size_is_refused(tiny_model: Path, tmp_path: Path) -> None:
    model = with_modules(tiny_model, tmp_path / "m", (DENSE_MODULE_TYPE, "2_Dense"))
    write_dense_module(model / "2_Dense", np.ones((4, 16), dtype=np.float32), np.zeros(4, dtype=np.float32))
    with pytest.raises(SearchEngineError, match="takes 16-dimensional vectors but receives 32"):
        Encoder(model)


def test_a_bias_that_does_not_fit_the_weight_is_refused(tmp_path: Path) -> None:
    message = r"bias shape \(3,\) does not match weight shape \(4, 16\); give one bias per weight row, shape \(4,\)"
    with pytest.raises(SearchEngineError, match=message):
        write_dense_module(tmp_path / "2_Dense", np.ones((4, 16), dtype=np.float32), np.zeros(3, dtype=np.float32))
    assert not (tmp_path / "2_Dense").exists()


def test_module_after_normalize_is_refused(dense_model: Path, tmp_path: Path) -> None:
    model = shutil.copytree(dense_model, tmp_path / "late")
    entries = json.loads((model / "modules.json").read_text())
    entries[2], entries[3] = entries[3], entries[2]
    (model / "modules.json").write_text(json.dumps(entries))
    with pytest.raises(SearchEngineError, match="after Normalize"):
        locate_model(model)


def test_missing_dense_weights_are_named(dense_model: Path, tmp_path: Path) -> None:
    model = shutil.copytree(dense_model, tmp_path / "broken")
    (model / "2_Dense" / "model.safetensors").unlink()
    with pytest.raises(SearchEngineError, match="cannot load the Dense weights"):
        Encoder(model)


# --- parity with sentence-transformers (a dev dependency; searchengine never imports it) ---------------------


def _sentence_transformer(model: Path, **kwargs):  # noqa: ANN202
    sentence_transformers = pytest.importorskip("sentence_transformers")
    return sentence_transformers.SentenceTransformer(str(model), device="cpu", **kwargs)


def test_sentence_transformers_loads_the_dense_model_natively(dense_model: Path) -> None:
    model = _sentence_transformer(dense_model)
    assert [type(module).__name__ for module in model] == ["Transformer", "Pooling", "Dense", "Normalize"]
    theirs = model.encode(TEXTS, convert_to_numpy=True)
    assert np.abs(theirs - Encoder(dense_model, precision="fp32").encode(TEXTS)).max() < 1e-5


def test_sentence_transformers_loads_the_flow_model(flow_model: Path) -> None:
    model = _sentence_transformer(flow_model, trust_remote_code=True)  # ST 6 asks this for any non-ST module class
    assert isinstance(model[2], Flow)
    theirs = model.encode(TEXTS, convert_to_numpy=True)
    assert np.abs(theirs - Encoder(flow_model, precision="fp32").encode(TEXTS)).max() < 1e-5


def test_a_model_saved_by_sentence_transformers_loads_here(dense_model: Path, flow_model: Path, tmp_path: Path) -> None:
    for name, source in (("dense", dense_model), ("flow", flow_model)):
        model = _sentence_transformer(source, trust_remote_code=True)
        model.save(str(tmp_path / name))
        ours = Encoder(tmp_path / name, precision="fp32").encode(TEXTS)
        assert np.abs(ours - Encoder(source, precision="fp32").encode(TEXTS)).max() < 1e-6, name


def test_info_lists_the_transform_modules(dense_model: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from searchengine.cli import app

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    runner = CliRunner()
    built = runner.invoke(app, ["index", str(corpus), "-d", str(tmp_path / "idx"), "--model", str(dense_model), "-q"])
    assert built.exit_code == 0, built.output
    shown = runner.invoke(app, ["info", "-d", str(tmp_path / "idx")])
    assert "pooling:" in shown.output and "mean + Dense (2_Dense) + normalize" in shown.output, shown.output
