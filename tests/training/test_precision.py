"""Training precision: "auto" is bf16 only on a CPU with native bf16, and losses stay float32 under autocast."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from searchengine.training.objectives.contrastive import info_nce
from searchengine.training.precision import autocast, resolve_training_precision

from searchengine.errors import SearchEngineError


def cpuinfo(tmp_path: Path, flags: str) -> Path:
    path = tmp_path / f"cpuinfo-{flags.replace(' ', '-')}"
    path.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
    return path


def test_auto_is_bf16_only_where_the_cpu_has_native_bf16(tmp_path: Path) -> None:
    assert resolve_training_precision("auto", cpuinfo(tmp_path, "sse avx2 avx512f avx512_bf16")) == "bf16"
    assert resolve_training_precision("auto", cpuinfo(tmp_path, "sse avx2 amx_bf16")) == "bf16"
    assert resolve_training_precision("auto", cpuinfo(tmp_path, "sse avx2 avx512f")) == "fp32"
    no_bf16 = cpuinfo(tmp_path, "sse avx2")
    assert resolve_training_precision("bf16", no_bf16) == "bf16" and resolve_training_precision("fp32") == "fp32"
    with pytest.raises(SearchEngineError, match="unknown training precision 'fp16'"):
        resolve_training_precision("fp16")


def test_losses_are_float32_inside_bf16_autocast() -> None:
    torch.manual_seed(0)
    anchors, positives = torch.randn(16, 32), torch.randn(16, 32)
    expected = info_nce(anchors, positives, 0.05)
    with autocast("bf16"):
        assert torch.is_autocast_enabled("cpu")
        kept = info_nce(anchors, positives, 0.05)
        rounded = info_nce.__wrapped__(anchors, positives, 0.05)  # the same loss without its float32 guard
    assert kept.dtype == torch.float32 and torch.equal(kept, expected)
    assert not torch.allclose(rounded.float(), expected, rtol=1e-4, atol=0), "bf16 similarities change the loss"
    with autocast("fp32"):
        assert not torch.is_autocast_enabled("cpu")
