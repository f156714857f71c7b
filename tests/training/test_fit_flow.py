"""BERT-flow fitted on a corpus: its log-likelihood rises in training, it stays invertible, the same seed gives
the same flow, and the saved model embeds exactly as the trained flow does."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file
from searchengine.training.fit_flow import fit_flow, train_flow

from searchengine.encoding.encoder import Encoder
from searchengine.encoding.flow import Flow
from searchengine.encoding.model_source import FLOW_MODULE_TYPE
from searchengine.errors import SearchEngineError
from tests.training.postprocessing_data import write_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus") / "corpus.txt", 300)


@pytest.fixture(scope="module")
def embeddings(tiny_encoder: Encoder, corpus: Path) -> np.ndarray:
    return tiny_encoder.encode(corpus.read_text(encoding="utf-8").split("\n")[:-1], pre_normalize=True)


def test_log_likelihood_rises_and_the_flow_inverts(embeddings: np.ndarray) -> None:
    flow, history = train_flow(embeddings, blocks=4, hidden=32, epochs=4, batch_size=64, seed=0, progress=False)
    assert len(history) == 5 and all(np.isfinite(history))
    assert all(later > earlier for earlier, later in zip(history, history[1:])), history
    x = torch.from_numpy(embeddings)
    with torch.no_grad():
        z = flow.transform(x)
        assert (flow.inverse(z) - x).abs().max() < 1e-4
        # Trained toward the prior: the latent is roughly standardised.
        assert abs(float(z.mean())) < 0.5 and 0.3 < float(z.std()) < 3.0


def test_same_seed_same_flow(embeddings: np.ndarray) -> None:
    settings = {"blocks": 2, "hidden": 16, "epochs": 2, "batch_size": 64, "progress": False}
    first, _ = train_flow(embeddings, seed=1, **settings)
    again, _ = train_flow(embeddings, seed=1, **settings)
    other, _ = train_flow(embeddings, seed=2, **settings)
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), again.state_dict().values()))
    assert not all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), other.state_dict().values()))


def test_fitted_model_embeds_through_the_flow(
    tiny_model: Path, tiny_encoder: Encoder, corpus: Path, tmp_path: Path
) -> None:
    report = fit_flow(base=tiny_model, corpus=corpus, out=tmp_path / "f", blocks=2, hidden=16, epochs=2, progress=False)
    curve = report.details["log_likelihood"]
    assert len(curve) == 3 and curve[-1] > curve[0]
    modules = json.loads((tmp_path / "f" / "modules.json").read_text())
    assert [m["type"] for m in modules][2] == FLOW_MODULE_TYPE and modules[3]["type"].endswith("Normalize")
    texts = ["the cat sat on the mat", "stock prices fell", "a storm brought snow to the city"]
    flow = Flow.load(tmp_path / "f" / report.module_path)
    with torch.no_grad():
        expected = flow.transform(torch.from_numpy(tiny_encoder.encode(texts, pre_normalize=True))).numpy()
    encoder = Encoder(tmp_path / "f", precision="fp32")
    assert np.abs(encoder.encode(texts, pre_normalize=True) - expected).max() < 1e-5
    assert np.allclose(np.linalg.norm(encoder.encode(texts), axis=1), 1.0, atol=1e-6)
    # Refitting with the same seed writes the same weights.
    fit_flow(base=tiny_model, corpus=corpus, out=tmp_path / "g", blocks=2, hidden=16, epochs=2, progress=False)
    first = load_file(str(tmp_path / "f" / "2_Flow" / "model.safetensors"))
    second = load_file(str(tmp_path / "g" / "2_Flow" / "model.safetensors"))
    assert first.keys() == second.keys() and all(np.array_equal(first[key], second[key]) for key in first)


@pytest.mark.parametrize(
    ("settings", "message"),
    [({"epochs": -1}, "epochs >= 0"), ({"learning_rate": 0.0}, "positive learning rate"), ({"blocks": 0}, "1 block")],
)
def test_bad_settings_are_one_clear_error(
    tiny_model: Path, corpus: Path, tmp_path: Path, settings: dict, message: str
) -> None:
    with pytest.raises(SearchEngineError, match=message):
        fit_flow(base=tiny_model, corpus=corpus, out=tmp_path / "f", progress=False, **settings)
    assert not (tmp_path / "f").exists()


def test_empty_corpus_and_missing_base(tiny_model: Path, corpus: Path, tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    with pytest.raises(SearchEngineError, match="no texts to fit on"):
        fit_flow(base=tiny_model, corpus=tmp_path / "empty.txt", out=tmp_path / "f", progress=False)
    with pytest.raises(SearchEngineError, match="does not exist"):
        fit_flow(base=tmp_path / "nope", corpus=corpus, out=tmp_path / "f", progress=False)


def test_constant_dimensions_do_not_break_training() -> None:
    """With dims that never vary (as in all-MiniLM-L6-v2) the likelihood is unbounded; training noise keeps it
    finite, the flow still inverts, and the constant dims map to a constant."""
    rng = np.random.default_rng(0)
    data = (rng.normal(size=(400, 16)) @ rng.normal(size=(16, 16)) * 0.1).astype(np.float32)
    data[:, 3] = 1e-33
    data[:, 7] = -1e-7
    flow, history = train_flow(data, blocks=3, hidden=16, epochs=3, batch_size=50, progress=False)
    assert all(np.isfinite(history)) and history[-1] > history[0], history
    x = torch.from_numpy(data)
    with torch.no_grad():
        z = flow.transform(x)
        assert torch.isfinite(z).all() and (flow.inverse(z) - x).abs().max() < 1e-4
