"""Which runtime runs the encoder's transformer: the encoder backends, each one class registered once, what "auto"
picks, and why a backend cannot run a given setup. Free of torch and ONNX Runtime imports (a backend loads its
runtime where it wraps a model), so the command line can list the choices cheaply. A new backend lands in one module
plus one registration: its line in BUILT_IN_BACKENDS, or a `register_backend` call."""

from __future__ import annotations

import importlib
import importlib.util
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol

from searchengine.encoding.pooling import NEEDS_ALL_LAYERS
from searchengine.encoding.precision import resolve_precision
from searchengine.encoding.prompt_template import PROMPT_POOLING
from searchengine.errors import SearchEngineError


class LoadingEncoder(Protocol):
    """What a backend reads of the Encoder it loads a runtime for (searchengine.encoding.encoder.Encoder), named here
    so that this registry, which the Encoder asks, does not import the Encoder back."""

    model: Any
    tokenizer: Any
    max_seq_length: int
    fingerprint: str
    input_names: list[str]
    precision: str
    threads: int | None

Backend = str
""""auto" or a registered backend's name (backend_choices): torch; onnx (ONNX Runtime, the optional `onnx` extra);
openvino (the optional `openvino` extra); auto: see resolve_backend."""
AUTO = "auto"
BUILT_IN_BACKENDS = (
    ("searchengine.encoding.torch_backend", "TorchBackend"),
    ("searchengine.encoding.onnx_backend", "OnnxBackend"),
    ("searchengine.encoding.openvino_backend", "OpenVinoBackend"),
)
"""The built-in backends' modules and classes, registered on first use in the order the choices are offered."""


class EncoderBackend(ABC):
    """One runtime for the Encoder's transformer. The class attributes say what it runs and when "auto" picks it;
    `problem` says why it cannot run a setup, and `load` wraps the Encoder's torch model in it."""

    name: ClassVar[str]
    """What --backend and `Encoder(backend=...)` call it."""
    precisions: ClassVar[tuple[str, ...]]
    """The concrete precisions it runs (searchengine.encoding.precision)."""
    cpu_only: ClassVar[bool] = True
    """Whether it runs on the CPU only (the Encoder's default device is then the CPU, even on a GPU machine)."""
    computes_in_torch: ClassVar[bool] = False
    """Whether it runs the model in torch, whose process-wide thread count the Encoder then sets to its `threads`
    while encoding (a runtime with its own thread setting takes `encoder.threads` in `load`)."""
    auto_precisions: ClassVar[tuple[str, ...]] = ()
    """The concrete precisions "auto" picks it for, where it is installed and can run the model (none: only when
    asked for by name)."""
    auto_rank: ClassVar[int] = 0
    """Where "auto" tries it: lower first, before the backends ranked after it."""

    def installed(self) -> bool:
        """Whether its runtime is installed (checked without importing it)."""
        return True

    def problem(self, device: str, pooling: str, precision: str) -> str | None:  # noqa: ARG002 (none here)
        """Why it cannot run a model pooled by `pooling` in the concrete `precision` on `device`; None where it can."""
        return None

    @abstractmethod
    def load(self, encoder: LoadingEncoder) -> Any:  # noqa: ANN401 (called like a Hugging Face model)
        """`encoder.model` (a Hugging Face torch model, in `encoder.precision` once resolved) run in this runtime:
        an object called like the model, returning at least its `last_hidden_state`."""


def last_layer_cpu_problem(backend: EncoderBackend, device: str, pooling: str, precision: str) -> str | None:
    """Why `backend`, a CPU runtime of the transformer's last layer, cannot run a model pooled by `pooling` in
    `precision` on `device`; None where it can."""
    if device != "cpu":
        return f"the {backend.name} backend runs on the CPU; use the torch backend on a GPU"
    if pooling == PROMPT_POOLING or pooling in NEEDS_ALL_LAYERS:
        return f"the {backend.name} backend pools the last layer only, not {pooling!r}; use the torch backend for it"
    if precision not in backend.precisions:
        runs = " or ".join(backend.precisions)
        return f"the {backend.name} backend runs {runs}, not {precision}; use the torch backend"
    return None


def modules_installed(*names: str) -> bool:
    """Whether every module of `names` is installed (checked without importing them)."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in names)
    except (ImportError, ValueError, AttributeError):  # a broken or blocked installation counts as missing
        return False


_BACKENDS: dict[str, EncoderBackend] = {}
"""The registered backends by name, in the order they were registered (the built-in ones first)."""


def register_backend(backend: EncoderBackend) -> EncoderBackend:
    """Make `backend` one that an Encoder may be asked to run in; refused when its name is taken."""
    backends = registered_backends()
    if backend.name == AUTO or backend.name in backends:
        raise SearchEngineError(f"an encoder backend named {backend.name!r} is already registered")
    backends[backend.name] = backend
    return backend


def registered_backends() -> dict[str, EncoderBackend]:
    """The registered backends by name, the built-in ones first (registered on the first call)."""
    if not _BACKENDS:
        for module, name in BUILT_IN_BACKENDS:
            backend = getattr(importlib.import_module(module), name)()
            _BACKENDS[backend.name] = backend
    return _BACKENDS


def backend_choices() -> tuple[str, ...]:
    """What a backend may be asked for: "auto", then the registered backends' names."""
    return (AUTO, *registered_backends())


def runs_on_cpu_only(backend: str) -> bool:
    """Whether the backend called `backend` runs on the CPU only (False for "auto" and unknown names)."""
    known = registered_backends().get(backend)
    return known is not None and known.cpu_only


def resolve_backend(backend: str, device: str, pooling: str, precision: str) -> str:
    """The backend that runs a model pooled by `pooling` in the concrete `precision` on `device`: the one asked for
    (a clear error where it cannot run); for "auto", the first by auto_rank whose auto_precisions hold `precision`,
    that is installed and can run it: openvino for int8, onnx otherwise (docs/benchmarks.md, Static int8 and
    OpenVINO), torch else."""
    backends = registered_backends()
    if backend == AUTO:
        ranked = sorted(backends.values(), key=lambda each: each.auto_rank)
        return next(
            each.name
            for each in ranked
            if precision in each.auto_precisions
            and each.problem(device, pooling, precision) is None
            and each.installed()
        )
    if backend not in backends:
        raise SearchEngineError(f"unknown backend {backend!r}; choose one of {', '.join(backend_choices())}")
    if problem := backends[backend].problem(device, pooling, precision):
        raise SearchEngineError(problem)
    return backend


def resolve_runtime(precision: str, backend: str, device: str, pooling: str) -> tuple[str, str]:
    """The concrete (precision, backend) a model pooled by `pooling` runs in on `device`. "auto" precision depends
    on which backends could run the model in fp32 here (resolve_precision), so the two are resolved together."""
    if backend != AUTO:
        candidates: tuple[str, ...] = (backend,)
    elif (fp32 := resolve_backend(AUTO, device, pooling, "fp32")) != "torch":
        candidates = (fp32, "torch")
    else:
        candidates = ("torch",)
    concrete = resolve_precision(precision, device, candidates)
    return concrete, resolve_backend(backend, device, pooling, concrete)
