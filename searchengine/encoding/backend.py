"""Which runtime runs the encoder's transformer: the choices, what "auto" picks, and why ONNX Runtime cannot run a
given setup. Free of torch and ONNX Runtime imports, so the command line can list the choices cheaply."""

from __future__ import annotations

import importlib.util
from typing import Literal, get_args

from searchengine.encoding.pooling import NEEDS_ALL_LAYERS
from searchengine.encoding.precision import cpu_has_native_bf16, resolve_precision
from searchengine.encoding.prompt_template import PROMPT_POOLING
from searchengine.errors import SearchEngineError

Backend = Literal["auto", "torch", "onnx", "openvino"]
"""torch; onnx (ONNX Runtime, the optional `onnx` extra); openvino (the optional `openvino` extra); auto: onnx where
it can run the model and is installed."""
BACKENDS: tuple[str, ...] = get_args(Backend)
ONNX_PRECISIONS = ("fp32", "int8")
"""The concrete precisions the onnx backend runs (searchengine.encoding.onnx_backend)."""
OPENVINO_PRECISIONS = ("fp32", "bf16", "int8")
"""The concrete precisions the openvino backend runs (searchengine.encoding.openvino_backend; bf16 only on a CPU that
computes in bf16 natively; int8 is static, calibrated)."""
RUNTIME_PRECISIONS = {"onnx": ONNX_PRECISIONS, "openvino": OPENVINO_PRECISIONS}


def onnxruntime_installed() -> bool:
    """Whether the `onnx` extra is installed (checked without importing it)."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "onnx"))
    except (ImportError, ValueError, AttributeError):  # a broken or blocked installation counts as missing
        return False


def openvino_installed() -> bool:
    """Whether the `openvino` extra is installed (checked without importing it)."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in ("openvino", "nncf"))
    except (ImportError, ValueError, AttributeError):
        return False


def runtime_problem(backend: str, device: str, pooling: str, precision: str) -> str | None:
    """Why the onnx or openvino `backend` cannot run a model pooled by `pooling` in `precision` on `device`; None
    where it can."""
    if device != "cpu":
        return f"the {backend} backend runs on the CPU; use the torch backend on a GPU"
    if pooling == PROMPT_POOLING or pooling in NEEDS_ALL_LAYERS:
        return f"the {backend} backend pools the last layer only, not {pooling!r}; use the torch backend for it"
    runs = RUNTIME_PRECISIONS[backend]
    if precision not in runs:
        return f"the {backend} backend runs {' or '.join(runs)}, not {precision}; use the torch backend"
    if backend == "openvino" and precision == "bf16" and not cpu_has_native_bf16():
        return "OpenVINO runs bf16 only on a CPU with AVX512-BF16 or AMX, which this one lacks; use fp32"
    return None


def resolve_backend(backend: str, device: str, pooling: str, precision: str) -> str:
    """The backend that runs a model pooled by `pooling` in the concrete `precision` on `device`: onnx or openvino
    where asked for (a clear error where it cannot run); for "auto", openvino for int8 and onnx otherwise where they
    can run it and are installed (docs/benchmarks.md, Static int8 and OpenVINO), torch else."""
    if backend not in BACKENDS:
        raise SearchEngineError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if backend == "auto":
        calibrated = precision == "int8" and runtime_problem("openvino", device, pooling, precision) is None
        if calibrated and openvino_installed():  # closer to fp32 than ONNX Runtime's dynamic int8, and as fast
            return "openvino"
        problem = runtime_problem("onnx", device, pooling, precision)
        return "onnx" if problem is None and onnxruntime_installed() else "torch"
    if backend in RUNTIME_PRECISIONS and (problem := runtime_problem(backend, device, pooling, precision)):
        raise SearchEngineError(problem)
    return backend


def resolve_runtime(precision: str, backend: str, device: str, pooling: str) -> tuple[str, str]:
    """The concrete (precision, backend) a model pooled by `pooling` runs in on `device`. "auto" precision depends
    on which backends could run the model in fp32 here (resolve_precision), so the two are resolved together."""
    if backend != "auto":
        candidates: tuple[str, ...] = (backend,)
    elif resolve_backend("auto", device, pooling, "fp32") == "onnx":
        candidates = ("onnx", "torch")
    else:
        candidates = ("torch",)
    concrete = resolve_precision(precision, device, candidates)
    return concrete, resolve_backend(backend, device, pooling, concrete)
