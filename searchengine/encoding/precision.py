"""Numeric precision of the encoder's transformer: what each device supports and what is fastest without loss.

Measured on this project's benchmark machine (docs/benchmarks.md, benchmarks/encoding_speed.py): on a CPU
without native bf16 (AMD Zen 3, AVX2) bf16 runs at a fraction of fp32's speed and dynamic int8 costs more
than 0.1 STS-B Spearman, so "auto" is fp32 there. On CPUs whose flags include avx512_bf16 or amx_bf16, "auto"
is bf16 (the issue's measurement on such a CPU: about 2.4x fp32, no loss; not re-measured here). On CUDA,
"auto" is fp32 until fp16/bf16 are measured on a GPU.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from searchengine.errors import SearchEngineError

if TYPE_CHECKING:  # torch loads where a model is cast, so the command line can list the choices cheaply
    import torch

Precision = Literal["auto", "fp32", "bf16", "fp16", "int8"]
"""auto: bf16 on CPUs with native bf16, else fp32; fp16 on GPUs only; int8 (dynamic quantization) on CPUs only."""
PRECISIONS: tuple[str, ...] = get_args(Precision)


@functools.cache
def cpu_has_native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU computes in bf16 natively (AVX512-BF16 or AMX), read from the kernel's flag list."""
    try:
        flags = next((line for line in cpuinfo.read_text().splitlines() if line.startswith("flags")), "")
    except OSError:
        return False
    return bool({"avx512_bf16", "amx_bf16"} & set(flags.split()))


def resolve_precision(precision: Precision, device: str) -> str:
    """The concrete precision `precision` means on `device`; a clear error where the device cannot run it."""
    if precision not in PRECISIONS:
        raise SearchEngineError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    cuda = device.startswith("cuda")
    if precision == "auto":
        return "bf16" if not cuda and cpu_has_native_bf16() else "fp32"
    if precision == "int8" and cuda:
        raise SearchEngineError("int8 (dynamic quantization) runs on the CPU only; on a GPU use fp16 or bf16")
    if precision == "bf16" and cuda:
        import torch

        if not torch.cuda.is_bf16_supported():
            raise SearchEngineError("this GPU has no bf16 support; use fp16")
    if precision == "fp16" and not cuda:
        raise SearchEngineError("fp16 is for GPUs; on a CPU use fp32, bf16 or int8")
    return precision


def apply_precision(model: torch.nn.Module, precision: str) -> torch.nn.Module:
    """The model cast (bf16, fp16) or dynamically quantized (int8: every Linear layer's weights) to `precision`."""
    import torch

    dtypes = {"bf16": torch.bfloat16, "fp16": torch.float16}
    if precision in dtypes:
        return model.to(dtypes[precision])
    if precision == "int8":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.ao's deprecation notice
            return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    return model
