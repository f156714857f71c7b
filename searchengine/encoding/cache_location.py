"""Where searchengine keeps what it can rebuild (ONNX exports, file digests): $SEARCHENGINE_CACHE, else
$XDG_CACHE_HOME/searchengine, else ~/.cache/searchengine."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    if os.environ.get("SEARCHENGINE_CACHE"):
        return Path(os.environ["SEARCHENGINE_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "searchengine"
