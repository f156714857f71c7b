"""`adapt_index` on the tiny offline BERT: the model is trained on the index's own documents, saved inside the index
directory, and every document re-embedded with it in one commit that keeps ids, external ids and metadata."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from searchengine.indexer.commit.crash_points import CRASH_ENV
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.model_folders import claim_model_folder
from searchengine.indexer.errors import IndexLockedError
from searchengine.indexer.tables.store import Document
from searchengine.training.adapt import adapt_index

from searchengine.encoding.encoder import Encoder
from searchengine.engine.build_settings import BuildSettings
from searchengine.engine.search_engine import SearchEngine
from searchengine.errors import SearchEngineError

TITLED = [
    ("reset a password", "how do i reset my password for the account login with the email we sent you"),
    ("a cat on a mat", "the cat sat on the mat in the garden and the dog ran to the road"),
    ("stock prices fell", "stock prices fell as the market rate rose and the bank sold money"),
    ("plant a seed", "plant the seed in warm soil and water it when the sun is hot"),
    ("a rocket to the moon", "the rocket flew past the moon toward a distant planet in space"),
    ("bake bread", "bake the bread in a hot oven with salt and sugar for the soup"),
    ("the team won", "the team scored a late goal to win the game with the ball"),
    ("a winter storm", "a storm brought cold wind and snow to the city and the road"),
]
FAST = {"steps": 3, "batch_size": 4, "max_seq_length": 32, "learning_rate": 1e-3}


@pytest.fixture
def titled_index(tmp_path: Path, tiny_model: Path) -> Path:
    documents = [
        Document(f"{title} {text}", metadata={"title": title, "n": number}, external_id=f"doc-{number}")
        for number, (title, text) in enumerate(TITLED)
    ]
    target = tmp_path / "index"
    SearchEngine.build(documents, target, encoder=Encoder(tiny_model, precision="fp32")).close()
    return target


def stored(index: Path) -> list[tuple[int, str | None, str, dict]]:
    with SearchEngine.open(index) as engine:
        hits = engine.search("the", k=len(engine))
    return sorted((hit.id, hit.external_id, hit.text, hit.metadata) for hit in hits)


def vectors(index: Path) -> np.ndarray:
    with SearchEngine.open(index) as engine:
        ids, rows = next(engine.stored_vectors())
    return rows[np.argsort(ids)]


def test_adapt_retrains_and_reindexes_the_same_documents(titled_index: Path) -> None:
    documents_before, vectors_before = stored(titled_index), vectors(titled_index)
    fingerprint_before = SearchEngine.open(titled_index).manifest.model.fingerprint

    report = adapt_index(titled_index, "pseudo-queries", {**FAST, "query_field": "title"}, progress=False)

    assert report.training.steps == 3 and report.indexing is not None and report.indexing.added == len(TITLED)
    assert report.model.parent == titled_index and report.model.name.startswith("adapted-pseudo-queries.")
    with SearchEngine.open(titled_index) as engine:
        model = engine.manifest.model
        assert model.spec == f"./{report.model.name}" and model.fingerprint != fingerprint_before  # inside the index
        # the stored vectors are the adapted model's, as a fresh encoder of it gives them
        assert np.allclose(engine.encode([TITLED[0][0] + " " + TITLED[0][1]]), vectors(titled_index)[:1], atol=1e-5)
    assert stored(titled_index) == documents_before
    assert not np.allclose(vectors(titled_index), vectors_before, atol=1e-3)
    log = json.loads((report.model / "training_log.json").read_text())
    assert log["details"]["query_field"] == "title" and log["details"]["pairs"] == len(TITLED)


def test_an_adapted_index_can_be_moved_and_copied(titled_index: Path, tmp_path: Path) -> None:
    """The manifest records the adapted model relative to the index: a moved index loads its own model, and a
    copy loads the copy's (it used to keep loading the original's, by absolute path)."""
    adapt_index(titled_index, "simcse", FAST, progress=False)
    with SearchEngine.open(titled_index) as engine:
        expected = [(hit.id, round(hit.score, 4)) for hit in engine.search(TITLED[1][0], k=3, mode="dense")]
    moved = tmp_path / "moved"
    shutil.move(titled_index, moved)
    copy = tmp_path / "copy"
    shutil.copytree(moved, copy)
    shutil.rmtree(moved)  # the copy must not need the original
    with SearchEngine.open(copy) as engine:
        assert [(hit.id, round(hit.score, 4)) for hit in engine.search(TITLED[1][0], k=3, mode="dense")] == expected
        assert Path(engine.encoder.source.spec).resolve().parent == copy.resolve()
        assert Path(engine.info().model).parent == copy.resolve()  # not the folder it was trained in
    assert all(check.problem is None for check in IndexDirectory(copy).verify())


def test_adapting_again_replaces_the_earlier_adapted_model(titled_index: Path) -> None:
    first = adapt_index(titled_index, "simcse", FAST, progress=False)
    second = adapt_index(titled_index, "simcse", FAST, progress=False)
    assert not first.model.exists()
    assert sorted(path.name for path in titled_index.iterdir() if path.is_dir()) == [second.model.name]
    assert len(stored(titled_index)) == len(TITLED)


def test_adapt_keeps_whitening_k_refitted_for_the_new_model(tmp_path: Path, tiny_model: Path) -> None:
    texts = [f"{title} {text}" for title, text in TITLED]
    target = tmp_path / "whitened"
    SearchEngine.build(texts, target, BuildSettings(model=tiny_model, whiten_k=4)).close()
    before = (target / "manifest.json").read_text()
    adapt_index(target, "simcse", FAST, progress=False)
    with SearchEngine.open(target) as engine:
        assert engine.manifest.whitening is not None and engine.manifest.whitening.k == 4
        assert engine.manifest.index.dimension == 4
        assert engine.search(texts[3], k=1)[0].text == texts[3]
    assert (
        json.loads(before)["files"]["whitening"]
        != json.loads((target / "manifest.json").read_text())["files"]["whitening"]
    )


def test_an_adapt_killed_after_saving_its_model_leaves_a_folder_the_next_write_removes(
    titled_index: Path, tiny_model: Path
) -> None:
    """Killed between saving the model and the commit (as kill -9 would), adapt leaves the old index and a model
    folder no manifest names; the next write removes it, and leaves alone the folder of an adapt still running."""
    manifest_before = (titled_index / "manifest.json").read_text()
    script = (
        "import sys\nfrom searchengine.training.adapt import adapt_index\n"
        f"adapt_index(sys.argv[1], 'simcse', {FAST!r}, progress=False)"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, str(titled_index)],
        env={**os.environ, CRASH_ENV: "adapt-saved"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 75, run.stderr  # ended at that step
    (left,) = [path for path in titled_index.iterdir() if path.name.startswith("adapted-")]
    assert (left / "config.json").is_file() and (titled_index / "manifest.json").read_text() == manifest_before
    running = titled_index / "adapted-simcse.1"  # another adapt, still training: its claim is held
    running.mkdir()
    claim = claim_model_folder(running)
    try:
        with SearchEngine.open(titled_index) as engine:
            engine.add(["a write after the crash"])
        assert not left.exists() and running.is_dir()
    finally:
        claim.release()
    assert all(check.problem is None for check in IndexDirectory(titled_index).verify())
    assert len(stored(titled_index)) == len(TITLED) + 1


def test_a_failure_after_training_leaves_the_old_index_and_no_model(titled_index: Path) -> None:
    manifest_before = (titled_index / "manifest.json").read_text()
    with IndexDirectory(titled_index).writing(), pytest.raises(IndexLockedError, match="is being written by"):
        adapt_index(titled_index, "simcse", FAST, progress=False)  # trains, then cannot take the writer lock
    assert (titled_index / "manifest.json").read_text() == manifest_before
    assert not [path for path in titled_index.iterdir() if path.is_dir()]


@pytest.mark.parametrize(
    ("method", "options", "message"),
    [
        ("sbert-nli", {}, "adapt cannot run 'sbert-nli'; choose one of pseudo-queries, simcse"),
        ("simcse", {"query_field": "title"}, "simcse has no option query_field"),
    ],
)
def test_bad_requests_are_refused_before_training(titled_index: Path, method: str, options: dict, message: str) -> None:
    with pytest.raises(SearchEngineError, match=message):
        adapt_index(titled_index, method, options, progress=False)
    assert not [path for path in titled_index.iterdir() if path.is_dir()]


def test_an_index_split_into_passages_is_refused_before_training(tmp_path: Path, tiny_model: Path) -> None:
    """Re-embedding does not split documents into passages (a folder's index does), and adapt trained for minutes
    before it said so. These documents give no pseudo-query, so training, had it started, would have refused that."""
    target = tmp_path / "passages"
    encoder = Encoder(tiny_model, precision="fp32")
    SearchEngine.build(["a cat", "the dog ran"], target, BuildSettings(passages=True), encoder=encoder).close()
    with pytest.raises(SearchEngineError, match="splits long documents into passages.*searchengine train"):
        adapt_index(target, "pseudo-queries", FAST, progress=False)
    assert not [path for path in target.iterdir() if path.is_dir()]


def _killed_adapt(index: Path, step: str, system_temp: Path) -> None:
    """Run an adapt in a process of its own that ends at `step` as kill -9 would, with `system_temp` as the
    system's temporary folder."""
    script = (
        "import sys\nfrom searchengine.training.adapt import adapt_index\n"
        f"adapt_index(sys.argv[1], 'simcse', {FAST!r}, progress=False)"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, str(index)],
        env={**os.environ, CRASH_ENV: step, "TMPDIR": str(system_temp)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 75, run.stderr  # ended at that step


def test_a_killed_adapt_leaves_the_documents_only_inside_the_index_and_compact_removes_what_it_left(
    titled_index: Path, tmp_path: Path
) -> None:
    """Issue 43 (hostile finding 3): a kill while training left a full copy of the texts and metadata in the system's
    temporary folder (searchengine-adapt-*), and `compact` removed no orphaned model (only the next add did)."""
    system_temp = tmp_path / "system-temp"
    system_temp.mkdir()
    manifest_before = (titled_index / "manifest.json").read_text()
    _killed_adapt(titled_index, "adapt-documents-written", system_temp)
    assert list(system_temp.iterdir()) == []
    (scratch,) = titled_index.glob(".adapted-simcse.*.scratch-*")
    assert TITLED[0][1] in (scratch / "documents.jsonl").read_text(encoding="utf-8")
    _killed_adapt(titled_index, "adapt-saved", system_temp)
    (model,) = titled_index.glob("adapted-simcse.*")
    assert len(list(titled_index.glob(".adapted-simcse.*.claim"))) == 2  # neither process lived to remove its claim
    assert (titled_index / "manifest.json").read_text() == manifest_before
    with SearchEngine.open(titled_index) as engine:
        assert engine.compact() == 0  # nothing to merge: one segment, no deleted documents
    assert not scratch.exists() and not model.exists()
    assert [path.name for path in titled_index.iterdir() if "adapted" in path.name] == []
    assert all(check.problem is None for check in IndexDirectory(titled_index).verify())
    assert len(stored(titled_index)) == len(TITLED)
