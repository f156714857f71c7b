"""Folders read into documents: what the walk finds and leaves out, the skip rules, and the ids and metadata of
what it reads."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest

from searchengine.errors import SearchEngineError
from searchengine.reading.corpus import JsonFields
from searchengine.reading.file_documents import FileFacts, FileReport, read_files
from searchengine.reading.file_rules import FileRules
from searchengine.reading.walk import ALREADY_READ, common_base
from tests.searchengine.reading.made_files import encrypted_pdf, notes_folder, scanned_pdf


def _read(roots: list[Path], rules: FileRules = FileRules(), known: dict | None = None) -> tuple[dict, FileReport]:
    report = FileReport()
    documents = {doc.external_id: doc for doc in read_files(roots, common_base(roots), rules, report, known)}
    return documents, report


def _folder(tmp_path: Path, files: dict[str, bytes]) -> Path:
    """A folder `data` holding `files` (name -> bytes)."""
    root = tmp_path / "data"
    root.mkdir()
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


def test_a_folder_is_read_recursively_by_format_leaving_out_hidden_files(tmp_path: Path) -> None:
    documents, report = _read([notes_folder(tmp_path / "notes")])
    assert sorted(documents) == [
        "garden.md",
        "guides/bike.html",
        "guides/manual.pdf#1",
        "guides/manual.pdf#2",
        "todo.txt",
    ]
    assert report.read == {"html": 1, "markdown": 1, "pdf": 1, "text": 1} and report.skipped == []
    garden = documents["garden.md"]
    assert garden.metadata["title"] == "Garden notes" and garden.metadata["tags"] == ["plants", "soil"]
    assert garden.metadata["format"] == "markdown" and garden.metadata["path"] == "garden.md"
    assert [label for _, label in garden.metadata["sections"]] == ["Watering", "Watering › In winter", "Harvest"]
    assert garden.section_starts == tuple(start for start, _ in garden.metadata["sections"])
    page = documents["guides/manual.pdf#2"]  # each page of a PDF is a document
    assert page.text == "Salt the soup at the end." and page.metadata["page"] == 2
    assert page.metadata["path"] == "guides/manual.pdf" and page.metadata["sections"] == [[0, "page 2"]]
    assert documents["todo.txt"].metadata["title"] == "todo"


def test_include_and_exclude_globs_match_paths_and_names(tmp_path: Path) -> None:
    root = notes_folder(tmp_path / "notes")
    assert sorted(_read([root], FileRules(include=("*.md", "*.txt")))[0]) == ["garden.md", "todo.txt"]
    assert sorted(_read([root], FileRules(exclude=("guides/*",)))[0]) == ["garden.md", "todo.txt"]


def test_ids_of_several_folders_are_relative_to_their_common_folder(tmp_path: Path) -> None:
    first, second = notes_folder(tmp_path / "a"), notes_folder(tmp_path / "b")
    documents, _ = _read([first, second / "garden.md"])
    assert "a/garden.md" in documents and "b/garden.md" in documents and len(documents) == 6


def test_bad_files_are_skipped_with_their_reasons_and_the_rest_is_read(tmp_path: Path) -> None:
    root = notes_folder(tmp_path / "notes")
    encrypted_pdf(root / "locked.pdf", ["Hidden."])
    scanned_pdf(root / "scan.pdf")
    (root / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (root / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    (root / "empty.md").write_text("   \n", encoding="utf-8")
    (root / "big.txt").write_bytes(b"word " * 300_000)
    os.mkfifo(root / "pipe.md")
    (root / "loop").symlink_to(root)
    (root / "dangling.md").symlink_to(root / "missing.md")
    documents, report = _read([root], FileRules(max_mb=1))
    reasons = {skip.shown: skip.reason for skip in report.skipped}
    assert "encrypted" in reasons["locked.pdf"] and "OCR" in reasons["scan.pdf"]
    assert "binary" in reasons["image.md"] and "UTF-8" in reasons["latin.txt"]
    assert "no text" in reasons["empty.md"] and "1.5 MB, over the 1 MB limit" in reasons["big.txt"]
    assert "not a regular file" in reasons["pipe.md"] and "symlink loop" in reasons["loop"]
    assert "cannot be read" in reasons["dangling.md"]
    assert sorted(documents) == [
        "garden.md",
        "guides/bike.html",
        "guides/manual.pdf#1",
        "guides/manual.pdf#2",
        "todo.txt",
    ]


def test_of_a_folder_and_a_link_to_it_side_by_side_the_folder_is_read_whichever_sorts_first(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    (root / "zeta").mkdir(parents=True)
    (root / "zeta" / "plan.md").write_text("# Plan\n\nWater the roses.\n", encoding="utf-8")
    (root / "alias").symlink_to(root / "zeta")
    documents, report = _read([root])
    assert sorted(documents) == ["zeta/plan.md"]
    assert [(skip.shown, skip.reason) for skip in report.skipped] == [("alias", f"{ALREADY_READ}; left out")]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read files without read permission")
def test_a_file_you_may_not_read_is_skipped(tmp_path: Path) -> None:
    root = notes_folder(tmp_path / "notes")
    (root / "garden.md").chmod(0)
    documents, report = _read([root])
    assert "garden.md" not in documents and "Permission denied" in report.skipped[0].reason


def test_known_files_with_the_same_facts_or_content_are_left_out(tmp_path: Path) -> None:
    root = notes_folder(tmp_path / "notes")
    first, _ = _read([root])
    known = {
        doc.metadata["path"]: FileFacts(doc.metadata["size"], doc.metadata["mtime_ns"], doc.metadata["sha256"])
        for doc in first.values()
    }
    os.utime(root / "todo.txt", ns=(1, 1))  # touched, same content: given again for its new facts only
    (root / "garden.md").write_text("# Changed\n\nNew text.\n", encoding="utf-8")
    documents, report = _read([root], known=known)
    assert sorted(documents) == ["garden.md", "todo.txt"] and report.unchanged == 3
    assert report.refreshed == {"todo.txt"} and documents["todo.txt"].metadata["mtime_ns"] == 1
    assert report.seen == {"garden.md", "guides/bike.html", "guides/manual.pdf", "todo.txt"}


def test_a_path_that_is_missing_or_not_a_readable_format_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SearchEngineError, match="does not exist"):
        _read([tmp_path / "nothing"])
    (tmp_path / "data.xlsx").write_bytes(b"PK\x03\x04")
    with pytest.raises(SearchEngineError, match="not a format"):
        _read([tmp_path / "data.xlsx"])


def test_each_record_of_a_jsonl_or_csv_file_in_a_folder_is_a_document(tmp_path: Path) -> None:
    root = tmp_path / "data"
    root.mkdir()
    (root / "facts.jsonl").write_text(
        '{"text": "Kettles boil water.", "title": "Kitchen", "id": "k1", "path": "mine"}\n\n'
        '{"text": "Tomatoes like sun.", "id": 7}\n',
        encoding="utf-8",
    )
    (root / "rows.csv").write_text("text,year\nTrains leave at noon.,2021\n,2022\nRain tomorrow.,2023\n", "utf-8")
    documents, report = _read([root])
    assert sorted(documents) == ["facts.jsonl#1", "facts.jsonl#3", "rows.csv#2", "rows.csv#4"]
    assert report.read == {"jsonl": 1, "csv": 1}
    kettle = documents["facts.jsonl#1"]
    assert kettle.text == "Kettles boil water." and kettle.line == 1
    assert kettle.metadata["path"] == "facts.jsonl" and kettle.metadata["id"] == "k1"  # the file's path stays
    assert kettle.metadata["own_path"] == "mine" and kettle.metadata["title"] == "Kitchen"  # the record's, kept
    assert kettle.metadata["sections"] == [[0, "line 1"]] and kettle.metadata["record"] == 1
    assert documents["rows.csv#4"].metadata["year"] == "2023" and documents["rows.csv#4"].metadata["format"] == "csv"

    report = FileReport()
    fields = JsonFields(title="title", id="id")
    named = {doc.external_id: doc for doc in read_files([root], root, FileRules(), report, None, fields)}
    assert sorted(named) == ["facts.jsonl#7", "facts.jsonl#k1"]
    assert [(skip.shown, skip.reason) for skip in report.skipped] == [
        ("rows.csv", 'line 2 needs a string or integer "id" field (the id)')
    ]
    assert named["facts.jsonl#k1"].text == "Kitchen Kettles boil water."
    assert (
        named["facts.jsonl#k1"].metadata["title"] == "Kitchen" and named["facts.jsonl#7"].metadata["title"] == "facts"
    )


def test_a_record_file_with_a_bad_record_is_skipped_whole_naming_it(tmp_path: Path) -> None:
    root = tmp_path / "data"
    root.mkdir()
    (root / "bad.jsonl").write_text('{"text": "fine"}\n{"text": NaN}\n', encoding="utf-8")
    (root / "none.csv").write_text("text\n\n", encoding="utf-8")
    (root / "ok.jsonl").write_text('{"text": "fine"}\n', encoding="utf-8")
    documents, report = _read([root])
    assert sorted(documents) == ["ok.jsonl#1"]
    reasons = {skip.shown: (skip.reason, skip.keeps) for skip in report.skipped}
    assert reasons["bad.jsonl"] == (
        "line 2 holds NaN, which is not a JSON number; write null or a number instead",
        True,
    )
    assert reasons["none.csv"] == ("holds no record with text", False)


def test_a_record_with_an_empty_id_skips_its_file_rather_than_taking_a_line_id(tmp_path: Path) -> None:
    root = tmp_path / "data"
    root.mkdir()  # line 1's empty id would be read as "facts.jsonl#1", line 2's own id
    (root / "facts.jsonl").write_text('{"text": "Kettles boil.", "id": ""}\n{"text": "Sun.", "id": 1}\n', "utf-8")
    (root / "rows.csv").write_text("text,id\nTrains leave.,\n", "utf-8")
    report = FileReport()
    fields = JsonFields(id="id")
    assert list(read_files([root], root, FileRules(), report, None, fields)) == []
    assert sorted((skip.shown, skip.reason, skip.keeps) for skip in report.skipped) == [
        ("facts.jsonl", 'line 1 has an empty "id" field (the id); give every record an id', True),
        ("rows.csv", 'line 2 has an empty "id" field (the id); give every record an id', True),
    ]


def test_record_files_are_decoded_as_text_files_are_utf16_and_utf32_by_their_mark(tmp_path: Path) -> None:
    root = _folder(
        tmp_path,
        {
            "facts.jsonl": '{"text": "Kettles boil."}\n'.encode("utf-16"),
            "rows.csv": b"\xfe\xff" + "text\nTrains leave.\n".encode("utf-16-be"),
            "owls.txt": "Owls hunt.".encode("utf-32"),
            "bad.jsonl": b"\xff\xfe{",  # a mark, then half a UTF-16 character
        },
    )
    documents, report = _read([root])
    assert {key: doc.text for key, doc in documents.items()} == {
        "facts.jsonl#1": "Kettles boil.",
        "rows.csv#2": "Trains leave.",
        "owls.txt": "Owls hunt.",
    }
    assert [(skip.shown, skip.reason) for skip in report.skipped] == [
        ("bad.jsonl", "starts as UTF-16 (a byte order mark) but is not valid UTF-16; convert it to UTF-8")
    ]


def test_a_record_or_front_matter_keeps_its_title_and_fields_named_like_the_files(tmp_path: Path) -> None:
    records = (
        b'{"text": "Kettles boil.", "title": " Kitchen ", "path": "a/b", "own_path": "x", "size": 3, "head": "H"}\n'
        b'{"text": "Sun.", "title": 5}\n'
    )
    root = _folder(tmp_path, {"facts.jsonl": records})
    documents, _ = _read([root])
    kettle, sun = documents["facts.jsonl#1"].metadata, documents["facts.jsonl#2"].metadata
    assert (kettle["title"], kettle["path"], kettle["size"], kettle["head"]) == (
        "Kitchen",
        "facts.jsonl",
        len(records),
        "H",
    )
    assert (kettle["own_path"], kettle["own_own_path"], kettle["own_size"]) == ("x", "a/b", 3)
    assert "own_title" not in kettle and (sun["title"], sun["own_title"]) == ("facts", 5)  # a title is text

    report = FileReport()  # a title field named: the record's own title is kept beside it
    titled = list(read_files([root], root, FileRules(), report, None, JsonFields(title="head")))
    assert (titled[0].metadata["title"], titled[0].metadata["own_title"]) == ("H", " Kitchen ")
    assert titled[0].text == "H Kettles boil."

    (root / "note.md").write_text("---\ntitle: Note\npath: elsewhere\n---\n\nText.\n", encoding="utf-8")
    note = _read([root])[0]["note.md"].metadata  # front matter follows the same rule
    assert (note["title"], note["path"], note["own_path"]) == ("Note", "note.md", "elsewhere")


def test_gzipped_files_in_a_folder_are_read_as_the_files_they_hold(tmp_path: Path) -> None:
    files = {
        "facts.jsonl.gz": gzip.compress(b'{"text": "Kettles boil."}\n'),
        "rows.CSV.gz": gzip.compress(b"text\nTrains leave.\n"),
        "owls.txt.gz": gzip.compress(b"Owls hunt."),
        "large.md.gz": gzip.compress(b"word " * 300_000),  # 6 KB that unzip to 1.5 MB
        "broken.jsonl.gz": b"not gzip",
        "changelog.gz": gzip.compress(b"no format"),  # no suffix read: passed over, as .xlsx is
    }
    root = _folder(tmp_path, files)
    documents, report = _read([root], FileRules(max_mb=1))
    assert sorted(documents) == ["facts.jsonl.gz#1", "owls.txt.gz", "rows.CSV.gz#2"]
    assert report.read == {"jsonl": 1, "csv": 1, "text": 1} and documents["owls.txt.gz"].metadata["title"] == "owls"
    assert documents["facts.jsonl.gz#1"].metadata["title"] == "facts"
    reasons = {skip.shown: skip.reason for skip in report.skipped}
    assert reasons == {
        "broken.jsonl.gz": "is not a readable gzip file (Not a gzipped file (b'no'))",
        "large.md.gz": "unzips to more than the 1 MB limit (--max-file-size)",
    }


def test_a_csv_record_with_line_breaks_in_a_cell_is_named_by_the_line_it_starts_on(tmp_path: Path) -> None:
    root = tmp_path / "data"
    root.mkdir()
    (root / "rows.csv").write_bytes(
        b'text,year\n"Trains leave\r\nat noon\rsharp.",2021\n\n"Rain\ntomorrow.",2022\nSun.,1\n'
    )
    documents, _ = _read([root])
    assert sorted(documents) == ["rows.csv#2", "rows.csv#6", "rows.csv#8"]
    assert documents["rows.csv#6"].metadata["sections"] == [[0, "line 6"]]
