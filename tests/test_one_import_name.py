"""searchengine installs one import name: a user's own `indexer.py` or `training/` package beside their script
must not shadow any part of it, in an editable install and in a built wheel alike."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]

USER_SCRIPT = """
import indexer, training
assert indexer.MINE and training.MINE, "the user's own modules are the ones named indexer and training"
from searchengine import SearchEngine, SearchEngineError
import searchengine.cli, searchengine.engine.indexing, searchengine.indexer.tables.store, searchengine.training.loop
assert searchengine.indexer.tables.store.DocumentStore and searchengine.training.loop.train
print("ok", searchengine.indexer.tables.store.__file__)
"""


def _user_project(folder: Path) -> Path:
    """A script beside a stray `indexer.py` and a `training/` package of the user's own."""
    (folder / "indexer.py").write_text("MINE = True\n")
    (folder / "training").mkdir()
    (folder / "training" / "__init__.py").write_text("MINE = True\n")
    script = folder / "main.py"
    script.write_text(USER_SCRIPT)
    return script


def _run(script: Path, **env: str) -> str:
    completed = subprocess.run(
        [sys.executable, str(script)],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout


def test_a_stray_indexer_or_training_beside_the_script_does_not_break_the_import(tmp_path: Path) -> None:
    assert _run(_user_project(tmp_path)).startswith("ok")


def test_the_built_wheel_holds_one_package_and_imports_beside_stray_modules(tmp_path: Path) -> None:
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPOSITORY),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = tmp_path.glob("searchengine-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top_level == {"searchengine"}
    assert {"searchengine/indexer/tables/store.py", "searchengine/training/loop.py", "searchengine/cli/__init__.py"} <= set(
        names
    )

    site = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    project = tmp_path / "project"
    project.mkdir()
    output = _run(_user_project(project), PYTHONPATH=str(site))
    assert output.startswith("ok") and str(site) in output
