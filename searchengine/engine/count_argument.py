"""The check of a count given to the engine (k, rerank_top, a Ray part size): one SearchEngineError for anything
that is not a whole number of at least 1."""

from __future__ import annotations

import numbers

from searchengine.errors import SearchEngineError


def count_argument(name: str, value: object) -> int:
    """`value` as a count of at least 1 (a Python or NumPy integer); anything else is one SearchEngineError, not
    the TypeError a comparison or SQLite would raise later."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise SearchEngineError(f"{name} must be a whole number of at least 1, not {value!r} ({type(value).__name__})")
    if value < 1:
        raise SearchEngineError(f"{name} must be at least 1, not {value}")
    return int(value)
