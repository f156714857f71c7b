"""`searchengine index FOLDER`, `add FOLDER` and `sync`: what they read, skip and say, and what they refuse."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from searchengine import SearchEngine
from tests.searchengine.cli.test_cli import assert_one_line_error, run
from tests.searchengine.reading.made_files import encrypted_pdf, notes_folder, pdf_bytes


def test_index_a_folder_says_what_it_read_and_skipped(tmp_path: Path, tiny_model: Path) -> None:
    root = notes_folder(tmp_path / "notes")
    encrypted_pdf(root / "locked.pdf", ["Hidden."])
    result = run("index", root, "-d", tmp_path / "i", "--model", tiny_model)
    assert result.exit_code == 0, result.output
    assert "Read 4 files (1 html, 1 markdown, 1 pdf, 1 text)." in result.output
    assert "Skipped 1 file:\n  locked.pdf: is encrypted" in result.output
    hits = json.loads(run("query", "salt the soup", "-d", tmp_path / "i", "--json", "--mode", "keyword").output)
    assert hits["hits"][0]["external_id"] == "guides/manual.pdf#2" and hits["hits"][0]["location"] == "page 2"
    assert hits["hits"][0]["metadata"]["title"] == "The oven must be hot before the bread goes in."


def test_strict_writes_nothing_when_a_file_is_skipped(tmp_path: Path, tiny_model: Path) -> None:
    root = notes_folder(tmp_path / "notes")
    (root / "image.md").write_bytes(b"\x00\x01\x02")
    result = run("index", root, "-d", tmp_path / "i", "--model", tiny_model, "--strict")
    assert_one_line_error(result, "1 file could not be read, e.g. image.md", "--strict")
    assert not (tmp_path / "i").exists()


def test_an_index_of_other_input_needs_replace(tmp_path: Path, tiny_model: Path) -> None:
    root = notes_folder(tmp_path / "notes")
    assert run("index", root, "-d", tmp_path / "i", "--model", tiny_model).exit_code == 0
    other = tmp_path / "other.txt"
    other.write_text("one\ntwo\n", encoding="utf-8")
    assert_one_line_error(
        run("index", other, "-d", tmp_path / "i", "--model", tiny_model), "already holds an index of 5 documents"
    )
    assert run("index", root, "-d", tmp_path / "i", "--model", tiny_model).exit_code == 0  # same input: a rebuild
    assert run("index", other, "-d", tmp_path / "i", "--model", tiny_model, "--replace").exit_code == 0


def test_append_creates_the_index_and_add_takes_more_folders(tmp_path: Path, tiny_model: Path) -> None:
    first, second = notes_folder(tmp_path / "a"), notes_folder(tmp_path / "b")
    result = run("index", first, "-d", tmp_path / "i", "--model", tiny_model, "--append")
    assert result.exit_code == 0, result.output
    result = run("add", second / "guides", "-d", tmp_path / "i")
    assert result.exit_code == 0, result.output
    ids = {
        hit["external_id"]
        for hit in json.loads(
            run("query", "the", "-d", tmp_path / "i", "-k", "20", "--json", "--mode", "keyword").output
        )["hits"]
    }
    assert {"garden.md", "../b/guides/bike.html"} <= ids
    (second / "guides" / "bike.html").unlink()
    result = run("sync", "-d", tmp_path / "i")
    assert result.exit_code == 0, result.output
    assert "0 added, 0 updated, 1 removed" in result.output and "  - ../b/guides/bike.html" in result.output


def test_sync_reports_changes_and_refuses_an_index_of_a_corpus_file(tmp_path: Path, tiny_model: Path) -> None:
    root = notes_folder(tmp_path / "notes")
    run("index", root, "-d", tmp_path / "i", "--model", tiny_model)
    (root / "todo.txt").write_text("Book a plane ticket.\n", encoding="utf-8")
    result = run("sync", "-d", tmp_path / "i")
    assert result.exit_code == 0, result.output
    assert "0 added, 1 updated, 0 removed, 3 unchanged, 0 skipped." in result.output
    corpus = tmp_path / "c.txt"
    corpus.write_text("one\n", encoding="utf-8")
    run("index", corpus, "-d", tmp_path / "j", "--model", tiny_model)
    assert_one_line_error(run("sync", "-d", tmp_path / "j"), "not built from folders")


def test_file_options_that_do_not_fit_are_refused(tmp_path: Path, tiny_model: Path) -> None:
    root = notes_folder(tmp_path / "notes")
    assert_one_line_error(run("index", root, "-d", tmp_path / "i", "--jsonl"), "drop it")
    assert_one_line_error(run("index", root, "-d", tmp_path / "i", "--lines"), "name it alone")
    whole = run("index", root / "todo.txt", "-d", tmp_path / "w", "--model", tiny_model, "--whole")
    assert "Read 1 file (1 text)." in whole.output
    lines = run("index", root / "todo.txt", "-d", tmp_path / "l", "--model", tiny_model)
    assert "Indexed 2 documents" in lines.output


def test_an_infinite_file_size_limit_is_no_limit_for_index_info_and_sync(tmp_path: Path, tiny_model: Path) -> None:
    """`--max-file-size inf` read every file, then failed as a traceback when the index recorded its rules (JSON
    has no infinity); it is recorded as no limit, which info shows and sync keeps."""
    root, index = notes_folder(tmp_path / "notes"), tmp_path / "i"
    result = run("index", root, "-d", index, "--model", tiny_model, "--max-file-size", "inf")
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    assert "notes (files of any size)" in run("info", "-d", index).output
    (root / "new.md").write_text("# New\n\nA new note about herons.\n", encoding="utf-8")
    synced = run("sync", "-d", index)
    assert synced.exit_code == 0 and "+ new.md" in synced.output, synced.output


def test_records_in_a_folder_are_read_with_the_fields_the_index_records(tmp_path: Path, tiny_model: Path) -> None:
    root = notes_folder(tmp_path / "notes")
    facts = root / "facts.jsonl"
    facts.write_text(
        '{"text": "Kettles boil water.", "id": "k1"}\n{"text": "Tomatoes like sun.", "id": "t1"}\n', "utf-8"
    )
    index = tmp_path / "i"
    result = run("index", root, "-d", index, "--model", tiny_model, "--id-field", "id", "--include", "*.jsonl")
    assert result.exit_code == 0 and "Read 1 file (1 jsonl)." in result.output, result.output
    assert "notes (include '*.jsonl') (files read by format; records' id field 'id';" in run("info", "-d", index).output
    facts.write_text(
        '{"text": "Kettles boil water.", "id": "k1"}\n{"text": "Cucumbers need water.", "id": "c1"}\n', "utf-8"
    )
    assert "0 added, 1 updated, 0 removed" in run("sync", "-d", index).output
    hits = json.loads(run("query", "water", "-d", index, "--json", "--mode", "keyword").output)["hits"]
    assert sorted(hit["external_id"] for hit in hits) == ["facts.jsonl#c1", "facts.jsonl#k1"]
    assert_one_line_error(
        run("add", root, "-d", index, "--id-field", "key"), "reads the records of .jsonl and .csv files with"
    )


def test_add_reads_a_jsonl_corpus_with_the_fields_the_index_was_built_with(tmp_path: Path, tiny_model: Path) -> None:
    first, more = tmp_path / "a.jsonl", tmp_path / "more.jsonl"
    first.write_text('{"id": "n1", "title": "garden", "body": "water the seed"}\n', encoding="utf-8")
    more.write_text('{"id": "n1", "title": "kitchen", "body": "bake the bread"}\n', encoding="utf-8")
    built = run(
        "index",
        first,
        "-d",
        tmp_path / "i",
        "--model",
        tiny_model,
        "--id-field",
        "id",
        "--title-field",
        "title",
        "--text-field",
        "body",
    )
    assert built.exit_code == 0, built.output
    result = run("add", more, "-d", tmp_path / "i")
    assert result.exit_code == 0, result.output
    assert "1 replaced by upsert with a new text" in result.output
    [hit] = json.loads(run("query", "bread", "-d", tmp_path / "i", "--json", "--mode", "keyword").output)["hits"]
    assert hit["external_id"] == "n1" and hit["text"] == "kitchen bake the bread"


_SYNC_WITHOUT_ENCODING = """
import sys

from typer.testing import CliRunner

from searchengine.cli import app

for _ in range(2):  # nothing changed, then the file removed before this process started
    result = CliRunner().invoke(app, ["sync", "-d", sys.argv[1]])
    assert result.exit_code == 0, result.output
    loaded = [name for name in ("transformers", "torch") if name in sys.modules]
    assert not loaded, f"sync imported {loaded}: {result.output}"
print(result.output)
"""


def test_a_sync_with_nothing_to_embed_loads_no_model(tmp_path: Path, tiny_model: Path) -> None:
    """A sync that embeds nothing (nothing changed, or only removals) imports neither torch nor transformers in a
    fresh process, so a scheduled sync of an unchanged folder pays none of their start-up time."""
    root = notes_folder(tmp_path / "notes")
    assert run("index", root, "-d", tmp_path / "i", "--model", tiny_model, "-q").exit_code == 0
    (root / "garden.md").unlink()
    completed = subprocess.run(
        [sys.executable, "-c", _SYNC_WITHOUT_ENCODING, str(tmp_path / "i")], capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "0 added, 0 updated, 0 removed" in completed.stdout


_SYNC_AN_EDIT = """
import sys

from typer.testing import CliRunner

from searchengine.cli import app

result = CliRunner().invoke(app, ["sync", "-d", sys.argv[1], "--precision", "fp32"])
assert result.exit_code == 0, result.output
loaded = [name for name in ("transformers", "torch") if name in sys.modules]
assert not loaded, f"sync imported {loaded}: {result.output}"
print(result.output)
"""


def test_a_sync_that_embeds_through_the_cached_export_loads_no_model(tmp_path: Path, tiny_model: Path) -> None:
    """A changed file is embedded by the torch-free ONNX encoder where the Encoder would run the same export (fp32
    on the CPU): a fresh `sync` imports neither torch nor transformers, and finds the new text."""
    root = notes_folder(tmp_path / "notes")
    index = tmp_path / "i"
    assert run("index", root, "-d", index, "--model", tiny_model, "--precision", "fp32", "-q").exit_code == 0
    (root / "garden.md").write_text("# Garden\n\nThe zeppelin landed on the lawn.\n", encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, "-c", _SYNC_AN_EDIT, str(index)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "0 added, 1 updated, 0 removed" in completed.stdout
    hits = json.loads(run("query", "zeppelin landed", "-d", index, "--json", "--mode", "dense", "-k", "1").output)
    assert hits["hits"][0]["external_id"] == "garden.md"


@contextlib.contextmanager
def _watcher(index: Path, seconds: float) -> Iterator[subprocess.Popen]:
    """`searchengine sync --watch` on `index` in a process of its own, killed after `seconds` (a watcher that never
    answers ends the test's reads, not the run) and stopped when the block ends."""
    watcher = subprocess.Popen(
        [sys.executable, "-m", "searchengine", "sync", "--watch", "-d", str(index)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = threading.Timer(seconds, watcher.kill)
    deadline.start()
    try:
        yield watcher
    finally:
        deadline.cancel()
        watcher.terminate()
        watcher.wait(timeout=30)


def test_sync_watch_picks_up_a_new_file(tmp_path: Path, tiny_model: Path) -> None:
    root = notes_folder(tmp_path / "notes")
    assert run("index", root, "-d", tmp_path / "i", "--model", tiny_model).exit_code == 0
    with _watcher(tmp_path / "i", 60) as watcher:
        assert "Watching" in watcher.stderr.readline()
        time.sleep(0.5)
        (root / "weather.md").write_text("# Storm\n\nRain and wind tonight.\n", encoding="utf-8")
        lines = [watcher.stdout.readline() for _ in range(3)]  # the first sync, then the one the change made
        assert any("1 added" in line for line in lines) and any("+ weather.md" in line for line in lines), lines
    hits = json.loads(run("query", "storm", "-d", tmp_path / "i", "--json", "--mode", "keyword").output)["hits"]
    assert [hit["external_id"] for hit in hits] == ["weather.md"]


def test_sync_watch_watches_a_folder_added_while_it_runs(tmp_path: Path, tiny_model: Path) -> None:
    """The watcher looked up the index's folders once, so one added by `add` or `index --append` meanwhile was never
    watched (hostile test of serve)."""
    first, second = notes_folder(tmp_path / "a"), notes_folder(tmp_path / "b")
    index = tmp_path / "i"
    assert run("index", first, "-d", index, "--model", tiny_model).exit_code == 0
    with _watcher(index, 90) as watcher:
        assert "Watching" in watcher.stderr.readline()
        assert run("add", second, "-d", index).exit_code == 0
        assert str(second.absolute()) in watcher.stderr.readline()  # watching both now
        time.sleep(1)  # the line is printed just before the watch starts
        (second / "weather.md").write_text("# Storm\n\nRain and wind tonight.\n", encoding="utf-8")
        lines = [watcher.stdout.readline()]  # the first sync's summary, then the one the change made
        while "weather.md" not in lines[-1] and lines[-1]:
            lines.append(watcher.stdout.readline())
        assert any("1 added" in line for line in lines) and "weather.md" in lines[-1], lines
    hits = json.loads(run("query", "storm", "-d", index, "--json", "--mode", "keyword").output)["hits"]
    assert [hit["external_id"].endswith("weather.md") for hit in hits] == [True]


def test_index_of_a_folder_reads_its_records_with_the_fields_given(tmp_path: Path, tiny_model: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "facts.jsonl").write_text('{"body": "Kettles boil water.", "key": "k1", "head": "Tea"}\n', "utf-8")
    index = tmp_path / "i"
    fields = ("--id-field", "key", "--text-field", "body", "--title-field", "head")
    result = run("index", root, "-d", index, "--model", tiny_model, *fields)
    assert result.exit_code == 0 and "Read 1 file (1 jsonl)." in result.output, result.output
    [hit] = json.loads(run("query", "water", "-d", index, "--json", "--mode", "keyword").output)["hits"]
    assert hit["external_id"] == "facts.jsonl#k1" and hit["text"] == "Tea Kettles boil water."
    assert "0 added, 0 updated, 0 removed" in run("sync", "-d", index).output


def test_info_names_every_root_with_its_own_rules(tmp_path: Path, tiny_model: Path) -> None:
    first, second = notes_folder(tmp_path / "a"), notes_folder(tmp_path / "b")
    index = tmp_path / "i"
    built = run("index", first, "-d", index, "--model", tiny_model, "--include", "*.md", "--exclude", "x*")
    assert built.exit_code == 0, built.output
    assert run("add", second, "-d", index, "--max-file-size", "0.5").exit_code == 0
    shown = run("info", "-d", index).output
    assert f"{first.absolute()} (include '*.md', exclude 'x*'), {second.absolute()} (files up to 0.5 MB) (" in shown


def test_append_that_makes_the_index_reads_records_with_the_fields_given(tmp_path: Path, tiny_model: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "facts.jsonl").write_text('{"body": "Kettles boil water.", "key": "k1"}\n', "utf-8")
    index = tmp_path / "i"
    fields = ("--id-field", "key", "--text-field", "body")
    result = run("index", root, "-d", index, "--model", tiny_model, "--append", *fields)
    assert result.exit_code == 0 and "Read 1 file (1 jsonl)." in result.output, result.output
    [hit] = json.loads(run("query", "water", "-d", index, "--json", "--mode", "keyword").output)["hits"]
    assert hit["external_id"] == "facts.jsonl#k1"
    assert "0 added, 0 updated, 0 removed" in run("sync", "-d", index).output
    assert run("index", root, "-d", index, "--append", *fields).exit_code == 0


def test_a_record_file_added_inside_the_folders_is_read_as_sync_reads_it(tmp_path: Path, tiny_model: Path) -> None:
    root = notes_folder(tmp_path / "notes")
    index = tmp_path / "i"
    assert run("index", root, "-d", index, "--model", tiny_model).exit_code == 0
    (root / "new.jsonl").write_text('{"text": "Beetroot stains the board."}\n', "utf-8")
    result = run("add", root / "new.jsonl", "-d", index)
    assert result.exit_code == 0 and "Read 1 file (1 jsonl)." in result.output, result.output
    assert "0 added, 0 updated, 0 removed" in run("sync", "-d", index).output  # not added a second time
    hits = json.loads(run("query", "beetroot", "-d", index, "--json", "--mode", "keyword").output)["hits"]
    assert [hit["external_id"] for hit in hits] == ["new.jsonl#1"]


def test_sync_of_a_file_also_read_through_its_folder_warns_of_nothing(tmp_path: Path, tiny_model: Path) -> None:
    root = notes_folder(tmp_path / "notes")
    index = tmp_path / "i"
    assert run("index", root, root / "garden.md", "-d", index, "--model", tiny_model).exit_code == 0
    result = run("sync", "-d", index)
    assert result.exit_code == 0 and "0 skipped" in result.output and "unmounted" not in result.output, result.output
    (root / "garden.md").unlink()
    assert "0 added, 0 updated, 1 removed" in run("sync", "-d", index).output


def test_gzipped_and_utf16_record_files_in_a_folder_are_indexed_and_synced(tmp_path: Path, tiny_model: Path) -> None:
    root = tmp_path / "data"
    root.mkdir()
    (root / "facts.jsonl.gz").write_bytes(
        gzip.compress(b'{"text": "Kettles boil.", "title": "Kitchen", "path": "a"}\n')
    )
    (root / "rows.csv").write_bytes("text\nTrains leave at noon.\n".encode("utf-16"))
    index = tmp_path / "i"
    result = run("index", root, "-d", index, "--model", tiny_model)
    assert result.exit_code == 0 and "Read 2 files (1 csv, 1 jsonl)." in result.output, result.output
    hits = json.loads(run("query", "kettles trains", "-d", index, "--json", "--mode", "keyword").output)["hits"]
    assert sorted(hit["external_id"] for hit in hits) == ["facts.jsonl.gz#1", "rows.csv#2"]
    kettle = next(hit["metadata"] for hit in hits if hit["external_id"] == "facts.jsonl.gz#1")
    assert (kettle["title"], kettle["path"], kettle["own_path"]) == ("Kitchen", "facts.jsonl.gz", "a")
    (root / "facts.jsonl.gz").write_bytes(gzip.compress(b'{"text": "Kettles whistle."}\n'))
    result = run("sync", "-d", index)
    assert "0 added, 1 updated, 0 removed" in result.output and "~ facts.jsonl.gz" in result.output, result.output

    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "cut.jsonl.gz").write_bytes(b"not gzip")
    result = run("index", tmp_path / "bad", "-d", tmp_path / "j", "--model", tiny_model)
    assert_one_line_error(result, "1 file skipped, e.g. cut.jsonl.gz: is not a readable gzip file")


def test_passage_headings_are_on_unless_turned_off_and_append_keeps_them(tmp_path: Path, tiny_model: Path) -> None:
    root = notes_folder(tmp_path / "notes")
    for name, flag in (("on", None), ("off", "--no-passage-headings")):
        result = run("index", root, "-d", tmp_path / name, "--model", tiny_model, *([flag] if flag else []))
        assert result.exit_code == 0, result.output
    assert "each passage embedded after its heading" in run("info", "-d", tmp_path / "on").output
    assert "embedded after its heading" not in run("info", "-d", tmp_path / "off").output
    assert json.loads((tmp_path / "on" / "manifest.json").read_text())["passages"]["headings"] is True
    assert "headings" not in json.loads((tmp_path / "off" / "manifest.json").read_text())["passages"]
    assert_one_line_error(
        run("index", root, "-d", tmp_path / "off", "--append", "--passage-headings"),
        "--passage-headings/--no-passage-headings",
    )


def test_add_of_a_file_that_lost_records_or_pages_drops_them(tmp_path: Path, tiny_model: Path) -> None:
    root = notes_folder(tmp_path / "notes")
    index = tmp_path / "i"
    (root / "facts.jsonl").write_text('{"text": "Beetroot stains."}\n{"text": "Kale is bitter."}\n', "utf-8")
    assert run("index", root, "-d", index, "--model", tiny_model).exit_code == 0
    (root / "facts.jsonl").write_text('{"text": "Beetroot stains the board."}\n', "utf-8")
    (root / "guides" / "manual.pdf").write_bytes(pdf_bytes(["Preheat the oven."]))
    result = run("add", root / "facts.jsonl", root / "guides" / "manual.pdf", "-d", index)
    assert result.exit_code == 0, result.output
    engine = SearchEngine.open(index)
    ids = set(engine.external_ids())
    engine.close()
    assert {"facts.jsonl#1", "guides/manual.pdf#1"} <= ids
    assert not {"facts.jsonl#2", "guides/manual.pdf#2"} & ids  # as a fresh index (and `sync`) would have it
    assert "0 added, 0 updated, 0 removed" in run("sync", "-d", index).output


def test_a_folder_named_through_dot_dot_is_one_folder_with_its_plain_name(tmp_path: Path, tiny_model: Path) -> None:
    root = notes_folder(tmp_path / "notes")
    (root / "aliases").symlink_to("guides")  # its files keep their names through the link
    index = tmp_path / "i"
    assert run("index", tmp_path / "notes" / ".." / "notes", "-d", index, "--model", tiny_model).exit_code == 0
    result = run("sync", root, "-d", index)
    assert result.exit_code == 0 and "0 added, 0 updated, 0 removed" in result.output, result.output
    (root / "new.jsonl").write_text('{"text": "Beetroot stains the board."}\n', "utf-8")
    assert run("add", root / "new.jsonl", "-d", index).exit_code == 0  # read as `sync` reads it, not as a corpus
    assert "0 added, 0 updated, 0 removed" in run("sync", "-d", index).output
    engine = SearchEngine.open(index)
    sources = {document.source for document in engine.documents(["path=new.jsonl"])}
    engine.close()
    assert sources == {str(root / "new.jsonl")}


def test_syncing_a_moved_folder_by_its_new_name_says_to_index_it_again(tmp_path: Path, tiny_model: Path) -> None:
    root = notes_folder(tmp_path / "notes")
    index = tmp_path / "i"
    assert run("index", root, "-d", index, "--model", tiny_model).exit_code == 0
    root.rename(tmp_path / "moved")
    assert_one_line_error(  # not `add` it, which would keep the old documents beside the new ones
        run("sync", tmp_path / "moved", "-d", index), f"searchengine index {tmp_path / 'moved'} --replace"
    )


def test_a_folder_indexed_through_a_symlink_is_synced_and_added_to_by_its_real_name(
    tmp_path: Path, tiny_model: Path
) -> None:
    root = notes_folder(tmp_path / "notes")
    (tmp_path / "link").symlink_to(root)
    index = tmp_path / "i"
    assert run("index", tmp_path / "link", "-d", index, "--model", tiny_model).exit_code == 0
    result = run("sync", root / "guides", "-d", index)
    assert result.exit_code == 0 and "0 added, 0 updated, 0 removed" in result.output, result.output
    (root / "new.jsonl").write_text('{"text": "Beetroot stains the board."}\n', "utf-8")
    assert run("add", root / "new.jsonl", "-d", index).exit_code == 0  # read as the folder's, not as a corpus
    assert "0 added, 0 updated, 0 removed" in run("sync", "-d", index).output
    engine = SearchEngine.open(index)
    sources = {document.source for document in engine.documents(["path=new.jsonl"])}
    engine.close()
    assert sources == {str(tmp_path / "link" / "new.jsonl")}  # the folder's name as indexed
