"""OpenVINO as the encoder's transformer (the optional `openvino` extra): convert once, calibrate once, cache, run.

The transformer (not the tokenizer, pooling or post-processing, which stay in the Encoder) is converted from torch
with openvino.convert_model. For int8 it is then quantized statically with NNCF (int8 weights and activations,
the activation ranges calibrated once on the Wikipedia sentences and paragraphs bundled in calibration_text.txt,
never on the user's texts and never downloaded; the transformer preset, with SmoothQuant). Conversions are cached
by the model's fingerprint and the precision, like the ONNX exports (searchengine.encoding.onnx_cache): beside each
model (an .xml graph and a .bin of weights) a small JSON record says what it claims to be (model fingerprint,
precision, inputs, the calibration text's sha256) and each file's size and sha256. Files are read only when they
are regular files of the recorded size, and the bytes read are the bytes checked and run, so a truncated, flipped,
foreign or swapped cache entry is converted again rather than run.

OpenVINO and NNCF send usage telemetry unless a consent file says no; searchengine imports them with the telemetry
package blocked, so they fall back to their own no-op stubs and nothing leaves the machine.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import TYPE_CHECKING, Any

from searchengine.encoding.backend import EncoderBackend, LoadingEncoder, last_layer_cpu_problem, modules_installed
from searchengine.encoding.cache_location import cache_root
from searchengine.encoding.precision import cpu_has_native_bf16
from searchengine.errors import SearchEngineError

if TYPE_CHECKING:  # numpy and torch load where a model is converted or run, so the command line lists backends cheaply
    import torch


CALIBRATION_TEXT = Path(__file__).with_name("calibration_text.txt")
"""Texts whose activations set int8's ranges: one a line, lines starting with # are its source notes."""
MAX_RECORD_BYTES = 64 * 1024
MAX_MODEL_BYTES = 16 * 1024**3
"""Larger than any encoder this backend runs; a cached file claiming more is not read."""
FILES = ("xml", "bin")


def import_openvino() -> ModuleType:
    """OpenVINO, imported with its telemetry blocked, or a SearchEngineError that says how to install it."""
    with _no_telemetry():
        try:
            import openvino
        except ImportError:
            raise SearchEngineError(
                "the openvino backend needs OpenVINO: pip install 'searchengine[openvino]' (or .venv/bin/pip install "
                "openvino nncf), or use the torch or onnx backend"
            ) from None
    return openvino


def cache_directory() -> Path:
    """Where converted models are kept: cache_root()/openvino."""
    return cache_root() / "openvino"


def calibration_texts() -> list[str]:
    """The bundled calibration texts (comment and blank lines left out)."""
    lines = CALIBRATION_TEXT.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


class OpenVinoTransformer:
    """Runs a converted transformer in OpenVINO on the CPU; called like the Hugging Face model it replaces.
    `tokenizer` and `max_length` (the Encoder's limit) prepare the calibration texts as the Encoder prepares texts."""

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: Any,  # noqa: ANN401 (a transformers fast tokenizer)
        max_length: int,
        fingerprint: str,
        input_names: list[str],
        precision: str,
        threads: int | None,
    ) -> None:
        self.openvino = import_openvino()
        self.graph_precision = "int8" if precision == "int8" else "fp32"  # bf16 runs the fp32 graph in bf16
        self.input_names = input_names
        stem = cache_directory() / f"{fingerprint[:24]}-{self.graph_precision}"
        self.paths = {kind: stem.with_suffix(f".{kind}") for kind in FILES}
        self.record = stem.with_suffix(".json")
        self.identity: dict[str, Any] = {
            "fingerprint": fingerprint,
            "precision": self.graph_precision,
            "inputs": input_names,
        }
        if self.graph_precision == "int8":
            self.identity["calibration"] = hashlib.sha256(CALIBRATION_TEXT.read_bytes()).hexdigest()
            self.identity["calibration_tokens"] = max_length
        graph = self._read_cached()
        if graph is None:
            try:
                self._convert(model, tokenizer, max_length)
            except OSError as exc:
                raise SearchEngineError(
                    f"cannot write the OpenVINO model to {stem.parent} ({exc.strerror or exc}); set "
                    "SEARCHENGINE_CACHE to a writable folder, or use the torch backend"
                ) from None
            graph = self._read_cached()
            if graph is None:
                raise SearchEngineError(f"the OpenVINO model just written to {stem.parent} does not read back")
        inference = "bf16" if precision == "bf16" else "f32"  # int8: what is not quantized runs in fp32
        config: dict[str, Any] = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": inference}
        if threads:
            config["INFERENCE_NUM_THREADS"] = threads
        self.request = self.openvino.Core().compile_model(graph, "CPU", config).create_infer_request()

    def _read_cached(self) -> Any:  # noqa: ANN401 (an openvino.Model, or None)
        """The cached model, or None where its record is missing, names something else, or does not match the
        bytes read (which are the bytes then run). Only regular files, never links, and each file's size is
        checked against the record before a byte of it is read."""
        try:
            if _regular_size(self.record) > MAX_RECORD_BYTES:
                return None
            record = json.loads(self.record.read_text(encoding="utf-8"))
            claimed = record.get("identity") if isinstance(record, dict) else None
            files = record.get("files") if isinstance(record, dict) else None
            if not (isinstance(claimed, dict) and isinstance(files, dict)):
                return None
            if any(claimed.get(key) != value for key, value in self.identity.items()):
                return None
            data = {}
            for kind, path in self.paths.items():
                entry = files.get(kind)
                size = _regular_size(path)
                if not isinstance(entry, dict) or entry.get("size") != size or size > MAX_MODEL_BYTES:
                    return None
                data[kind] = path.read_bytes()
                if hashlib.sha256(data[kind]).hexdigest() != entry.get("sha256"):
                    return None
            import numpy as np

            weights = self.openvino.Tensor(np.frombuffer(data["bin"], dtype=np.uint8).copy())
            return self.openvino.Core().read_model(data["xml"].decode("utf-8"), weights)
        except (OSError, ValueError, RuntimeError):  # RuntimeError: OpenVINO cannot parse what passed the checks
            return None

    def _convert(self, model: torch.nn.Module, tokenizer: Any, max_length: int) -> None:  # noqa: ANN401
        import torch

        """Convert (and calibrate) into a scratch folder beside the cache entry, then rename the files into place,
        the record last."""
        ov = self.openvino
        directory = self.record.parent
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=directory, prefix=".convert-") as scratch:
            example = {name: torch.ones((2, 8), dtype=torch.long) for name in self.input_names}
            shapes = [(name, ov.PartialShape([-1, -1]), ov.Type.i64) for name in self.input_names]
            with warnings.catch_warnings(), torch.no_grad(), _no_telemetry():
                warnings.simplefilter("ignore")  # the tracer's notices
                converted = ov.convert_model(_last_hidden_state(model).eval(), example_input=example, input=shapes)
                if self.graph_precision == "int8":
                    converted = _quantize(converted, tokenizer, max_length, self.input_names)
            scratch_xml = Path(scratch) / "model.xml"
            ov.save_model(converted, str(scratch_xml), compress_to_fp16=False)
            scratch_files = {"xml": scratch_xml, "bin": scratch_xml.with_suffix(".bin")}
            files = {
                kind: {"size": path.stat().st_size, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
                for kind, path in scratch_files.items()
            }
            record = Path(scratch) / "record.json"
            record.write_text(json.dumps({"identity": self.identity, "files": files}), encoding="utf-8")
            for kind, path in scratch_files.items():
                os.replace(path, self.paths[kind])
            os.replace(record, self.record)

    def __call__(self, output_hidden_states: bool = False, **inputs: torch.Tensor) -> SimpleNamespace:  # noqa: ARG002
        """The last layer's states; `output_hidden_states` is always False here (the Encoder never asks for all
        layers from this backend)."""
        import numpy as np
        import torch

        feeds = {name: inputs[name].cpu().numpy().astype(np.int64) for name in self.input_names}
        self.request.infer(feeds)
        return SimpleNamespace(last_hidden_state=torch.from_numpy(self.request.get_output_tensor(0).data.copy()))


def _quantize(model: Any, tokenizer: Any, max_length: int, input_names: list[str]) -> Any:  # noqa: ANN401
    """`model` with int8 weights and activations, its ranges calibrated on the bundled texts, one text a sample."""
    try:
        import nncf
    except ImportError:
        raise SearchEngineError(
            "int8 on the openvino backend needs NNCF: pip install 'searchengine[openvino]', or use fp32"
        ) from None
    import numpy as np

    samples = []
    for text in calibration_texts():
        tokens = tokenizer([text], truncation=True, max_length=max_length, return_tensors="np")
        samples.append({name: tokens[name].astype(np.int64) for name in input_names if name in tokens})
        for name in input_names:  # a tokenizer without token types: zeros, as the Encoder feeds them
            samples[-1].setdefault(name, np.zeros_like(samples[-1]["input_ids"]))
    with _quiet_nncf():
        return nncf.quantize(
            model, nncf.Dataset(samples), model_type=nncf.ModelType.TRANSFORMER, subset_size=len(samples)
        )


def _last_hidden_state(model: torch.nn.Module) -> torch.nn.Module:
    """The Hugging Face model with the Encoder's inputs, by name, and one output, as openvino.convert_model wants it
    (the input names become the converted model's)."""
    import torch

    class LastHiddenState(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(
            self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None
        ) -> torch.Tensor:
            types = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
            return self.model(input_ids=input_ids, attention_mask=attention_mask, **types).last_hidden_state

    return LastHiddenState()


def _regular_size(path: Path) -> int:
    """The size of `path` when it is a regular file and not a link; OSError otherwise."""
    import stat

    status = path.lstat()
    if not stat.S_ISREG(status.st_mode):
        raise OSError(f"{path} is not a regular file")
    return status.st_size


@contextlib.contextmanager
def _no_telemetry() -> Iterator[None]:
    """Imports inside see no `openvino_telemetry`, so OpenVINO's converter and NNCF use their no-op stubs."""
    missing = object()
    before = sys.modules.get("openvino_telemetry", missing)
    if before is missing:
        sys.modules["openvino_telemetry"] = None  # type: ignore[assignment] (import raises ImportError)
    try:
        yield
    finally:
        if before is missing:
            sys.modules.pop("openvino_telemetry", None)


@contextlib.contextmanager
def _quiet_nncf() -> Iterator[None]:
    """NNCF's progress bars and notices off while it calibrates."""
    import logging

    logger = logging.getLogger("nncf")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)


def openvino_installed() -> bool:
    """Whether the `openvino` extra is installed (checked without importing it)."""
    return modules_installed("openvino", "nncf")


class OpenVinoBackend(EncoderBackend):
    """The transformer converted to OpenVINO and run on the CPU (OpenVinoTransformer); bf16 only on a CPU that
    computes in bf16 natively, int8 static (calibrated)."""

    name = "openvino"
    precisions = ("fp32", "bf16", "int8")
    auto_precisions = ("int8",)
    auto_rank = 0
    """First for int8: closer to fp32 than ONNX Runtime's dynamic int8, and as fast."""

    def installed(self) -> bool:
        return openvino_installed()

    def problem(self, device: str, pooling: str, precision: str) -> str | None:
        if problem := last_layer_cpu_problem(self, device, pooling, precision):
            return problem
        if precision == "bf16" and not cpu_has_native_bf16():
            return "OpenVINO runs bf16 only on a CPU with AVX512-BF16 or AMX, which this one lacks; use fp32"
        return None

    def load(self, encoder: LoadingEncoder) -> OpenVinoTransformer:
        return OpenVinoTransformer(
            encoder.model,
            encoder.tokenizer,
            encoder.max_seq_length,
            encoder.fingerprint,
            encoder.input_names,
            encoder.precision,
            encoder.threads,
        )
