"""Numeric precision of the encoder's transformer: what each device supports and what is fastest without loss.

What "auto" means, measured by benchmarks/encoding/encoding_speed.py and benchmarks/encoding/bulk_precision.py (bundled
all-MiniLM-L6-v2, STS-B) in docs/benchmarks.md#encoding-speed and the bf16 sections after it:
- A CPU without native bf16 (AMD Zen 3, AVX2): fp32. bf16 is emulated there, several times slower than fp32, and
  dynamic int8 costs STS-B Spearman.
- A CPU with AVX512-BF16 but no AMX (AMD Zen 4): ONNX Runtime fp32 for queries (always, so a query's scores do not
  depend on the batch it came in) and small calls, torch bf16 for calls whose batches hold BULK_TEXTS texts or more
  (e.g. indexing) where ONNX Runtime runs the transformer (bulk_precision); bf16 everywhere where torch must. On a
  quiet machine torch bf16 encodes batches faster than ONNX Runtime fp32 with the same STS-B score, but a one-text
  call is slower in bf16 (docs/benchmarks.md#bf16-on-a-cpu-with-avx512-bf16). On a heavily loaded machine bf16's
  batch advantage was gone, and with other work on both cores two torch threads lost to ONNX Runtime while one
  thread kept bf16 ahead; `--precision fp32` keeps ONNX Runtime for all.
- A CPU with AMX bf16 (Intel Xeon since Sapphire Rapids): the same split. There torch bf16 is faster still in
  batches and still slower for one text, and a new `searchengine query` process starts much sooner when ONNX Runtime
  answers it without importing torch (docs/benchmarks.md#bf16-on-a-cpu-with-amx).
- CUDA: fp16, the half precision every CUDA GPU with tensor cores runs at full speed and the one with more
  mantissa bits than bf16 (inference needs no bf16 range); measured on one GPU only (docs/benchmarks.md#gpu).
  `--precision fp32` keeps full precision.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from searchengine.errors import SearchEngineError

if TYPE_CHECKING:  # torch loads where a model is cast, so the command line can list the choices cheaply
    import torch

Precision = Literal["auto", "fp32", "bf16", "fp16", "int8"]
"""auto: see the module docstring; fp16 on GPUs only; int8 on CPUs only: static (calibrated) in OpenVINO where the
`openvino` extra is installed, dynamic (activations quantized per batch) in ONNX Runtime or torch otherwise."""
PRECISIONS: tuple[str, ...] = get_args(Precision)
CPUINFO = Path("/proc/cpuinfo")


@functools.cache
def cpu_flags(cpuinfo: Path = CPUINFO) -> frozenset[str]:
    """The CPU's feature flags from the kernel's list (empty where it cannot be read)."""
    try:
        flags = next((line for line in cpuinfo.read_text().splitlines() if line.startswith("flags")), "")
    except OSError:
        return frozenset()
    return frozenset(flags.partition(":")[2].split())


def cpu_has_native_bf16(cpuinfo: Path = CPUINFO) -> bool:
    """Whether the CPU computes in bf16 natively (AVX512-BF16 or AMX), read from the kernel's flag list."""
    return bool({"avx512_bf16", "amx_bf16"} & cpu_flags(cpuinfo))


def resolve_precision(
    precision: Precision, device: str, backends: Collection[str] = ("torch",), cpuinfo: Path = CPUINFO
) -> str:
    """The concrete precision `precision` means on `device`; a clear error where the device cannot run it.

    `backends`: which backends can run the transformer here ("torch", "onnx"; the Encoder's backend choice). "auto"
    is fp16 on CUDA, bf16 on a CPU with AVX512-BF16 or AMX where torch alone can run the transformer (another
    runtime, ONNX Runtime, fp32 serves small calls faster there; bulk_precision adds torch bf16 for large ones), and
    fp32 elsewhere."""
    if precision not in PRECISIONS:
        raise SearchEngineError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    cuda = device.startswith("cuda")
    if precision == "auto":
        if cuda:
            return "fp16"
        return "bf16" if set(backends) == {"torch"} and cpu_has_native_bf16(cpuinfo) else "fp32"
    if precision == "int8" and cuda:
        raise SearchEngineError("int8 runs on the CPU only; on a GPU use fp16 or bf16")
    if precision == "bf16" and cuda:
        import torch

        if not torch.cuda.is_bf16_supported():
            raise SearchEngineError("this GPU has no bf16 support; use fp16")
    if precision == "fp16" and not cuda:
        raise SearchEngineError("fp16 is for GPUs; on a CPU use fp32, bf16 or int8")
    return precision


BULK_TEXTS = 64
"""A call of at least this many texts, in batches at least this large (the default batch), is bulk work: see
bulk_precision. Queries never are (Encoder.encode_queries)."""


def bulk_precision(asked: tuple[str, str], runs: tuple[str, str], device: str, cpuinfo: Path = CPUINFO) -> str | None:
    """The precision torch encodes bulk calls (BULK_TEXTS texts or more) in, beside the runtime that serves small
    ones; None for one runtime for all. `asked` is the (precision, backend) asked for, `runs` what they resolved
    to. bf16 where both were "auto", they resolved to ONNX Runtime fp32 on the CPU, and the CPU has AVX512-BF16 or
    AMX (see the module's docstring for the measurements)."""
    if asked != ("auto", "auto") or runs != ("fp32", "onnx") or device != "cpu":
        return None
    return "bf16" if cpu_has_native_bf16(cpuinfo) else None


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
