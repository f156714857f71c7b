"""An index of a folder: built from its files, searched with each hit's file and section, and kept in step with
the folder by `sync_index`, which re-reads only what changed and keeps the ids of what did not."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from searchengine.indexer.commit.crash_points import CRASH_ENV

from searchengine.encoding.encoder import Encoder
from searchengine.engine.build_settings import BuildSettings
from searchengine.engine.files import check_replacing, files_record, read_paths, sync_index
from searchengine.engine.search_engine import SearchEngine
from searchengine.errors import SearchEngineError
from searchengine.reading.file_rules import FileRules
from tests.searchengine.reading.made_files import notes_folder, pdf_bytes


def _build(root: Path, index: Path, encoder: Encoder) -> SearchEngine:
    documents, _ = read_paths([root], FileRules())
    return SearchEngine.build(
        documents,
        index,
        BuildSettings(passages=True, reading=files_record([root], root, FileRules())),
        encoder=encoder,
    )


def _ids(engine: SearchEngine) -> dict[str, int]:
    return {hit.external_id: hit.id for hit in engine.search("the", k=50, mode="keyword")}


def test_hits_name_their_file_and_section(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = _build(notes_folder(tmp_path / "notes"), tmp_path / "index", tiny_encoder)
    [hit] = engine.search("salt soup", k=1, mode="keyword")
    assert hit.external_id == "guides/manual.pdf#2" and hit.metadata["path"] == "guides/manual.pdf"
    assert hit.location == "page 2"  # a page's only section, even with no span or highlight
    assert [root["path"] for root in engine.reading()["files"]["roots"]] == [str((tmp_path / "notes").absolute())]


def test_sync_embeds_changed_and_new_files_removes_deleted_ones_and_keeps_the_rest(
    tmp_path: Path, tiny_encoder: Encoder
) -> None:
    root = notes_folder(tmp_path / "notes")
    engine = _build(root, tmp_path / "index", tiny_encoder)
    before = _ids(engine)
    nothing = sync_index(engine)
    assert (nothing.added, nothing.updated, nothing.removed, nothing.files.unchanged) == ([], [], [], 4)
    (root / "todo.txt").write_text("Buy a ticket for the plane.\n", encoding="utf-8")
    (root / "guides" / "bike.html").unlink()
    (root / "new.md").write_text("# Weather\n\nThe storm brings rain and wind.\n", encoding="utf-8")
    os.utime(root / "garden.md", ns=(1, 1))  # touched only
    report = sync_index(engine)
    assert (report.added, report.updated, report.removed) == (["new.md"], ["todo.txt"], ["guides/bike.html"])
    after = _ids(engine)
    assert after["garden.md"] == before["garden.md"] and after["guides/manual.pdf#1"] == before["guides/manual.pdf#1"]
    assert "guides/bike.html" not in after and after["todo.txt"] != before["todo.txt"]
    assert [hit.external_id for hit in engine.search("plane", k=1, mode="keyword")] == ["todo.txt"]
    assert len(engine) == 5  # garden.md, the PDF's two pages, new.md, todo.txt; bike.html gone


def test_sources_are_absolute_paths_before_and_after_a_sync_of_a_folder_named_relatively(
    tmp_path: Path, tiny_encoder: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes_folder(tmp_path / "notes")
    monkeypatch.chdir(tmp_path)
    engine = _build(Path("notes"), tmp_path / "index", tiny_encoder)
    (tmp_path / "notes" / "todo.txt").write_text("Buy a ticket for the plane.\n", encoding="utf-8")
    assert sync_index(engine).updated == ["todo.txt"]
    hits = engine.search("the", k=50, mode="keyword")
    assert {hit.source for hit in hits} == {hit.metadata["file"] for hit in hits}
    assert all(Path(hit.source).is_absolute() for hit in hits)
    [edited] = engine.search("plane", k=1, mode="keyword", where=[f"source={tmp_path / 'notes' / 'todo.txt'}"])
    assert edited.external_id == "todo.txt"


def test_sync_keeps_the_document_of_a_file_it_cannot_read_now(tmp_path: Path, tiny_encoder: Encoder) -> None:
    root = notes_folder(tmp_path / "notes")
    engine = _build(root, tmp_path / "index", tiny_encoder)
    (root / "todo.txt").write_bytes(b"\x00\x01 binary now")
    report = sync_index(engine)
    assert report.removed == [] and report.files.skipped[0].shown == "todo.txt"
    assert "todo.txt" in _ids(engine)


def test_sync_of_an_index_built_from_a_corpus_file_says_what_to_do(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = SearchEngine.build(["one text", "another"], tmp_path / "index", encoder=tiny_encoder)
    with pytest.raises(SearchEngineError, match="not built from folders"):
        sync_index(engine)


def test_an_index_of_other_input_is_replaced_only_when_told(tmp_path: Path, tiny_encoder: Encoder) -> None:
    corpus = tmp_path / "a.txt"
    corpus.write_text("one\ntwo\n", encoding="utf-8")
    SearchEngine.build(corpus, tmp_path / "index", encoder=tiny_encoder).close()
    check_replacing(tmp_path / "index", [corpus], replace=False)  # the same input again: a rebuild
    with pytest.raises(SearchEngineError, match="already holds an index of 2 documents from .*a.txt; pass --replace"):
        check_replacing(tmp_path / "index", [tmp_path / "b.txt"], replace=False)
    check_replacing(tmp_path / "index", [tmp_path / "b.txt"], replace=True)


@pytest.mark.parametrize("damage", ["corrupt manifest", "newer format"])
def test_an_index_that_cannot_be_read_is_replaced_when_told_and_kept_otherwise(
    tmp_path: Path, tiny_encoder: Encoder, damage: str
) -> None:
    """Every such index's error says to rebuild it, and `index --replace` refused with that same error, reading
    the index it was told to replace."""
    import json

    corpus = tmp_path / "a.txt"
    corpus.write_text("one\ntwo\n", encoding="utf-8")
    SearchEngine.build(corpus, tmp_path / "index", encoder=tiny_encoder).close()
    manifest = tmp_path / "index" / "manifest.json"
    if damage == "corrupt manifest":
        manifest.write_text("not json {", encoding="utf-8")
    else:
        manifest.write_text(json.dumps({**json.loads(manifest.read_text("utf-8")), "format_version": 3}), "utf-8")
    with pytest.raises(SearchEngineError, match=r"index holds an index that cannot be read, kept until .* --replace"):
        check_replacing(tmp_path / "index", [corpus], replace=False)
    check_replacing(tmp_path / "index", [corpus], replace=True)


def test_a_dense_hit_names_the_section_of_its_best_passage(tmp_path: Path, tiny_encoder: Encoder) -> None:
    from tests.conftest import WORDS

    root = tmp_path / "notes"
    root.mkdir()
    sections = {f"Part {n}": " ".join(WORDS[n * 40 : n * 40 + 40]) + "." for n in range(3)}
    (root / "long.md").write_text("".join(f"# {h}\n\n{body}\n\n" for h, body in sections.items()), encoding="utf-8")
    engine = _build(root, tmp_path / "index", tiny_encoder)
    for heading, body in sections.items():
        [hit] = engine.search(body, k=1, mode="dense")
        assert hit.span is not None and hit.location == heading


def test_sync_of_a_file_whose_text_did_not_change_updates_its_facts_only(tmp_path: Path, tiny_encoder: Encoder) -> None:
    root = notes_folder(tmp_path / "notes")
    engine = _build(root, tmp_path / "index", tiny_encoder)
    page = root / "guides" / "bike.html"
    page.write_text(page.read_text(encoding="utf-8").replace("</footer>", " 2025</footer>"), encoding="utf-8")
    report = sync_index(engine)  # the footer is not the page's text: same text, new sha256
    assert report.updated == ["guides/bike.html"] and report.added == [] and len(engine) == 5
    [hit] = [hit for hit in engine.search("patch", k=10, mode="keyword") if hit.external_id == "guides/bike.html"]
    assert hit.metadata["sha256"] == hashlib.sha256(page.read_bytes()).hexdigest()
    assert sync_index(engine).files.unchanged == 4


def test_sync_of_a_pdf_that_lost_a_page_removes_that_page(tmp_path: Path, tiny_encoder: Encoder) -> None:
    from tests.searchengine.reading.made_files import pdf_bytes

    root = notes_folder(tmp_path / "notes")
    engine = _build(root, tmp_path / "index", tiny_encoder)
    (root / "guides" / "manual.pdf").write_bytes(pdf_bytes(["The oven must be very hot before the bread goes in."]))
    report = sync_index(engine)
    assert report.updated == ["guides/manual.pdf"] and report.removed == []
    pages = {hit.external_id for hit in engine.search("the", k=50, mode="keyword")} & {
        "guides/manual.pdf#1",
        "guides/manual.pdf#2",
    }
    assert pages == {"guides/manual.pdf#1"} and len(engine) == 4


def test_a_sync_killed_after_its_first_commit_converges_on_the_next(tmp_path: Path, tiny_encoder: Encoder) -> None:
    root = notes_folder(tmp_path / "notes")
    (root / "facts.jsonl").write_text('{"text": "Beetroot stains."}\n{"text": "Kale is bitter."}\n', "utf-8")
    _build(root, tmp_path / "index", tiny_encoder).close()
    (root / "facts.jsonl").write_text('{"text": "Beetroot stains the board."}\n', "utf-8")
    (root / "guides" / "manual.pdf").write_bytes(pdf_bytes(["Preheat the oven."]))
    (root / "todo.txt").unlink()
    code = (
        "import sys\n"
        "from searchengine.engine.files import sync_index\n"
        "from searchengine.engine.search_engine import SearchEngine\n"
        "sync_index(SearchEngine.open(sys.argv[1]))\n"
    )
    killed = subprocess.run(  # ended at once after its first commit, as a kill -9 would
        [sys.executable, "-c", code, str(tmp_path / "index")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, CRASH_ENV: "after-commit"},
    )
    assert killed.returncode == 75, killed.stderr
    engine = SearchEngine.open(tmp_path / "index", encoder=tiny_encoder)
    sync_index(engine)
    assert sorted(engine.external_ids()) == ["facts.jsonl#1", "garden.md", "guides/bike.html", "guides/manual.pdf#1"]


def test_a_sync_of_part_of_a_folder_keeps_the_folders_globs(tmp_path: Path, tiny_encoder: Encoder) -> None:
    root = notes_folder(tmp_path / "notes")
    rules = FileRules(exclude=("guides/*",))
    documents, _ = read_paths([root], rules)
    engine = SearchEngine.build(
        documents,
        tmp_path / "index",
        BuildSettings(passages=True, reading=files_record([root], root, rules)),
        encoder=tiny_encoder,
    )
    before = sorted(engine.external_ids())
    report = sync_index(engine, [root / "guides"])  # "bike.html" is not excluded, "guides/bike.html" is
    assert report.added == [] and sorted(engine.external_ids()) == before
    assert sync_index(engine, [root / "guides" / "bike.html"]).added == []  # a file of it too
    assert sorted(engine.external_ids()) == before


def test_a_sync_of_part_of_a_folder_reads_no_file_twice_through_a_link_to_the_folder(
    tmp_path: Path, tiny_encoder: Encoder
) -> None:
    root = notes_folder(tmp_path / "notes")
    (root / "guides" / "up").symlink_to("..")  # a loop when the folder is read, not when guides/ alone is
    engine = _build(root, tmp_path / "index", tiny_encoder)
    before = sorted(engine.external_ids())
    assert sync_index(engine, [root / "guides"]).added == []  # not guides/up/garden.md, garden.md a second time
    assert sorted(engine.external_ids()) == before
