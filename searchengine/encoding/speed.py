"""EncoderSpeed: how an encoder runs (precision, backend, threads), in a module free of torch so that the command
line and a query served by a cached ONNX export can name it without loading torch."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from searchengine.encoding.backend import Backend
from searchengine.encoding.precision import Precision
from searchengine.errors import SearchEngineError


@dataclass(frozen=True)
class EncoderSpeed:
    """How an Encoder runs, for the places that load one for you (SearchEngine.build/open, the CLI)."""

    precision: Precision = "auto"
    backend: Backend = "auto"
    threads: int | None = None

    def options(self) -> dict:
        """Keyword arguments for Encoder."""
        return asdict(self)


def texts_per_pass(batch_size: int | None, default: int) -> int:
    """The texts a forward pass takes: `batch_size`, or `default` when None. Below 1 is refused: 0 would read as
    the default and a negative size run no pass at all (np.empty's garbage returned as vectors)."""
    if batch_size is not None and batch_size < 1:
        raise SearchEngineError(f"batch_size must be at least 1, not {batch_size}")
    return default if batch_size is None else batch_size
