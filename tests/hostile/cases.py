"""The bad inputs the hostile harness tries: corpora, JSON lines, filters, flags, broken index directories,
permissions and a full disk. Each is a Case (tests/hostile/harness.py)."""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np
from searchengine.indexer.commit.index_directory import file_checksum

from tests.hostile.harness import Case, Workspace, fill_disk

QUERY = ["query", "the cat", "-d", "{index}"]


def _manifest(workspace: Workspace) -> dict:
    return json.loads((workspace.index / "manifest.json").read_text(encoding="utf-8"))


def _write_manifest(workspace: Workspace, data: dict) -> None:
    (workspace.index / "manifest.json").write_text(json.dumps(data), encoding="utf-8")


def _file(workspace: Workspace, role: str) -> Path:
    return workspace.index / _manifest(workspace)["files"][role]


def _edit_manifest(edit):  # noqa: ANN001, ANN202
    def setup(workspace: Workspace) -> None:
        data = _manifest(workspace)
        edit(data)
        _write_manifest(workspace, data)

    return setup


def _drop(*keys: str):  # noqa: ANN202
    def edit(data: dict) -> None:
        target = data
        for key in keys[:-1]:
            target = target[key]
        del target[keys[-1]]

    return _edit_manifest(edit)


def _null(*keys: str):  # noqa: ANN202
    def edit(data: dict) -> None:
        target = data
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = None

    return _edit_manifest(edit)


def _replace_file(role: str, make):  # noqa: ANN001, ANN202
    """Swap an index file for other content, with the manifest's size updated so only the content is wrong."""

    def setup(workspace: Workspace) -> None:
        path = _file(workspace, role)
        make(path)
        data = _manifest(workspace)
        data["sizes"][role] = path.stat().st_size
        _write_manifest(workspace, data)

    return setup


def _edit_store(sql: str):  # noqa: ANN202
    """Run `sql` on the index's store: a damaged or hand-edited row."""

    def setup(workspace: Workspace) -> None:
        store = workspace.index / _manifest(workspace)["files"]["documents"]
        with closing(sqlite3.connect(store)) as connection:
            connection.execute(sql)
            connection.commit()

    return setup


def _segment(workspace: Workspace) -> Path:
    """The index's one vector segment (the hostile workspace's index is a fresh build)."""
    return next(workspace.index.glob("segment.*.faiss"))


def _replace_segment(make):  # noqa: ANN001, ANN202
    """Swap the segment file for other content, with the store's record of its size and checksum updated so only
    the content is wrong."""

    def setup(workspace: Workspace) -> None:
        path = _segment(workspace)
        make(path)
        store = workspace.index / _manifest(workspace)["files"]["documents"]
        with closing(sqlite3.connect(store)) as connection:
            connection.execute(
                "UPDATE segments SET size = ?, checksum = ? WHERE name = ?",
                (path.stat().st_size, file_checksum(path), path.name),
            )
            connection.commit()

    return setup


def _vectors_of_dimension(dimension: int):  # noqa: ANN202
    def make(path: Path) -> None:
        import faiss

        index = faiss.IndexIDMap2(faiss.IndexFlatIP(dimension))
        index.add_with_ids(np.ones((6, dimension), dtype=np.float32), np.arange(6, dtype=np.int64))
        faiss.write_index(index, str(path))

    return make


def _whitening_of_dimension(dimension: int, k: int):  # noqa: ANN202
    def make(path: Path) -> None:
        from safetensors.numpy import load_file, save_file

        tensors = load_file(str(path))
        names = list(tensors)
        shapes = {name: tensors[name].shape for name in names}
        fresh = {}
        for name in names:
            shape = shapes[name]
            fresh[name] = np.ones((dimension,) if len(shape) == 1 else (dimension, k), dtype=tensors[name].dtype)
        save_file(fresh, str(path))

    return make


def _input(name: str, content: str | bytes):  # noqa: ANN202
    def setup(workspace: Workspace) -> None:
        workspace.write(name, content)

    return setup


def _chmod(relative: str, mode: int):  # noqa: ANN202
    def setup(workspace: Workspace) -> None:
        (workspace.index / relative).chmod(mode)

    return setup


def _corpus_cases() -> list[Case]:
    deep = "[" * 100_000 + "]" * 100_000
    bad_files: dict[str, str | bytes] = {
        "empty.txt": "",
        "blank.txt": "\n  \n\t\n",
        "binary.txt": b"abc\x00def\n",
        "latin1.txt": "caf\u00e9 au lait\n".encode("latin-1"),
        "not-json.jsonl": "{not json}\n",
        "array.jsonl": "[1, 2]\n",
        "no-text.jsonl": '{"title": "x"}\n',
        "number-text.jsonl": '{"text": 5}\n',
        "empty-text.jsonl": '{"text": "  "}\n',
        "surrogate-text.jsonl": '{"text": "a \\ud800 b"}\n',
        "surrogate-meta.jsonl": '{"text": "fine", "note": "\\udfff"}\n',
        "surrogate-key.jsonl": '{"text": "fine", "\\ud800": 1}\n',
        "deep.jsonl": '{"text": "fine", "nest": ' + deep + "}\n",
        "deep-line.jsonl": deep + "\n",
        "nan.jsonl": '{"text": "fine", "score": NaN}\n',
        "infinity.jsonl": '{"text": "fine", "score": Infinity}\n',
        "minus-infinity.jsonl": '{"text": "fine", "score": -Infinity}\n',
        "nested-nan.jsonl": '{"text": "fine", "scores": [1, NaN]}\n',
        "second-line-bad.jsonl": '{"text": "fine"}\n{"text": "also fine", "x": NaN}\n',
        "not-gzip.txt.gz": "plain text, not gzip\n",
    }
    cases = []
    for name, content in bad_files.items():
        cases.append(
            Case(
                f"index {name}",
                ["index", f"{{root}}/{name}", "-d", "{index}", "--model", "{model}"],
                _input(name, content),
            )
        )
        cases.append(Case(f"add {name}", ["add", f"{{root}}/{name}", "-d", "{index}"], _input(name, content)))
    id_files = {
        "id-missing.jsonl": '{"text": "fine"}\n',
        "id-bool.jsonl": '{"text": "fine", "id": true}\n',
        "id-list.jsonl": '{"text": "fine", "id": [1]}\n',
        "id-surrogate.jsonl": '{"text": "fine", "id": "\\ud800"}\n',
    }
    for name, content in id_files.items():
        cases.append(
            Case(f"add {name}", ["add", f"{{root}}/{name}", "-d", "{index}", "--id-field", "id"], _input(name, content))
        )
    huge = '{"text": "fine", "n": ' + "9" * 5000 + "}\n"
    cases += [
        Case(
            "add a 5,000-digit integer",
            ["add", "{root}/huge.jsonl", "-d", "{index}"],
            _input("huge.jsonl", huge),
            fragments=("line 1 holds an integer of more than", "write it as a string"),
        ),
        Case("add a missing file", ["add", "{root}/nope.txt", "-d", "{index}"], fragments=("does not exist",)),
        Case("add a folder with no file to read", ["add", "{root}", "-d", "{index}"], fragments=("found no file",)),
        Case(
            "add --id-field on text",
            ["add", "{root}/c.txt", "-d", "{index}", "--id-field", "id"],
            _input("c.txt", "hello\n"),
        ),
        Case(
            "index stdin with NaN",
            ["index", "-", "--jsonl", "-d", "{index}", "--model", "{model}"],
            stdin='{"text": "fine", "x": NaN}\n',
        ),
        Case(
            "add stdin with a surrogate", ["add", "-", "--jsonl", "-d", "{index}"], stdin='{"text": "\\ud834 alone"}\n'
        ),
        Case(
            "add stdin gzip garbage",
            ["add", "{root}/g.jsonl.gz", "-d", "{index}"],
            _input("g.jsonl.gz", gzip.compress(b"\xff\xfe not utf8\n")),
        ),
    ]
    return cases


def _filter_cases() -> list[Case]:
    filters = {
        "no operator": "lang",
        "no field": "=en",
        "no value": "year>=",
        "text compared by size": "lang>en",
        "unknown field": "colour=red",
        "number against a text field": "yearstr>=2020",
        "number equal to a text field": "yearstr=2004",
        "huge integer": "year>99999999999999999999999",
        "huge negative integer": "year>-99999999999999999999999",
        "huge integer on a column": "id=99999999999999999999",
        "infinite number": "year<1e999",
        "in without values": "lang in",
        "in with an empty value": "lang in en,,de",
        "contains without value": "tags contains",
        "contains on a text field": "lang contains e",
        "contains on a number field": "year contains 2",
        "prefix on a number field": "year ^= 20",
        "like without pattern": "lang like",
        "like on a number field": "year like 20%",
        "or with nothing after": "lang=en or",
        "or with nothing before": "or lang=en",
        "or of a broken condition": "lang=en or year>>2",
        "unclosed backtick": "`my field=x",
        "empty backticks": "``=x",
        "unclosed quote": '"my field=x',
        "unknown quoted field": "`no such field`=x",
        "value starting with an operator": "lang==en",
        "in with huge integer": "year in 1,99999999999999999999999",
        "unknown column-like": "score>=1",
    }
    return [Case(f"filter {name}", [*QUERY, "--where", text]) for name, text in filters.items()]


def _flag_cases() -> list[Case]:
    return [
        Case("k zero", [*QUERY, "-k", "0"], fragments=("k must be at least 1",)),
        Case("k negative", [*QUERY, "-k", "-3"], fragments=("k must be at least 1",)),
        Case("server URL unclosed IPv6", ["query", "x", "--server", "http://[::1"], fragments=("not a valid URL",)),
        Case("server URL port not a number", ["query", "x", "--server", "http://127.0.0.1:abc"], fragments=("abc",)),
        Case("server URL port too big", ["query", "x", "--server", "http://127.0.0.1:99999"], fragments=("range",)),
        Case("server URL without a host", ["query", "x", "--server", "http://:8000"], fragments=("names no host",)),
        Case("rerank-top without rerank", [*QUERY, "--rerank-top", "5"]),
        Case("empty query", ["query", "", "-d", "{index}"]),
        Case("blank query", ["query", "   ", "-d", "{index}"]),
        Case("no query", ["query", "-d", "{index}"]),
        Case("query and file", ["query", "x", "--file", "{root}/q.txt", "-d", "{index}"], _input("q.txt", "x\n")),
        Case("query file missing", ["query", "--file", "{root}/nope.txt", "-d", "{index}"]),
        Case("query file is a directory", ["query", "--file", "{root}", "-d", "{index}"], fragments=("directory",)),
        Case("query file empty", ["query", "--file", "{root}/q.txt", "-d", "{index}"], _input("q.txt", "\n\n")),
        Case(
            "query file latin1",
            ["query", "--file", "{root}/q.txt", "-d", "{index}"],
            _input("q.txt", "caf\u00e9\n".encode("latin-1")),
        ),
        Case("query file binary", ["query", "--file", "{root}/q.txt", "-d", "{index}"], _input("q.txt", b"a\x00b\n")),
        Case("query stdin empty", ["query", "--file", "-", "-d", "{index}"], stdin="\n \n"),
        Case("query with a wrong whitening", [*QUERY, "--whiten-k", "5"]),
        Case("delete unknown id", ["delete", "999", "-d", "{index}"]),
        Case("delete not a number", ["delete", "abc", "-d", "{index}"]),
        Case("delete huge id", ["delete", "99999999999999999999999", "-d", "{index}"]),
        Case("delete huge negative id", ["delete", "--", "-99999999999999999999999", "-d", "{index}"]),
        Case("delete unknown external id", ["delete", "--external", "nope", "-d", "{index}"]),
        Case("delete one known one unknown", ["delete", "1", "999", "-d", "{index}"]),
        Case(
            "index IVF1024 on six texts",
            ["index", "{root}/c.txt", "-d", "{index}", "--model", "{model}", "--index", "IVF1024,Flat", "--replace"],
            _input("c.txt", "one\ntwo\nthree\nfour\nfive\nsix\n"),
            fragments=("IVF1024",),
        ),
        Case(
            "index unknown FAISS type",
            ["index", "{root}/c.txt", "-d", "{index}", "--model", "{model}", "--index", "Bogus99"],
            _input("c.txt", "one\ntwo\n"),
        ),
        Case(
            "index whiten-k above the dimension",
            ["index", "{root}/c.txt", "-d", "{index}", "--model", "{model}", "--whiten-k", "1000"],
            _input("c.txt", "one\ntwo\n"),
        ),
        Case(
            "index whiten-fit without whiten-k",
            ["index", "{root}/c.txt", "-d", "{index}", "--model", "{model}", "--whiten-fit", "{root}/c.txt"],
            _input("c.txt", "one\ntwo\n"),
        ),
        Case(
            "append with a new index type",
            ["index", "{root}/c.txt", "-d", "{index}", "--append", "--index", "Flat"],
            _input("c.txt", "one\n"),
        ),
        Case(
            "index with another model",
            ["index", "{root}/c.txt", "-d", "{index}", "--append", "--model", "{root}"],
            _input("c.txt", "one\n"),
        ),
        Case(
            "index over a file",
            ["index", "{root}/c.txt", "-d", "{root}/c.txt", "--model", "{model}"],
            _input("c.txt", "one\n"),
        ),
        Case(
            "index into a foreign directory",
            ["index", "{root}/c.txt", "-d", "{root}/foreign", "--model", "{model}"],
            lambda w: (w.write("c.txt", "one\n"), (w.root / "foreign").mkdir(), w.write("foreign/keep.txt", "mine")),
        ),
    ]


def _broken_index_cases() -> list[Case]:
    breaks = {
        "manifest missing": lambda w: (w.index / "manifest.json").unlink(),
        "manifest not JSON": lambda w: (w.index / "manifest.json").write_text("{", encoding="utf-8"),
        "manifest a list": lambda w: (w.index / "manifest.json").write_text("[]", encoding="utf-8"),
        "manifest without model": _drop("model"),
        "manifest without build time": _drop("created_at"),
        "manifest without files": _drop("files"),
        "manifest without sizes": _drop("sizes"),
        "manifest without dimension": _drop("index", "dimension"),
        "manifest null model name": _null("model", "name"),
        "manifest null index type": _null("index", "type"),
        "manifest null vectors file": _null("files", "vectors"),
        "manifest null metric": _null("index", "metric"),
        "manifest file outside": _edit_manifest(lambda d: d["files"].update(vectors="../x.faiss")),
        "segment file missing": lambda w: _segment(w).unlink(),
        "segment file truncated": lambda w: _segment(w).write_bytes(_segment(w).read_bytes()[:50]),
        "segment row naming a file outside": _edit_store("UPDATE segments SET name = '../x.faiss'"),
        "segment row with a null name": _edit_store("UPDATE segments SET name = NULL"),
        "segment row with a text count": _edit_store("UPDATE segments SET vectors = 'abc'"),
        "commit number not a number": _edit_store("UPDATE index_state SET value = 'x' WHERE key = 'commit'"),
        "documents file garbage": _replace_file("documents", lambda p: p.write_bytes(b"not sqlite" * 100)),
    }
    content = {  # `info` reads the manifest and the document store only, so these are for commands that load
        "vectors of the wrong dimension": _replace_segment(_vectors_of_dimension(16)),
        "index dimension disagrees": _edit_manifest(lambda d: d["index"].update(dimension=16)),
        "whitening of the wrong dimension": _replace_file("whitening", _whitening_of_dimension(16, 4)),
        "whitening garbage": _replace_file("whitening", lambda p: p.write_bytes(b"\x00" * 64)),
    }
    cases = []
    for name, setup in breaks.items():
        cases.append(Case(f"info: {name}", ["info", "-d", "{index}"], setup))
        cases.append(Case(f"query: {name}", QUERY, setup))
    for name, setup in content.items():
        cases.append(Case(f"query: {name}", QUERY, setup))
        cases.append(Case(f"compact: {name}", ["compact", "-d", "{index}"], setup))
    cases.append(
        Case(
            "delete: vectors of the wrong dimension",
            ["delete", "1", "-d", "{index}"],
            _replace_segment(_vectors_of_dimension(16)),
        )
    )
    cases.append(
        Case(
            "add: whitening of the wrong dimension",
            ["add", "{root}/c.txt", "-d", "{index}"],
            lambda w: (w.write("c.txt", "one\n"), _replace_file("whitening", _whitening_of_dimension(16, 4))(w)),
        )
    )
    return cases


def _permission_cases() -> list[Case]:
    return [
        Case(
            "info: unreadable manifest",
            ["info", "-d", "{index}"],
            _chmod("manifest.json", 0),
            fragments=("manifest.json", "ermission"),
            process=True,
        ),
        Case(
            "query: unreadable manifest",
            QUERY,
            _chmod("manifest.json", 0),
            fragments=("manifest.json", "ermission"),
            process=True,
        ),
        Case(
            "add: the lock file is a FIFO",
            ["add", "{root}/c.txt", "-d", "{index}"],
            lambda w: (
                w.write("c.txt", "one\n"),
                (w.index / ".lock").unlink(missing_ok=True),
                os.mkfifo(w.index / ".lock"),
            ),
            fragments=("not a regular file",),
        ),
        Case(  # (a delete changes only the store's own files, so a read-only directory alone does not stop it)
            "delete: read-only store",
            ["delete", "1", "-d", "{index}"],
            lambda w: (w.index / _manifest(w)["files"]["documents"]).chmod(0o444),
            fragments=("ermission",),
            process=True,
        ),
        Case(
            "add: read-only index directory",
            ["add", "{root}/c.txt", "-d", "{index}"],
            lambda w: (w.write("c.txt", "one\n"), _chmod(".", 0o555)(w)),
            fragments=("ermission",),
            process=True,
        ),
        Case(
            "index: read-only parent directory",
            ["index", "{root}/c.txt", "-d", "{root}/ro/new", "--model", "{model}"],
            lambda w: (w.write("c.txt", "one\n"), (w.root / "ro").mkdir(), (w.root / "ro").chmod(0o555)),
            fragments=("ermission", "ro"),
            process=True,
        ),
    ]


def _disk_cases() -> list[Case]:
    return [
        Case(
            "add: full disk",
            ["add", "{root}/c.txt", "-d", "{index}"],
            lambda w: (w.write("c.txt", "a brand new text\n"), fill_disk(w)),
            fragments=("space",),
            disk=True,
        ),
        Case("delete: full disk", ["delete", "1", "-d", "{index}"], fill_disk, fragments=("space",), disk=True),
        Case(
            "index: full disk",
            ["index", "{root}/c.txt", "-d", "{index}", "--model", "{model}", "--replace"],
            lambda w: (w.write("c.txt", "one\ntwo\n"), fill_disk(w)),
            fragments=("space",),
            disk=True,
        ),
    ]


def _folder(files: dict[str, str | bytes]):  # noqa: ANN202
    """A setup that writes a folder `notes/` of these files (names relative to it; sub-folders made)."""

    def setup(workspace: Workspace) -> None:
        for name, content in files.items():
            (workspace.root / "notes" / name).parent.mkdir(parents=True, exist_ok=True)
            workspace.write(f"notes/{name}", content)

    return setup


def _file_cases() -> list[Case]:
    """Folders of files (searchengine/reading): nothing readable, --strict, sync of what cannot be synced."""
    add = ["add", "{root}/notes", "-d", "{index}"]
    return [
        Case("add a folder of unreadable files", add, _folder({"a.md": b"\x00\x01", "b.pdf": b"%PDF-1.4"}),
             fragments=("found no file to read", "2 files skipped")),
        Case("add a folder with a bad file, --strict", [*add, "--strict"],
             _folder({"ok.md": "# Fine\n\nText.\n", "bad.md": "caf\u00e9".encode("latin-1")}),
             fragments=("1 file could not be read", "bad.md", "not UTF-8")),
        Case("add a folder with other record fields", [*add, "--title-field", "t"], _folder({"ok.md": "Text.\n"}),
             fragments=("reads the records of .jsonl and .csv files with", "add files with the same fields")),
        Case("add a folder with --jsonl", [*add, "--jsonl"], _folder({"ok.md": "Text.\n"}), fragments=("drop it",)),
        Case("add a damaged PDF", ["add", "{root}/notes/cut.pdf", "-d", "{index}"], _folder({"cut.pdf": b"%PDF-1.4"}),
             fragments=("found no file to read", "1 file skipped")),
        Case("add a missing folder", ["add", "{root}/missing/", "-d", "{index}"], fragments=("does not exist",)),
        Case("sync an index built from a corpus file", ["sync", "-d", "{index}"], fragments=("not built from folders",)),
        Case("index another folder without --replace", ["index", "{root}/notes", "-d", "{index}"],
             _folder({"ok.md": "Text.\n"}), fragments=("already holds an index", "--replace")),
        Case("index a .txt --lines with a folder", ["index", "{root}/notes", "-d", "{index}", "--lines", "--replace"],
             _folder({"ok.txt": "Text.\n"}), fragments=("name it alone",)),
    ]  # fmt: skip


def all_cases(disk: bool) -> list[Case]:
    """Every case; the full-disk ones only when `disk` (a tmpfs can be mounted)."""
    cases = _corpus_cases() + _filter_cases() + _flag_cases() + _broken_index_cases() + _permission_cases()
    cases += _file_cases()
    return cases + (_disk_cases() if disk else [])
