"""Where the benchmarks read their data by default: ../shared/data beside the checkout where it exists (the
project's machines), otherwise ./data in the checkout, the folder `.venv/bin/python benchmarks/datasets/get_data.py data`
downloads and lays out. Each benchmark's --data (or --stsb, --sentences) overrides it."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"
DATA = SHARED if SHARED.is_dir() else ROOT / "data"
