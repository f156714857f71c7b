"""The environment a compared system runs in, in its own process: this checkout's searchengine, an older checkout
of it (a baseline), or the peers (chroma, LanceDB) installed in a virtual environment of their own, so that their
dependencies never meet the engine's."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PEER_PYTHON = ROOT.parent / "bench-venv" / "bin" / "python"
"""The peers' interpreter by default: a virtual environment beside the checkout (benchmarks/storage/write_cost.py)."""
CODE_VARIABLE = "WRITE_COST_CODE"
"""Names the checkout a process must import searchengine from; the process refuses another (engine_origin)."""


def baseline_path(baseline: Path, work: Path) -> Path:
    """A directory to put first on PYTHONPATH so that `searchengine` is `baseline`'s, with its indexer/ and
    training/ as searchengine.indexer and searchengine.training (the mapping pyproject's package-dir makes):
    searchengine/ holds a symlink to each entry of baseline/searchengine, plus indexer and training."""
    shim = work / "baseline-path"
    if shim.exists():
        shutil.rmtree(shim)
    package = shim / "searchengine"
    package.mkdir(parents=True)
    for entry in sorted((baseline / "searchengine").iterdir()):
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry.resolve())
    for name in ("indexer", "training"):
        (package / name).symlink_to((baseline / name).resolve())
    return shim


def system_env(system: str, baseline: Path | None, shim: Path | None) -> dict[str, str]:
    """The environment variables of a process that measures `system` ("searchengine", "baseline" or a peer):
    offline model loading, no inherited PYTHONPATH, and for the engines the checkout it must import."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.pop("PYTHONPATH", None)
    if system == "baseline":
        env["PYTHONPATH"] = str(shim)
        env[CODE_VARIABLE] = str(baseline.resolve())
    elif system == "searchengine":
        env[CODE_VARIABLE] = str(ROOT)
    return env
