"""Finding models: the bundled default, sentence-transformers and plain directories, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchengine.encoding.model_source import BUNDLED_NAME, bundled_model_path, locate_model
from searchengine.errors import SearchEngineError
from tests.conftest import write_tiny_model


def test_default_is_the_bundled_minilm() -> None:
    source = locate_model(None)
    assert source.name == BUNDLED_NAME and source.spec == "default"
    assert source.path == bundled_model_path() and (source.path / "model.safetensors").is_file()
    assert (source.pooling, source.normalize, source.max_seq_length) == ("mean", True, 256)


def test_sentence_transformers_directory(tiny_model: Path) -> None:
    source = locate_model(tiny_model)
    assert source.spec == str(tiny_model.resolve()) and source.transformer_path == tiny_model
    assert (source.pooling, source.normalize, source.max_seq_length) == ("mean", True, 64)


def test_transformer_in_its_own_folder(tmp_path: Path) -> None:
    model = write_tiny_model(tmp_path / "m" / "0_Transformer")
    root = model.parent
    (model / "1_Pooling").rename(root / "1_Pooling")
    modules = json.loads((model / "modules.json").read_text())
    modules[0]["path"] = "0_Transformer"
    (root / "modules.json").write_text(json.dumps(modules))
    (model / "modules.json").unlink()
    source = locate_model(root)
    assert source.transformer_path == root / "0_Transformer" and source.pooling == "mean"


def test_missing_directory() -> None:
    with pytest.raises(SearchEngineError, match="does not exist"):
        locate_model("./definitely/not/here")


def test_directory_that_is_not_a_model(tmp_path: Path) -> None:
    with pytest.raises(SearchEngineError, match="is not a model directory"):
        locate_model(tmp_path)


def test_unknown_hub_id_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SearchEngineError, match="could not be fetched"):
        locate_model("nobody-has-this/model-xyz")


@pytest.mark.parametrize("name", ["sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2", "default"])
def test_every_name_of_the_bundled_model_finds_it_offline(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    source = locate_model(name)
    assert (source.name, source.spec, source.path) == (BUNDLED_NAME, "default", bundled_model_path())


def test_a_directory_named_like_the_bundled_model_is_that_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tiny_model(tmp_path / "all-MiniLM-L6-v2")
    monkeypatch.chdir(tmp_path)
    assert locate_model("all-MiniLM-L6-v2").path == (tmp_path / "all-MiniLM-L6-v2").resolve()


def test_an_unknown_model_lists_the_names_that_work_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SearchEngineError) as raised:
        locate_model("nobody-has-this/model-xyz")
    assert f"Names that work offline: default, {BUNDLED_NAME}, all-MiniLM-L6-v2" in str(raised.value)


def test_unsupported_module_is_named(tmp_path: Path) -> None:
    model = write_tiny_model(tmp_path / "dense")
    modules = json.loads((model / "modules.json").read_text())
    modules.append({"idx": 3, "name": "3", "path": "3_LayerNorm", "type": "sentence_transformers.models.LayerNorm"})
    (model / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(SearchEngineError, match="LayerNorm"):
        locate_model(model)


def test_unsupported_pooling_config_is_named(tmp_path: Path) -> None:
    model = write_tiny_model(tmp_path / "weighted")
    config = model / "1_Pooling" / "config.json"
    config.write_text(json.dumps({"pooling_mode_mean_tokens": False, "pooling_mode_weightedmean_tokens": True}))
    with pytest.raises(SearchEngineError, match="weightedmean"):
        locate_model(model)


def test_pooling_override_is_checked(tiny_model: Path) -> None:
    assert locate_model(tiny_model, pooling="cls").pooling == "cls"
    with pytest.raises(SearchEngineError, match="unknown pooling"):
        locate_model(tiny_model, pooling="median")


@pytest.mark.parametrize(("mode", "expected"), [("cls", "cls"), (["mean_sqrt_len_tokens"], "mean_sqrt_len")])
def test_sentence_transformers_6_pooling_config(tmp_path: Path, mode: str | list[str], expected: str) -> None:
    """sentence-transformers 6 saves {"pooling_mode": ...} instead of one pooling_mode_* flag per mode."""
    model = write_tiny_model(tmp_path / "st6")
    (model / "1_Pooling" / "config.json").write_text(json.dumps({"embedding_dimension": 32, "pooling_mode": mode}))
    assert locate_model(model).pooling == expected
