"""Where a model may be written: a new, empty or model directory; never over a folder of other things, which the
swap into place would delete, and never at a file or under one."""

from __future__ import annotations

from pathlib import Path

import pytest
from searchengine.training.model_directory import check_output_directory, writing_model_directory

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
