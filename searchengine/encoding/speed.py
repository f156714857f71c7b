"""EncoderSpeed: how an encoder runs (precision, backend, threads), in a module free of torch so that the command
line and a query served by a cached ONNX export can name it without loading torch."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from searchengine.encoding.backend import Backend
from searchengine.encoding.precision import Precision


@dataclass(frozen=True)
class EncoderSpeed:
    """How an Encoder runs, for the places that load one for you (SearchEngine.build/open, the CLI)."""

    precision: Precision = "auto"
    backend: Backend = "auto"
    threads: int | None = None

    def options(self) -> dict:
        """Keyword arguments for Encoder."""
        return asdict(self)
