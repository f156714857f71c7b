"""The one Hugging Face loading path: directories and Hub ids, safetensors only, one clear error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from searchengine.encoding import hf_loading
from searchengine.encoding.encoder import Encoder
from searchengine.encoding.hf_loading import PARALLELISM, load_pretrained, model_directory, tokenize_on_every_core
from searchengine.errors import SearchEngineError


def test_a_model_directory_is_used_as_it_is(tiny_model: Path) -> None:
    assert model_directory(str(tiny_model)) == tiny_model.resolve()


@pytest.mark.parametrize("name", ["./definitely/not/here", "~/not-here", "a/b/c"])
def test_a_missing_directory_is_not_looked_up_on_the_hub(name: str) -> None:
    with pytest.raises(SearchEngineError, match="does not exist; pass an existing directory or a Hub id"):
        model_directory(name)


def test_an_unknown_hub_id_offline_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SearchEngineError, match="could not be fetched from the Hugging Face Hub .* pass a model"):
        model_directory("nobody-has-this/model-xyz")


def test_tokenizer_and_model(tiny_model: Path) -> None:
    tokenizer, model = load_pretrained(tiny_model, "the model")
    assert tokenizer.is_fast and type(model).__name__ == "BertModel"
    tokenizer, model = load_pretrained(tiny_model, "the model", "AutoModelForSequenceClassification", num_labels=1)
    assert type(model).__name__ == "BertForSequenceClassification" and model.config.num_labels == 1


def test_pickled_weights_are_refused(tiny_model: Path, tmp_path: Path) -> None:
    """A directory with only pytorch_model.bin (a pickle, which can run code when loaded) does not load."""
    _, model = load_pretrained(tiny_model, "the model")
    pickled = tmp_path / "pickled"
    shutil.copytree(tiny_model, pickled)
    (pickled / "model.safetensors").unlink()
    torch.save(model.state_dict(), pickled / "pytorch_model.bin")
    with pytest.raises(SearchEngineError, match=r"cannot load the base model in .*pickled: .*safetensors weights only"):
        load_pretrained(pickled, "the base model")


def test_weights_cut_short_are_one_error(tiny_model: Path, tmp_path: Path) -> None:
    """A model.safetensors cut short (an interrupted copy) was a SafetensorError traceback from `eval sts`."""
    cut = tmp_path / "cut"
    shutil.copytree(tiny_model, cut)
    (cut / "model.safetensors").write_bytes((tiny_model / "model.safetensors").read_bytes()[:1000])
    with pytest.raises(SearchEngineError, match=r"cannot load the model in .*cut: its safetensors weights are damaged"):
        load_pretrained(cut, "the model")


def test_a_directory_without_a_tokenizer_is_one_error(tiny_model: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(tiny_model / "config.json", bare / "config.json")
    with pytest.raises(SearchEngineError, match=r"cannot load the cross-encoder in .*bare: "):
        load_pretrained(bare, "the cross-encoder", "AutoModelForSequenceClassification")


def test_parallel_tokenizing_is_turned_on_unless_the_user_chose(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hf_loading, "USER_SET_PARALLELISM", False)
    monkeypatch.setenv(PARALLELISM, "false")  # searchengine's own default
    tokenize_on_every_core()
    assert hf_loading.os.environ[PARALLELISM] == "true"
    monkeypatch.setattr(hf_loading, "USER_SET_PARALLELISM", True)
    monkeypatch.setenv(PARALLELISM, "0")
    tokenize_on_every_core()
    assert hf_loading.os.environ[PARALLELISM] == "0"


def test_an_encoder_on_the_cpu_tokenizes_on_one_core(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only an encoder on a GPU turns parallel tokenizing on: on a CPU the cores run the model."""
    monkeypatch.setattr(hf_loading, "USER_SET_PARALLELISM", False)
    monkeypatch.delenv(PARALLELISM, raising=False)
    Encoder(tiny_model, device="cpu")
    assert hf_loading.os.environ[PARALLELISM] == "false"
