"""The torch-free document encoder: the Encoder's passages, headings, vectors and truncation count from its cached
ONNX export, and None wherever the Encoder would embed differently."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from searchengine.encoding.encoder import Encoder
from searchengine.encoding.model_source import locate_model
from searchengine.encoding.onnx_document_encoder import (
    NVIDIA_DEVICES,
    OnnxDocumentEncoder,
    gpu_may_be_visible,
    onnx_document_encoder,
)
from searchengine.encoding.speed import EncoderSpeed
from searchengine.errors import SearchEngineError

FP32 = EncoderSpeed(precision="fp32")


def light(model: Path, speed: EncoderSpeed = FP32, gpu_devices: Path = NVIDIA_DEVICES) -> OnnxDocumentEncoder | None:
    source = locate_model(model, None)
    return onnx_document_encoder(source, source.fingerprint(), speed, gpu_devices=gpu_devices)


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # the Encoder would embed on a GPU; these tests compare CPUs


def test_passages_headings_vectors_and_truncation_are_the_encoders(tiny_model: Path, sentences: list[str]) -> None:
    encoder = Encoder(tiny_model, backend="onnx", precision="fp32")  # caches the export the light one reads
    document = light(tiny_model)
    assert document is not None and document.text_tokens == encoder.text_tokens == 62
    texts = [*sentences, "the cat sat on the mat " * 40, "Zoë's café — 🙂 naïve\n\nSecond block.", " "]
    structures = [None] * len(sentences) + [None, ([0, 24], [0, 24]), None]
    for window, overlap in ((16, 4), (62, 8)):
        assert document.passage_spans(texts, window, overlap, structures) == encoder.passage_spans(
            texts, window, overlap, structures
        )
    headings = [[(0, "Installing"), (10, "A very long heading " * 20)], [], [(0, "  ")]]
    assert document.fit_headings(headings, 40) == encoder.fit_headings(headings, 40)
    assert np.abs(document.encode(texts) - encoder.encode(texts)).max() < 1e-5
    assert document.truncated == encoder.truncated == 1  # the long text, cut to 64 tokens by both
    with pytest.raises(SearchEngineError, match="do not fit this model's 62"):
        document.passage_spans(texts, 63, 8)


def test_none_where_the_encoder_would_embed_otherwise(
    tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Encoder(tiny_model, backend="onnx", precision="fp32")
    assert light(tiny_model) is not None
    assert light(tiny_model, EncoderSpeed(backend="torch")) is None  # torch embeds
    assert light(tiny_model, EncoderSpeed(precision="int8")) is None  # no int8 export cached
    gpus = tmp_path / "gpus"
    (gpus / "0000:00:1e.0").mkdir(parents=True)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    # the Encoder would embed on the GPU
    assert gpu_may_be_visible(gpus) and light(tiny_model, gpu_devices=gpus) is None
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert not gpu_may_be_visible(gpus) and light(tiny_model, gpu_devices=gpus) is not None
