"""Query vectors from a cached ONNX export without torch or transformers, for fast cold queries.

A query in a new process would otherwise import torch and transformers and load the torch weights (seconds) only
to run the ONNX export the Encoder already cached (searchengine.encoding.onnx_backend). Where that export exists
and the model needs nothing torch does (last-layer pooling, no prompt, no post-processing modules), this encoder
tokenizes with the `tokenizers` library (the model's tokenizer.json, truncated to the Encoder's limit), runs the
export in ONNX Runtime and pools and normalises in numpy: the Encoder's vectors (to float rounding) at a fraction
of the start-up. Anything else is left to the Encoder (`onnx_query_encoder` returns None).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from searchengine.encoding.backend import resolve_runtime
from searchengine.encoding.long_texts import truncated_encodings
from searchengine.encoding.model_source import ModelSource
from searchengine.encoding.onnx_backend import onnxruntime_installed
from searchengine.encoding.onnx_cache import OPSET, cached_export_is_valid, export_path, open_session
from searchengine.encoding.speed import EncoderSpeed, texts_per_pass
from searchengine.errors import SearchEngineError

if TYPE_CHECKING:
    from tokenizers import Encoding

LAST_LAYER_POOLINGS = frozenset({"mean", "cls", "max", "mean_sqrt_len"})
"""The poolings computed here from the last layer alone; the others (and prompt pooling) need the Encoder."""
NO_LIMIT = 1_000_000
"""Tokenizer limits at or above this mean "none set" (transformers' own placeholder is 1e30)."""


class OnnxQueryEncoder:
    """Encodes texts as the Encoder would with the ONNX backend, from its cached export, without torch."""

    def __init__(self, source: ModelSource, session: Any, fingerprint: str, batch_size: int = 64) -> None:  # noqa: ANN401
        from tokenizers import Tokenizer

        folder = source.transformer_path
        self.source = source
        self.session = session
        self.fingerprint = fingerprint
        """The model's fingerprint (ModelSource.fingerprint), which names its cached export."""
        self.batch_size = batch_size
        self.input_names = [node.name for node in session.get_inputs()]
        tokenizer_config = _read_optional_json(folder / "tokenizer_config.json")
        config = _read_optional_json(folder / "config.json")
        limits = [source.max_seq_length, config.get("max_position_embeddings")]
        if int(tokenizer_config.get("model_max_length") or NO_LIMIT) < NO_LIMIT:
            limits.append(int(tokenizer_config["model_max_length"]))
        self.max_seq_length: int = min(limit for limit in limits if limit)
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(
            self.max_seq_length, direction=tokenizer_config.get("truncation_side", "right")
        )
        pad = tokenizer_config.get("pad_token")
        pad = pad.get("content") if isinstance(pad, dict) else pad
        self.pad_id: int = (self.tokenizer.token_to_id(pad) if pad else None) or 0
        self.dimension: int = int(config["hidden_size"])

    def encode_queries(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """The same as `encode`: this encoder has one runtime (the Encoder's encode_queries, which it stands in for)."""
        return self.encode(texts, batch_size)

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """Embed `texts` into an (n, dimension) float32 array, rows in input order (batched longest first, as the
        Encoder's smart batching does; `batch_size` texts a forward pass, default the encoder's)."""
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        prepared = [text.strip() for text in texts]
        if self.source.do_lower_case:
            prepared = [text.lower() for text in prepared]
        ids = self._token_ids(prepared)
        order = np.argsort([-len(row) for row in ids], kind="stable")
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        size = texts_per_pass(batch_size, self.batch_size)
        for start in range(0, len(order), size):
            rows = order[start : start + size]
            out[rows] = self._encode_batch([ids[i] for i in rows])
        return out

    def _token_ids(self, prepared: list[str]) -> list[list[int]]:
        """Token ids per text, cut to the model's limit."""
        return [encoding.ids for encoding in self._encodings(prepared)]

    def _encodings(self, prepared: list[str]) -> list[Encoding]:
        """The tokenizer's truncated encoding of each text, a huge text cut before it is read (long_texts.py)."""
        keeps_start = self.tokenizer.truncation["direction"] == "right"
        return truncated_encodings(self.tokenizer.encode_batch, prepared, self.max_seq_length, keeps_start)

    def _encode_batch(self, ids: list[list[int]]) -> np.ndarray:
        width = max(len(row) for row in ids)
        input_ids = np.full((len(ids), width), self.pad_id, dtype=np.int64)
        attention_mask = np.zeros((len(ids), width), dtype=np.int64)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)] = row
            attention_mask[i, : len(row)] = 1
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": np.zeros_like(input_ids)}
        (last,) = self.session.run(["last_hidden_state"], {name: inputs[name] for name in self.input_names})
        vectors = pool_last_layer(self.source.pooling, last.astype(np.float32), attention_mask)
        if self.source.normalize:
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors


Light = TypeVar("Light", bound=OnnxQueryEncoder)
"""OnnxQueryEncoder or a subclass (searchengine.encoding.onnx_document_encoder), which onnx_query_encoder makes."""


def pool_last_layer(mode: str, last: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """searchengine.encoding.pooling.pool in numpy, for the last-layer modes: (batch, seq, dim) -> (batch, dim)."""
    mask = attention_mask[:, :, None].astype(last.dtype)
    if mode == "mean":
        return (last * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)
    if mode == "cls":
        return last[:, 0]
    if mode == "max":
        return np.where(mask > 0, last, np.finfo(last.dtype).min).max(axis=1)
    if mode == "mean_sqrt_len":
        return (last * mask).sum(1) / np.maximum(np.sqrt(mask.sum(1)), 1e-9)
    raise SearchEngineError(f"pooling {mode!r} needs more than the last layer; use the Encoder for it")


def onnx_precision(source: ModelSource, speed: EncoderSpeed | None = None) -> str | None:
    """The precision of the ONNX export that would serve `source`'s queries for the Encoder with `speed` on the CPU;
    None where the Encoder would need torch (or a GPU) for them, or would refuse `speed`. Reads no weights."""
    speed = speed or EncoderSpeed()
    simple = source.prompt is None and not source.transforms and source.pooling in LAST_LAYER_POOLINGS
    if not simple or not (source.transformer_path / "tokenizer.json").is_file() or not onnxruntime_installed():
        return None
    if speed.threads is not None and speed.threads < 1:
        return None
    try:  # what Encoder(device="cpu", precision=..., backend=...) resolves them to
        precision, backend = resolve_runtime(speed.precision, speed.backend, "cpu", source.pooling)
    except SearchEngineError:
        return None
    return precision if backend == "onnx" else None


def onnx_query_encoder(
    source: ModelSource, fingerprint: str, speed: EncoderSpeed | None = None, kind: type[Light] = OnnxQueryEncoder
) -> Light | None:
    """The torch-free encoder of `source` (whose fingerprint is `fingerprint`) when the Encoder with `speed` would
    run it on the CPU through an ONNX export that is already cached and loads; None when anything else is needed
    (torch or a GPU for this precision, an export still to make, a pooling or module only torch computes), so the
    caller loads the Encoder, which also gives any error the user should see. `kind`: the class made around the
    export's session (OnnxDocumentEncoder, for writes)."""
    precision = onnx_precision(source, speed)
    identity = {"fingerprint": fingerprint, "precision": precision, "opset": OPSET}
    if precision is None or not cached_export_is_valid(export_path(fingerprint, precision), identity):
        return None
    try:
        session = open_session(export_path(fingerprint, precision), (speed or EncoderSpeed()).threads)
    except SearchEngineError:
        return None
    outputs = {node.name for node in session.get_outputs()}
    inputs = {node.name for node in session.get_inputs()}
    if "last_hidden_state" not in outputs or not inputs <= {"input_ids", "attention_mask", "token_type_ids"}:
        return None
    return kind(source, session, fingerprint)


def _read_optional_json(path: Path) -> dict:
    """A model's JSON config, or {} where the file is missing (the Encoder's loader reads the same files)."""
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SearchEngineError(f"cannot read {path}: {exc}") from None
