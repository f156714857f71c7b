"""BERT-flow's network: invertible, exact log-determinant, save/load exact, clear errors on bad folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from searchengine.encoding.flow import Flow
from searchengine.encoding.model_source import FLOW_MODULE_TYPE
from searchengine.errors import SearchEngineError


def _random_flow(dimension: int = 12, blocks: int = 4, hidden: int = 16, seed: int = 0) -> Flow:
    """A flow whose couplings and actnorms are not the identity (a fresh one starts as nearly the identity)."""
    torch.manual_seed(seed)
    flow = Flow(dimension, blocks, hidden, seed)
    with torch.no_grad():
        for parameter in flow.parameters():
            parameter.normal_(0.0, 0.3)
    return flow.eval()


def test_type_name_is_the_one_modules_json_uses() -> None:
    assert f"{Flow.__module__}.{Flow.__qualname__}" == FLOW_MODULE_TYPE


def test_inverse_recovers_the_input() -> None:
    flow = _random_flow()
    x = torch.randn(64, 12) * 3 + 1
    with torch.no_grad():
        z = flow.transform(x)
        assert not torch.allclose(z, x, atol=1e-2)
        assert (flow.inverse(z) - x).abs().max() < 1e-4


def test_log_determinant_matches_the_jacobian() -> None:
    flow = _random_flow(dimension=6, blocks=3, hidden=8).double()
    x = torch.randn(6, dtype=torch.float64)
    jacobian = torch.autograd.functional.jacobian(lambda row: flow.transform(row[None])[0], x)
    _, log_det = flow.forward_with_log_det(x[None])
    assert torch.allclose(log_det[0], torch.linalg.slogdet(jacobian).logabsdet, atol=1e-9)


def test_permutations_depend_on_the_seed_only() -> None:
    first, again, other = Flow(10, 3, 4, seed=5), Flow(10, 3, 4, seed=5), Flow(10, 3, 4, seed=6)
    assert all(torch.equal(a.permutation, b.permutation) for a, b in zip(first.blocks, again.blocks))
    assert not all(torch.equal(a.permutation, b.permutation) for a, b in zip(first.blocks, other.blocks))


def test_save_load_reproduces_outputs_exactly(tmp_path: Path) -> None:
    flow = _random_flow(seed=3)
    flow.save(tmp_path / "2_Flow")
    loaded = Flow.load(tmp_path / "2_Flow")
    x = torch.randn(32, 12)
    with torch.no_grad():
        assert torch.equal(loaded.transform(x), flow.transform(x))
        assert torch.equal(loaded.inverse(x), flow.inverse(x))
    assert json.loads((tmp_path / "2_Flow" / "config.json").read_text()) == flow.get_config_dict()


def test_sentence_transformers_module_contract() -> None:
    flow = _random_flow()
    x = torch.randn(4, 12)
    features = {"sentence_embedding": x.clone(), "token_embeddings": torch.zeros(4, 3, 12)}
    with torch.no_grad():
        out = flow(features)
        assert torch.equal(out["sentence_embedding"], flow.transform(x))
    assert "token_embeddings" in out and flow.get_embedding_dimension() == 12


def test_load_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(SearchEngineError, match="cannot load the flow"):
        Flow.load(tmp_path / "missing")
    _random_flow().save(tmp_path / "f")
    config = json.loads((tmp_path / "f" / "config.json").read_text())
    (tmp_path / "f" / "config.json").write_text(json.dumps({**config, "blocks": 2}))
    with pytest.raises(SearchEngineError, match="does not match its config.json"):
        Flow.load(tmp_path / "f")
    (tmp_path / "f" / "config.json").write_text(json.dumps({**config, "hidden": 5}))
    with pytest.raises(SearchEngineError, match="wrong shapes"):
        Flow.load(tmp_path / "f")
