"""Which adapted-model folders in an index directory a clean-up may remove: not the one the manifest names, not
one a live adapt claims; the rest, hidden siblings and stale claims included."""

from __future__ import annotations

from pathlib import Path

import pytest
from searchengine.indexer.commit.model_folders import claim_model_folder, named_model_folder, unreferenced_model_entries


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        ("./adapted-simcse.5", "adapted-simcse.5"),
        ("/an/index/moved/since/adapted-simcse.5", "adapted-simcse.5"),  # an older manifest's absolute path
        ("default", None),
        ("sentence-transformers/all-MiniLM-L6-v2", None),
    ],
)
def test_the_folder_a_model_spec_names(tmp_path: Path, spec: str, named: str | None) -> None:
    assert named_model_folder(spec, tmp_path) == named


def test_a_clean_up_leaves_the_named_and_the_claimed_folders(tmp_path: Path) -> None:
    for name in ("adapted-simcse.1", "adapted-simcse.2", ".adapted-simcse.3.partial-99", "adapted-simcse.4", "other"):
        (tmp_path / name).mkdir()
    (tmp_path / ".adapted-simcse.2.claim").touch()  # left by a killed adapt: nobody holds it
    claim = claim_model_folder(tmp_path / "adapted-simcse.4")  # an adapt still running
    try:
        found = unreferenced_model_entries(tmp_path, "adapted-simcse.1")
    finally:
        claim.release()
    assert [entry.name for entry in found] == [
        ".adapted-simcse.2.claim",
        ".adapted-simcse.3.partial-99",
        "adapted-simcse.2",
    ]
    assert [entry.name for entry in unreferenced_model_entries(tmp_path, "adapted-simcse.1")][-1] == "adapted-simcse.4"
