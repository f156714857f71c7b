"""Reproductions from a hostile test of folder indexing and sync (issue 23). Each test states what should happen;
at commit 87d479b they failed; each is fixed. Run: .venv/bin/python -m pytest tests/searchengine/reading/test_hostile_files.py"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from searchengine.reading.file_documents import FileReport, read_files
from searchengine.reading.file_rules import FileRules
from searchengine.reading.html import extract as html
from searchengine.reading.markdown import extract as markdown
from searchengine.reading.walk import find_files, matches
from tests.searchengine.cli.test_cli import run


def _ids(root: Path, rules: FileRules = FileRules()) -> set[str]:
    report = FileReport()
    return {document.external_id for document in read_files([root], root, rules, report)}


# --- a bad file name must be one skip, not the end of the run --------------------------------------------------


def test_a_file_name_that_is_not_utf8_does_not_stop_index_or_sync(tmp_path: Path, tiny_model: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "good.md").write_text("# Good\n\nA readable note about owls.\n", encoding="utf-8")
    result = run("index", root, "-d", tmp_path / "i", "--model", tiny_model)
    assert result.exit_code == 0, result.output
    (root / "new.md").write_text("# New\n\nA new note about herons.\n", encoding="utf-8")
    with open(os.path.join(os.fsencode(root), b"caf\xe9.md"), "w", encoding="utf-8") as handle:  # latin-1 name
        handle.write("# Cafe\n\nA note whose name is latin-1.\n")
    result = run("sync", "-d", tmp_path / "i")
    assert result.exit_code == 0, result.output  # today: "document 1 holds a lone surrogate (\udce9)..."
    assert "+ new.md" in result.output


# --- HTML --------------------------------------------------------------------------------------------------------


def test_html_with_many_unclosed_paragraphs_is_read(tmp_path: Path) -> None:
    """</p> and </li> are optional in HTML; html.parser nests each unclosed one, so 600 of them exceed the
    recursion limit and the whole page is skipped as "nested too deeply"."""
    page = "<html><body>" + "".join(f"<p>paragraph {n}\n" for n in range(600)) + "</body></html>"
    assert "paragraph 599" in html(page.encode(), "old.html").text


def test_html_reads_every_article_of_a_page() -> None:
    page = "<html><body><article><p>First post, llamas.</p></article><article><p>Second post, alpacas.</p></article>"
    assert "alpacas" in html(page.encode(), "blog.html").text


def test_html_whose_body_is_one_form_keeps_its_text() -> None:
    page = '<html><body><form id="form1"><h1>Products</h1><p>We sell handmade chairs.</p></form></body></html>'
    assert "handmade chairs" in html(page.encode(), "shop.aspx.html").text  # ASP.NET WebForms pages look like this


# --- Markdown front matter -----------------------------------------------------------------------------------------


def test_a_typo_in_a_front_matter_date_does_not_lose_the_note() -> None:
    note = "---\ntitle: Trip\ndate: 2024-13-45\n---\n# Trip\n\nNotes about Lisbon.\n"
    assert "Lisbon" in markdown(note.encode(), "trip.md").text  # today: ValueError, the whole file skipped


def test_a_front_matter_alias_bomb_is_bounded() -> None:
    """A 370-byte file made `index` use 800 MB and write 38 MB of metadata; one more level: 1.8 GB and 97 s."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 7)]
    note = "---\n" + "\n".join(lines) + "\n---\n# Body\n\ntext\n"
    started = time.perf_counter()
    try:
        extracted = markdown(note.encode(), "lol.md")
    except Exception:  # noqa: BLE001 (refusing the front matter, or the file, is a fine answer)
        return
    assert len(json.dumps(extracted.metadata)) < 100_000  # today 40 MB of metadata
    assert time.perf_counter() - started < 1.0  # today 3.6-5.5 s (a timing, on a busy machine)


def test_a_leading_thematic_break_is_not_taken_for_front_matter() -> None:
    note = "---\n\nIntro paragraph, not YAML.\n\n---\n\nBody.\n"
    assert "Intro paragraph" in markdown(note.encode(), "hr.md").text  # today silently dropped


# --- globs and limits ---------------------------------------------------------------------------------------------


def test_include_double_star_matches_top_level_files() -> None:
    assert matches("top.md", ["**/*.md"])  # as in simonw/llm `--files DIR '**/*.md'`, and gitignore


def test_exclude_a_folder_by_its_name(tmp_path: Path) -> None:
    (tmp_path / "drafts").mkdir()
    (tmp_path / "drafts" / "d.md").write_text("# d\n\ndraft\n", encoding="utf-8")
    (tmp_path / "top.md").write_text("# t\n\ntop\n", encoding="utf-8")
    found = {item.shown for item in find_files([tmp_path], tmp_path, (), ("drafts",))}
    assert found == {"top.md"}  # today `--exclude drafts` (or drafts/) excludes nothing, silently


@pytest.mark.parametrize("max_mb", [1e7, float("inf")])
def test_a_large_max_file_size_means_no_limit_not_a_crash(tmp_path: Path, max_mb: float) -> None:
    (tmp_path / "n.md").write_text("# n\n\nnote\n", encoding="utf-8")
    assert _ids(tmp_path, FileRules(max_mb=max_mb)) == {"n.md"}  # today MemoryError / OverflowError


# --- the index remembers how it reads its folders -------------------------------------------------------------------


def test_add_keeps_the_rules_the_index_was_built_with(tmp_path: Path, tiny_model: Path) -> None:
    root, other = tmp_path / "notes", tmp_path / "other"
    (root / "private").mkdir(parents=True)
    other.mkdir()
    (root / "public.md").write_text("# Public\n\npublic note\n", encoding="utf-8")
    (root / "private" / "secret.md").write_text("# Secret\n\nsecret note\n", encoding="utf-8")
    (other / "o.md").write_text("# Other\n\nother note\n", encoding="utf-8")
    index = tmp_path / "i"
    assert run("index", root, "-d", index, "--model", tiny_model, "--exclude", "private/*").exit_code == 0
    assert run("add", other, "-d", index).exit_code == 0
    result = run("sync", "-d", index)
    assert result.exit_code == 0, result.output
    assert "secret.md" not in result.output  # today: "+ private/secret.md"


def test_sync_removes_the_document_of_a_deleted_file_named_at_build(tmp_path: Path, tiny_model: Path) -> None:
    one, two = tmp_path / "one.md", tmp_path / "two.md"
    one.write_text("# One\n\nfirst\n", encoding="utf-8")
    two.write_text("# Two\n\nsecond\n", encoding="utf-8")
    assert run("index", one, two, "-d", tmp_path / "i", "--model", tiny_model).exit_code == 0
    two.unlink()
    result = run("sync", "-d", tmp_path / "i")
    assert result.exit_code == 0, result.output  # today: "Error: .../two.md does not exist", on every sync
    assert "- two.md" in result.output


def test_sync_keeps_every_document_when_the_folder_itself_cannot_be_read(
    tmp_path: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`chmod 000 notes` (or a locked mount) made `sync` remove all documents: the root's skip is shown as ".",
    which no document path starts with. Reproduced by hand with `setpriv --bounding-set=-dac_override,...` as root;
    here os.walk reports the error for the root as it does for an unreadable folder."""
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nfirst note\n", encoding="utf-8")
    (root / "b.md").write_text("# B\n\nsecond note\n", encoding="utf-8")
    assert run("index", root, "-d", tmp_path / "i", "--model", tiny_model).exit_code == 0
    walk = os.walk

    def unreadable_root(top, topdown=True, onerror=None, followlinks=False):  # noqa: ANN001, ANN202
        if Path(top) == root:
            onerror(PermissionError(13, "Permission denied", str(root)))
            return iter(())
        return walk(top, topdown, onerror, followlinks)

    monkeypatch.setattr("searchengine.reading.walk.os.walk", unreadable_root)
    result = run("sync", "-d", tmp_path / "i")
    assert "removed" in result.output and "0 removed" in result.output, result.output  # today: "2 removed"


# --- fixed after the hostile report: more of its findings, each a test ----------------------------------------------


def test_a_file_emptied_since_the_last_sync_loses_its_document(tmp_path: Path, tiny_model: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nowls at night\n", encoding="utf-8")
    (root / "b.md").write_text("# B\n\nherons by day\n", encoding="utf-8")
    assert run("index", root, "-d", tmp_path / "i", "--model", tiny_model).exit_code == 0
    (root / "a.md").write_text("  \n", encoding="utf-8")
    (root / "b.md").write_bytes(b"\x00binary now")
    result = run("sync", "-d", tmp_path / "i")
    assert "- a.md" in result.output and "b.md: holds NUL bytes" in result.output, result.output
    assert "1 removed" in result.output  # b.md cannot be read this time: its document stays


def test_overlapping_roots_read_each_file_once(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "top.md").write_text("# t\n\ntop\n", encoding="utf-8")
    (tmp_path / "sub" / "s.md").write_text("# s\n\nsub\n", encoding="utf-8")
    found = [item.shown for item in find_files([tmp_path, tmp_path / "sub"], tmp_path)]
    assert found == ["top.md", "sub/s.md"]


def test_a_device_or_an_empty_path_is_refused_in_one_line(tmp_path: Path, tiny_model: Path) -> None:
    (tmp_path / "zero.md").symlink_to("/dev/zero")
    for args, said in (
        (["/dev/zero"], "is a device"),
        ([tmp_path / "zero.md"], "not a folder or a regular file"),
        ([""], "an empty path"),
    ):
        result = run("index", *args, "-d", tmp_path / "i", "--model", tiny_model)
        assert result.exit_code == 1 and said in result.output, result.output


def test_a_short_file_hit_names_the_section_of_its_highlighted_sentence(tmp_path: Path, tiny_encoder) -> None:  # noqa: ANN001
    from searchengine.engine.build_settings import BuildSettings
    from searchengine.engine.files import files_record, read_paths
    from searchengine.engine.search_engine import SearchEngine

    root = tmp_path / "notes"
    root.mkdir()
    (root / "n.md").write_text("# Garden\n\nWater the seed.\n\n# Kitchen\n\nBake the bread in the oven.\n", "utf-8")
    documents, _ = read_paths([root], FileRules())
    engine = SearchEngine.build(
        documents,
        tmp_path / "i",
        BuildSettings(passages=True, reading=files_record([root], root, FileRules())),
        encoder=tiny_encoder,
    )
    [hit] = engine.search("bread oven", k=1, mode="keyword", highlight=True)
    assert hit.span is None and hit.location == "Kitchen"
