"""Where a model may be written: a new, empty or model directory; never over a folder of other things, which the
swap into place would delete, and never at a file or under one."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from searchengine.training.model_directory import (
    check_output_directory,
    clear_killed_writes,
    writing_model_directory,
)

from searchengine.errors import SearchEngineError


def test_a_folder_of_other_things_is_refused_and_kept(tmp_path: Path) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(SearchEngineError, match=r"holds other things than a model \(notes.txt\).*new or empty"):
        check_output_directory(folder)
    with pytest.raises(SearchEngineError, match="holds other things than a model"):
        with writing_model_directory(folder) as partial:
            (partial / "config.json").write_text("{}")
    assert (folder / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]


def test_a_file_or_a_path_under_one_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "data.txt"
    file.write_text("text")
    with pytest.raises(SearchEngineError, match="exists and is not a directory"):
        check_output_directory(file)
    with pytest.raises(SearchEngineError, match=f"{file} is a file; choose another path"):
        check_output_directory(file / "deeper" / "model")


@pytest.mark.parametrize("marker", ["modules.json", "config.json", "training_log.json", None])
def test_a_new_empty_or_model_directory_is_taken(tmp_path: Path, marker: str | None) -> None:
    out = tmp_path / "model"
    assert check_output_directory(tmp_path / "new" / "model") == tmp_path / "new" / "model"
    out.mkdir()
    if marker is not None:
        (out / marker).write_text("{}")
        (out / "model.safetensors").write_text("old weights")
    with writing_model_directory(out) as partial:
        (partial / "config.json").write_text("{}")
    assert sorted(p.name for p in out.iterdir()) == ["config.json"]


def _ended_process() -> int:
    """The id of a process that has ended (and been waited for)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_what_a_killed_write_left_is_removed_or_put_back(tmp_path: Path) -> None:
    """kill -9 during a save left a hidden .NAME.partial-PID or .NAME.old-PID folder (a model's size) for good."""
    out, ended = tmp_path / "model", _ended_process()
    for kind in ("partial", "old"):
        (tmp_path / f".model.{kind}-{ended}").mkdir()
        (tmp_path / f".model.{kind}-{ended}" / "config.json").write_text(kind)
    running = tmp_path / f".model.partial-{os.getpid()}"  # a write whose process runs: left alone
    running.mkdir()
    clear_killed_writes(out)  # killed between the swap's two renames: the old model is the last whole one
    assert sorted(p.name for p in tmp_path.iterdir()) == [running.name, "model"]
    assert (out / "config.json").read_text() == "old"
    running.rmdir()
    (tmp_path / f".model.old-{ended}").mkdir()  # killed after the swap, before the old model was deleted
    with writing_model_directory(out) as partial:
        (partial / "config.json").write_text("new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    assert (out / "config.json").read_text() == "new"
