"""ONNX Runtime as the encoder's transformer (the optional `onnx` extra): export once, cache, run.

The transformer (not the tokenizer, pooling or post-processing, which stay in the Encoder) is exported with
torch.onnx.export (eager attention, so that ONNX Runtime's transformer optimizer can fuse each attention block
into one op, with the layer norms and GELUs; BERT-family models only) and, for int8, quantized with
onnxruntime.quantization.quantize_dynamic (per-channel int8 weights, activations quantized at run time).
Exports are cached by the model's fingerprint and the precision, so the export (seconds) happens once per
model and machine. Beside each export a small JSON record says what it claims to be (the full model fingerprint,
precision, opset, input names) and its sha256; an export whose record is missing, names something else or
does not match its bytes is exported again rather than run.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from searchengine.encoding.backend import EncoderBackend, LoadingEncoder, last_layer_cpu_problem, modules_installed
from searchengine.encoding.onnx_cache import (
    OPSET,
    cached_export_is_valid,
    export_path,
    file_sha256,
    import_onnxruntime,
    open_session,
    record_path,
)
from searchengine.errors import SearchEngineError

if TYPE_CHECKING:  # numpy and torch load where a model is exported or run, so the command line lists backends cheaply
    import torch


EXPORTING = threading.Lock()
"""Held while a cached export is looked for and, if missing, made: torch.onnx.export keeps global state, and
threads exporting at once (a server's first requests to collections, each loading its model) failed with
"GLOBALS.in_onnx_export must be False"; a thread that waited then finds the export made."""

FUSABLE_MODEL_TYPES = frozenset({"bert", "roberta", "xlm-roberta"})
"""Architectures onnxruntime.transformers.optimizer fuses as model_type="bert"; others run unfused."""


class OnnxTransformer:
    """Runs an exported transformer in ONNX Runtime; called like the Hugging Face model it replaces."""

    runs_concurrently = True
    """ONNX Runtime's InferenceSession.run may be called from several threads at once (the Encoder then lets a
    server's queries run beside the batch of a write instead of waiting for it)."""

    def __init__(
        self, model: torch.nn.Module, fingerprint: str, input_names: list[str], precision: str, threads: int | None
    ) -> None:
        import_onnxruntime()  # its clear error before an export that needs it
        self.precision = precision
        self.input_names = input_names
        self.path = export_path(fingerprint, precision)
        self.identity = {"fingerprint": fingerprint, "precision": precision, "opset": OPSET, "inputs": input_names}
        with EXPORTING:
            if not cached_export_is_valid(self.path, self.identity):
                try:
                    self._export(model)
                except OSError as exc:
                    raise SearchEngineError(
                        f"cannot write the ONNX export to {self.path.parent} ({exc.strerror or exc}); set "
                        "SEARCHENGINE_CACHE to a writable folder, or use the torch backend"
                    ) from None
        self.session = open_session(self.path, threads)

    def _export(self, model: torch.nn.Module) -> None:
        import torch

        """Export (and quantize) into a temporary file beside the cache entry, then rename it into place."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=self.path.parent, prefix=".export-") as scratch:
            fp32 = Path(scratch) / "fp32.onnx"
            example = tuple(torch.ones((2, 8), dtype=torch.long) for _ in self.input_names)
            axes = {name: {0: "batch", 1: "tokens"} for name in [*self.input_names, "last_hidden_state"]}
            attention = model.config._attn_implementation  # noqa: SLF001 (transformers' own switch)
            fusable = model.config.model_type in FUSABLE_MODEL_TYPES
            if fusable:
                model.set_attn_implementation("eager")  # SDPA exports as ops the fusion does not recognise
            try:
                with warnings.catch_warnings(), torch.no_grad():
                    warnings.simplefilter("ignore")  # tracer and deprecation notices about the legacy exporter
                    torch.onnx.export(
                        _last_hidden_state(model, self.input_names).eval(),
                        example,
                        str(fp32),
                        input_names=self.input_names,
                        output_names=["last_hidden_state"],
                        dynamic_axes=axes,
                        opset_version=OPSET,
                        dynamo=False,
                    )
            finally:
                if fusable:
                    model.set_attn_implementation(attention)
            final = fp32
            if fusable:
                from onnxruntime.transformers.optimizer import optimize_model

                final = Path(scratch) / "fused.onnx"
                fused = optimize_model(str(fp32), "bert", model.config.num_attention_heads, model.config.hidden_size)
                fused.save_model_to_file(str(final))
            if self.precision == "int8":
                from onnx import TensorProto
                from onnxruntime.quantization import QuantType, quantize_dynamic

                source, final = final, Path(scratch) / "int8.onnx"
                with _quiet_root_logger():  # its advice to run a pre-processing step logs at WARNING
                    quantize_dynamic(
                        str(source),
                        str(final),
                        weight_type=QuantType.QInt8,
                        per_channel=True,
                        extra_options={"DefaultTensorType": TensorProto.FLOAT},  # fused ops have no shape inference
                    )
            os.replace(final, self.path)
            record = Path(scratch) / "record.json"
            record.write_text(
                json.dumps(
                    {"identity": self.identity, "size": self.path.stat().st_size, "sha256": file_sha256(self.path)}
                ),
                encoding="utf-8",
            )
            os.replace(record, record_path(self.path))

    def __call__(self, output_hidden_states: bool = False, **inputs: torch.Tensor) -> SimpleNamespace:  # noqa: ARG002
        """The last layer's states; `output_hidden_states` is always False here (the Encoder never asks for all
        layers from this backend)."""
        import numpy as np
        import torch

        feeds = {name: inputs[name].cpu().numpy().astype(np.int64) for name in self.input_names}
        (last,) = self.session.run(["last_hidden_state"], feeds)
        return SimpleNamespace(last_hidden_state=torch.from_numpy(last))


def _last_hidden_state(model: torch.nn.Module, input_names: list[str]) -> torch.nn.Module:
    """The Hugging Face model with positional inputs and one output, as torch.onnx.export wants it."""
    import torch

    class LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return self.model(**dict(zip(input_names, inputs))).last_hidden_state

    return LastHiddenState()


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def onnxruntime_installed() -> bool:
    """Whether the `onnx` extra is installed (checked without importing it)."""
    return modules_installed("onnxruntime", "onnx")


class OnnxBackend(EncoderBackend):
    """The transformer exported to ONNX and run in ONNX Runtime on the CPU (OnnxTransformer)."""

    name = "onnx"
    precisions = ("fp32", "int8")
    auto_precisions = precisions
    auto_rank = 1
    """After openvino, which "auto" prefers for int8 (closer to fp32 than ONNX Runtime's dynamic int8, and as fast)."""

    def installed(self) -> bool:
        return onnxruntime_installed()

    def problem(self, device: str, pooling: str, precision: str) -> str | None:
        return last_layer_cpu_problem(self, device, pooling, precision)

    def load(self, encoder: LoadingEncoder) -> OnnxTransformer:
        return OnnxTransformer(encoder.model, encoder.fingerprint, encoder.input_names, encoder.precision, encoder.threads)
