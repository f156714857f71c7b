"""Precision choice: what "auto" means per device and CPU, what each device refuses, and what each precision does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from searchengine import SearchEngine
from searchengine.encoding import precision as precision_module
from searchengine.encoding.encoder import Encoder
from searchengine.encoding.precision import (
    BULK_TEXTS,
    apply_precision,
    bulk_precision,
    cpu_has_native_bf16,
    resolve_precision,
)
from searchengine.errors import SearchEngineError


def _cpuinfo(tmp_path: Path, flags: str) -> Path:
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: fpu sse2 avx2 {flags}\n\n", encoding="utf-8")
    return path


def test_native_bf16_is_read_from_the_cpu_flags(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    assert cpu_has_native_bf16(_cpuinfo(tmp_path / "a", "avx512f")) is False
    (tmp_path / "b").mkdir()
    assert cpu_has_native_bf16(_cpuinfo(tmp_path / "b", "avx512f avx512_bf16")) is True
    (tmp_path / "c").mkdir()
    assert cpu_has_native_bf16(_cpuinfo(tmp_path / "c", "amx_tile amx_bf16")) is True
    assert cpu_has_native_bf16(tmp_path / "missing") is False


@pytest.mark.parametrize(
    ("flags", "torch_only", "either", "onnx_only"),
    [
        ("fma", "fp32", "fp32", "fp32"),  # no native bf16 (Zen 3): bf16 is emulated, slow
        ("avx512f avx512_bf16", "bf16", "fp32", "fp32"),  # Zen 4: bf16 beats torch fp32, not ONNX Runtime fp32
        ("avx512_bf16 amx_tile amx_bf16", "bf16", "fp32", "fp32"),  # AMX: as Zen 4 (ONNX Runtime fp32 for queries)
    ],
)
def test_auto_follows_the_cpu_and_the_backends(
    tmp_path: Path, flags: str, torch_only: str, either: str, onnx_only: str
) -> None:
    cpuinfo = _cpuinfo(tmp_path, flags)
    backends = (["torch"], ["onnx", "torch"], ["onnx"])
    assert [resolve_precision("auto", "cpu", which, cpuinfo) for which in backends] == [torch_only, either, onnx_only]
    assert resolve_precision("auto", "cuda", ["torch"], cpuinfo) == "fp16"  # half precision on a GPU


@pytest.mark.parametrize(
    ("flags", "asked", "runs", "device", "bulk"),
    [
        ("avx512f avx512_bf16", ("auto", "auto"), ("fp32", "onnx"), "cpu", "bf16"),  # Zen 4: torch bf16 for bulk
        ("fma", ("auto", "auto"), ("fp32", "onnx"), "cpu", None),  # Zen 3: bf16 is emulated
        ("avx512_bf16 amx_bf16", ("auto", "auto"), ("fp32", "onnx"), "cpu", "bf16"),  # AMX: the same split
        ("avx512_bf16", ("fp32", "auto"), ("fp32", "onnx"), "cpu", None),  # the user's precision is kept
        ("avx512_bf16", ("auto", "onnx"), ("fp32", "onnx"), "cpu", None),  # ... and the user's backend
        ("avx512_bf16", ("auto", "auto"), ("fp16", "torch"), "cuda", None),
    ],
)
def test_bulk_work_gets_torch_bf16_only_where_it_was_measured_faster(
    tmp_path: Path, flags: str, asked: tuple[str, str], runs: tuple[str, str], device: str, bulk: str | None
) -> None:
    assert bulk_precision(asked, runs, device, _cpuinfo(tmp_path, flags)) == bulk


def test_an_encoder_on_an_avx512_bf16_cpu_encodes_bulk_calls_in_bf16_and_small_ones_in_onnx_fp32(
    tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCHENGINE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(precision_module, "cpu_flags", lambda cpuinfo=None: frozenset({"avx512f", "avx512_bf16"}))
    encoder = Encoder(tiny_model, device="cpu")
    assert (encoder.precision, encoder.backend, encoder.bulk_precision) == ("fp32", "onnx", "bf16")
    fp32 = Encoder(tiny_model, device="cpu", precision="fp32", backend="torch")
    texts = [f"document number {i} is about {word}" for i, word in enumerate(["cats", "stocks", "rain"] * 30)]
    small, bulk = texts[: BULK_TEXTS - 1], texts[:BULK_TEXTS]
    np.testing.assert_allclose(encoder.encode(small), fp32.encode(small), atol=1e-5)  # ONNX Runtime fp32
    bulk_vectors, exact = encoder.encode(bulk), fp32.encode(bulk)
    assert not np.allclose(bulk_vectors, exact, atol=1e-6), "a bulk call runs in bf16, not fp32"
    np.testing.assert_allclose(bulk_vectors, exact, atol=5e-2)
    assert bulk_vectors.dtype == np.float32
    # Small batches stay on ONNX Runtime (torch bf16 is slower there), and so do queries, whatever their number.
    np.testing.assert_allclose(encoder.encode(bulk, batch_size=8), exact, atol=1e-5)
    np.testing.assert_allclose(encoder.encode_queries(bulk), exact, atol=1e-5)


def test_a_query_scores_the_same_alone_and_in_a_batch_of_many_on_an_avx512_bf16_cpu(
    tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCHENGINE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(precision_module, "cpu_flags", lambda cpuinfo=None: frozenset({"avx512_bf16"}))
    texts = [f"note {i} about {word}" for i, word in enumerate(["cats", "stocks", "rain", "boats"] * 20)]
    engine = SearchEngine.build(texts, tmp_path / "index", encoder=Encoder(tiny_model))
    alone = engine.search("a note about rain", k=5, mode="dense")
    for hits in engine.search_batch(["a note about rain"] * BULK_TEXTS, k=5, mode="dense"):
        assert [hit.id for hit in hits] == [hit.id for hit in alone]
        # to float rounding: a batch is scored as one matrix product, one query by a scan (indexer/vectors/exact_batches.py)
        assert [hit.score for hit in hits] == pytest.approx([hit.score for hit in alone], abs=1e-6)


@pytest.mark.parametrize(
    ("precision", "device", "message"),
    [("int4", "cpu", "unknown precision"), ("int8", "cuda", "CPU only"), ("fp16", "cpu", "for GPUs")],
)
def test_unsupported_choices_are_refused_with_the_fix(precision: str, device: str, message: str) -> None:
    with pytest.raises(SearchEngineError, match=message):
        resolve_precision(precision, device)


def test_explicit_cpu_precisions_are_kept() -> None:
    assert [resolve_precision(p, "cpu") for p in ("fp32", "bf16", "int8")] == ["fp32", "bf16", "int8"]


def test_apply_precision_casts_or_quantizes() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    assert apply_precision(model, "fp32") is model
    assert (
        next(apply_precision(torch.nn.Sequential(torch.nn.Linear(4, 4)), "bf16").parameters()).dtype == torch.bfloat16
    )
    quantized = apply_precision(torch.nn.Sequential(torch.nn.Linear(4, 4)), "int8")
    assert "Quantized" in type(quantized[0]).__name__ or "quantized" in type(quantized[0]).__module__


@pytest.mark.parametrize("precision", ["bf16", "int8"])
def test_lower_precisions_stay_close_to_fp32(
    tiny_model: Path, sentences: list[str], precision: str, short_calibration: Path
) -> None:
    """int8 on a CPU is OpenVINO's where it is installed, calibrated here on the test texts (short_calibration)."""
    fp32 = Encoder(tiny_model, precision="fp32").encode(sentences)
    lower = Encoder(tiny_model, precision=precision)
    assert lower.precision == precision
    vectors = lower.encode(sentences)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    cosines = (vectors * fp32).sum(1)
    assert cosines.min() > 0.95 and not np.allclose(vectors, fp32, atol=1e-7)


@pytest.mark.parametrize("pooling", ["mean", "prompt"])
def test_bf16_gives_float32_vectors_close_to_fp32(tiny_model: Path, sentences: list[str], pooling: str) -> None:
    """bf16 runs on every CPU (natively or emulated) and comes out as float32 numpy, whatever the pooling."""
    fp32 = Encoder(tiny_model, pooling=pooling, precision="fp32").encode(sentences)
    bf16 = Encoder(tiny_model, pooling=pooling, precision="bf16")
    assert (bf16.precision, bf16.backend) == ("bf16", "torch")
    vectors = bf16.encode(sentences, batch_size=5)
    assert isinstance(vectors, np.ndarray) and vectors.dtype == np.float32 and vectors.shape == fp32.shape
    assert (vectors * fp32).sum(1).min() > 0.99
