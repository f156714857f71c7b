"""Removing a shard copy's folder on its node (searchengine.cluster.node_folders), without Ray: what a copy's
`remove` and a failed build's removal task do."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from searchengine.cluster.errors import ClusterError
from searchengine.cluster.node_folders import remove_folder


@pytest.fixture
def copy_folder(tmp_path: Path) -> Path:
    """A copy's folder with a file, in its build's folder beside another copy's."""
    folder = tmp_path / "a" / "index" / "build" / "shard-0-1234abcd"
    folder.mkdir(parents=True)
    (folder / "documents.db").write_text("rows")
    (folder.parent / "shard-1-5678abcd").mkdir()
    return folder


def test_a_copys_folder_goes_and_its_build_folder_once_empty(copy_folder: Path) -> None:
    remove_folder(copy_folder)
    assert not copy_folder.exists() and copy_folder.parent.is_dir(), "the other copy's folder keeps the build's"
    remove_folder(copy_folder.parent / "shard-1-5678abcd")
    assert not copy_folder.parent.exists() and copy_folder.parent.parent.is_dir()


@pytest.fixture
def undeletable(copy_folder: Path) -> Iterator[Path]:
    """The copy's folder made immutable (chattr +i: what a read-only file is to a user who is not root)."""
    if subprocess.run(["chattr", "+i", str(copy_folder)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not allowed here (it needs root on a file system with attributes)")
    yield copy_folder
    subprocess.run(["chattr", "-i", str(copy_folder)], check=True)


def test_a_folder_that_cannot_be_removed_is_said_so_its_caller_names_it_as_left(undeletable: Path) -> None:
    """It was passed over in silence (rmtree's ignore_errors), so a failed build said nothing of it."""
    with pytest.raises(ClusterError, match=f"shard copy folder {undeletable} could not be removed .*on its node"):
        remove_folder(undeletable)
    assert (undeletable / "documents.db").read_text() == "rows"
