"""Which encoder serves an index's queries and added documents, loaded only when something encodes.

An index's model is loaded lazily: inspecting, deleting, compacting, clustering and mining never load it. A query
(and a small add) runs the model's cached ONNX export without torch or transformers where that export gives the
same vectors (onnx_query_encoder, onnx_document_encoder); anything else loads the Encoder. Every model loaded here
is first checked by the caller's `check` (the index's own rule: the model that made its vectors), so this module
needs to know nothing of indexes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the encoders (torch, transformers) are imported only when something encodes
    from searchengine.encoding.cross_encoder import CrossEncoder
    from searchengine.encoding.encoder import Encoder
    from searchengine.encoding.model_source import ModelSource, Pooling
    from searchengine.encoding.onnx_document_encoder import OnnxDocumentEncoder
    from searchengine.encoding.onnx_query_encoder import OnnxQueryEncoder
    from searchengine.encoding.speed import EncoderSpeed

ModelCheck = Callable[["ModelSource", str], None]
"""Raises where a model (its source and fingerprint) is not the one the caller's vectors were made with."""


@dataclass(frozen=True)
class ModelRequest:
    """The model to load for an index, in plain values: where it is, its pooling and prompt template, the speed."""

    spec: str | Path
    pooling: Pooling
    prompt: dict[str, str | bool] = field(default_factory=dict)
    """The prompt template and denoising of prompt pooling, as Encoder and locate_model take them."""
    speed: EncoderSpeed | None = None


def load_encoder(request: ModelRequest, check: ModelCheck) -> Encoder:
    """The Encoder `request` names, checked by `check` once loaded."""
    from searchengine.encoding.encoder import Encoder, EncoderSpeed

    options = {**request.prompt, **(request.speed or EncoderSpeed()).options()}
    encoder = Encoder(request.spec, request.pooling, **options)
    check(encoder.source, encoder.fingerprint)
    return encoder


def load_onnx_encoder(request: ModelRequest, check: ModelCheck) -> OnnxDocumentEncoder | OnnxQueryEncoder | None:
    """The torch-free encoder of `request` where its model's ONNX export is cached and can serve it, else None: one
    that also embeds added documents where the Encoder would run them through that export too
    (searchengine.encoding.onnx_document_encoder), else one for queries only (onnx_query_encoder). The model is
    checked from its files, as load_encoder checks it."""
    from searchengine.encoding.model_source import locate_model
    from searchengine.encoding.onnx_document_encoder import onnx_document_encoder
    from searchengine.encoding.onnx_query_encoder import onnx_precision, onnx_query_encoder

    source = locate_model(request.spec, request.pooling, **request.prompt)  # type: ignore[arg-type]
    if onnx_precision(source, request.speed) is None:  # the Encoder runs it (and hashes the model once, when it loads)
        return None
    fingerprint = source.fingerprint()
    check(source, fingerprint)
    speed = request.speed
    return onnx_document_encoder(source, fingerprint, speed) or onnx_query_encoder(source, fingerprint, speed)


class EncoderChoice:
    """The encoders of one index: a loaded Encoder (given, or loaded on first use), else the torch-free ONNX
    encoder where it serves the same vectors."""

    def __init__(self, encoder: Encoder | None, request: Callable[[], ModelRequest], check: ModelCheck) -> None:
        """`request` says which model to load (called at most once, when one is needed); `check` refuses one that
        is not the index's."""
        self.loaded = encoder
        self._request = request
        self._check = check

    @property
    def encoder(self) -> Encoder:
        """The Encoder, loaded (and checked) on first use."""
        if self.loaded is None:
            self.loaded = load_encoder(self._request(), self._check)
        return self.loaded

    @functools.cached_property
    def onnx(self) -> OnnxDocumentEncoder | OnnxQueryEncoder | None:
        """The torch-free encoder of queries (and, where it can, of added documents), when no Encoder is loaded and
        a cached ONNX export can serve them (a cold `searchengine query`, or a small `add` or `sync`, then imports
        neither torch nor transformers); None otherwise."""
        if self.loaded is not None:
            return None
        return load_onnx_encoder(self._request(), self._check)

    def for_queries(self) -> Encoder | OnnxQueryEncoder:
        """What encodes queries: the loaded Encoder if there is one, else the torch-free ONNX encoder where it can
        (the same vectors to float rounding), else the Encoder, loaded now."""
        if self.loaded is None and self.onnx is not None:
            return self.onnx
        return self.encoder

    def for_documents(self, small_texts: Callable[[OnnxDocumentEncoder], bool]) -> Encoder | OnnxDocumentEncoder:
        """What embeds an add: the loaded Encoder if there is one, else the torch-free ONNX encoder where the Encoder
        would embed the documents through the same cached export (searchengine.encoding.onnx_document_encoder: the
        same vectors; where the Encoder has a bulk runtime, only where `small_texts` says the add embeds fewer than
        BULK_TEXTS texts, passages counted), else the Encoder, loaded now."""
        from searchengine.encoding.onnx_document_encoder import OnnxDocumentEncoder

        light = self.onnx if self.loaded is None else None
        if not isinstance(light, OnnxDocumentEncoder):
            return self.encoder
        if not light.bulk_elsewhere or small_texts(light):
            return light
        return self.encoder


@dataclass
class CrossEncoders:
    """Cross-encoders by name, loaded once and shared by an engine and its siblings."""

    loaded: dict[str, CrossEncoder] = field(default_factory=dict)

    def get(self, model: str | Path | CrossEncoder, device: str | None = None) -> CrossEncoder:
        """The cross-encoder `model` names, loaded (on `device`) on the first call and kept for later ones (a loaded
        CrossEncoder is used as it is). Raises SearchEngineError for anything that is not a cross-encoder."""
        from searchengine.encoding.cross_encoder import CrossEncoder

        if isinstance(model, CrossEncoder):
            return model
        path = Path(str(model)).expanduser()
        key = str(path.resolve()) if path.is_dir() else str(model)
        if key not in self.loaded:
            self.loaded[key] = CrossEncoder(model, device=device)
        return self.loaded[key]
