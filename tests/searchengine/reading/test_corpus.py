"""Reading a corpus: .txt lines, .jsonl records, standard input, and errors that name the line."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from searchengine.indexer.tables.store import Document

from searchengine.errors import SearchEngineError
from searchengine.reading.corpus import JsonFields, corpus_files, corpus_parts, read_corpus, read_part


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


class _FakeStdin:
    """Stands in for sys.stdin: the corpus reader reads bytes from `.buffer`."""

    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


# ---------------------------------------------------------------------------------------------------------
# .txt
# ---------------------------------------------------------------------------------------------------------


def test_txt_one_document_per_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "corpus.txt", b"first line\n  second line\t \n\n   \n\t\nlast line without newline")
    documents = list(read_corpus(path))
    assert documents == [
        Document("first line", str(path), 1),
        Document("second line", str(path), 2),
        Document("last line without newline", str(path), 6),
    ]


def test_txt_line_numbers_count_blank_lines(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.txt", b"\n\na\n\n\nb\n")
    assert [(d.text, d.line) for d in read_corpus(path)] == [("a", 3), ("b", 6)]


def test_txt_source_is_the_name_given(tmp_path: Path) -> None:
    path = _write(tmp_path / "notes.txt", b"hello\n")
    [document] = read_corpus(path)
    assert document.source == str(path)
    assert document.metadata == {}
    [document] = read_corpus(str(path))
    assert document.source == str(path)


def test_txt_windows_line_endings_are_stripped(tmp_path: Path) -> None:
    path = _write(tmp_path / "dos.txt", b"one\r\ntwo\r\n\r\nthree\r\n")
    assert [(d.text, d.line) for d in read_corpus(path)] == [("one", 1), ("two", 2), ("three", 4)]


@pytest.mark.parametrize("name", ["mac.txt", "mac.jsonl"])
def test_lone_cr_line_endings_end_lines(tmp_path: Path, name: str) -> None:
    """A file with only CR line endings (classic Mac, some exports) is one document a line, mixed with CRLF and LF
    alike, and not one document."""
    lines = ["one", "two", "", "three", "four", "five"]
    if name.endswith(".jsonl"):
        lines = [json.dumps({"text": line}) if line else line for line in lines]
    data = "\r".join(lines[:4]).encode() + b"\r\n" + lines[4].encode() + b"\n" + lines[5].encode() + b"\r"
    documents = list(read_corpus(_write(tmp_path / name, data)))
    assert [(d.text, d.line) for d in documents] == [("one", 1), ("two", 2), ("three", 4), ("four", 5), ("five", 6)]


def test_parts_of_a_cr_file_read_back_its_documents(tmp_path: Path) -> None:
    path = _write(tmp_path / "mac.txt", b"\r".join(f"line {n}".encode() for n in range(9)) + b"\r")
    expected = list(read_corpus(path))
    assert len(expected) == 9
    for size in (1, 2, 4):
        assert [document for part in corpus_parts(path, size=size) for document in read_part(part)] == expected


def test_txt_utf8_text_and_bom(tmp_path: Path) -> None:
    path = _write(tmp_path / "bom.txt", "\ufeffcafé\n日本語 🙂\n".encode("utf-8"))
    assert [d.text for d in read_corpus(path)] == ["café", "日本語 🙂"]


def test_txt_bom_alone_on_the_first_line_is_a_blank_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "bom.txt", "\ufeff\ntext\n".encode("utf-8"))
    assert [(d.text, d.line) for d in read_corpus(path)] == [("text", 2)]


def test_txt_only_a_leading_bom_is_removed(tmp_path: Path) -> None:
    """A U+FEFF later in the file is text (a zero-width no-break space), not a byte-order mark."""
    path = _write(tmp_path / "c.txt", "a\n\ufeffb\n".encode("utf-8"))
    assert [d.text for d in read_corpus(path)] == ["a", "\ufeffb"]


def test_empty_and_blank_files_yield_nothing(tmp_path: Path) -> None:
    assert list(read_corpus(_write(tmp_path / "empty.txt", b""))) == []
    assert list(read_corpus(_write(tmp_path / "blank.txt", b"\n \n\t\n"))) == []
    assert list(read_corpus(_write(tmp_path / "blank.jsonl", b"\n\n"))) == []


def test_reading_is_lazy_and_in_order(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.txt", b"".join(f"line {i}\n".encode() for i in range(1000)))
    documents = read_corpus(path)
    assert next(documents).text == "line 0"
    assert next(documents).text == "line 1"
    assert [d.line for d in documents] == list(range(3, 1001))


# ---------------------------------------------------------------------------------------------------------
# .jsonl
# ---------------------------------------------------------------------------------------------------------


def test_jsonl_text_field_and_metadata(tmp_path: Path) -> None:
    records = [
        {"text": "  first  ", "id": 7, "tags": ["a", "b"]},
        {"title": "Ünïcødé", "text": "second", "nested": {"x": None}},
    ]
    data = "\n".join(json.dumps(record, ensure_ascii=False) for record in records).encode("utf-8")
    path = _write(tmp_path / "corpus.jsonl", data.replace(b"\n", b"\n\n"))
    assert list(read_corpus(path)) == [
        Document("first", str(path), 1, {"id": 7, "tags": ["a", "b"]}),
        Document("second", str(path), 3, {"title": "Ünïcødé", "nested": {"x": None}}),
    ]


def test_jsonl_with_bom(tmp_path: Path) -> None:
    path = _write(tmp_path / "bom.jsonl", '\ufeff{"text": "x"}\n'.encode("utf-8"))
    assert [d.text for d in read_corpus(path)] == ["x"]


def test_jsonl_true_forces_json_for_a_txt_name(tmp_path: Path) -> None:
    path = _write(tmp_path / "records.txt", b'{"text": "hello", "k": 1}\n')
    assert list(read_corpus(path, jsonl=True)) == [Document("hello", str(path), 1, {"k": 1})]
    # Without the flag the same line is plain text.
    assert [d.text for d in read_corpus(path)] == ['{"text": "hello", "k": 1}']


def test_jsonl_false_reads_a_jsonl_name_as_text(tmp_path: Path) -> None:
    path = _write(tmp_path / "records.jsonl", b"not json at all\n")
    assert [d.text for d in read_corpus(path, jsonl=False)] == ["not json at all"]


# ---------------------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------------------


def _error(path: Path, jsonl: bool | None = None) -> str:
    with pytest.raises(SearchEngineError) as error:
        list(read_corpus(path, jsonl=jsonl))
    return str(error.value)


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    message = _error(_write(tmp_path / "latin1.txt", b"ok\n\xff\xfe bad\n"))
    assert "line 2" in message
    assert "UTF-8" in message
    assert "0xff" in message


def test_invalid_utf8_reports_the_column(tmp_path: Path) -> None:
    message = _error(_write(tmp_path / "latin1.txt", "first\n\nna\xefve\n".encode("latin-1")))
    assert "line 3" in message
    assert "0xef" in message
    assert "column 3" in message


def test_invalid_utf8_after_valid_documents_yields_those_first(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.txt", b"good one\ngood two\n\x80\n")
    documents = read_corpus(path)
    assert [next(documents).text, next(documents).text] == ["good one", "good two"]
    with pytest.raises(SearchEngineError, match="line 3"):
        next(documents)


def test_nul_bytes_are_reported_as_binary(tmp_path: Path) -> None:
    message = _error(_write(tmp_path / "image.txt", b"text\nmore\nbin\x00ary\n"))
    assert "line 3" in message
    assert "NUL" in message
    assert "binary" in message


def test_utf16_and_utf32_files_are_read_by_their_byte_order_mark_keeping_line_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gzip

    text = "hello\n\nwörld\rlone CR\r\nlast\u2028same line\n"
    expected = [("hello", 1), ("wörld", 3), ("lone CR", 4), ("last\u2028same line", 5)]
    for name, data in [
        ("utf16.txt", text.encode("utf-16")),
        ("utf16be.txt", b"\xfe\xff" + text.encode("utf-16-be")),
        ("utf32.txt.gz", gzip.compress(text.encode("utf-32"))),
    ]:
        assert [(d.text, d.line) for d in read_corpus(_write(tmp_path / name, data))] == expected, name
    monkeypatch.setattr(sys, "stdin", _FakeStdin('{"text": "piped"}\n'.encode("utf-16")))
    assert [d.text for d in read_corpus("-", jsonl=True)] == ["piped"]
    rows = _write(tmp_path / "rows.csv", "text,n\nfirst,1\n".encode("utf-16"))
    assert [(d.text, d.metadata) for d in read_corpus(rows)] == [("first", {"n": "1"})]


def test_a_file_that_is_not_what_its_byte_order_mark_says_is_one_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "cut.jsonl", '{"text": "fine"}\n'.encode("utf-16") + b"\x00")
    assert _error(path) == f"{path} starts as UTF-16 (a byte order mark) but is not valid UTF-16; convert it to UTF-8"
    with pytest.raises(SearchEngineError, match="--ray reads UTF-8 corpus files"):
        list(corpus_parts(_write(tmp_path / "wide.txt", "one\n".encode("utf-16"))))


@pytest.mark.parametrize(
    ("lines", "bad_line", "expected"),
    [
        (b'{"text": "ok"}\n{"text": "unterminated\n', 2, "not valid JSON"),
        (b'{"text": "ok"}\n\n{text: "no quotes"}\n', 3, "not valid JSON"),
        (b"plain text line\n", 1, "not valid JSON"),
        (b'{"text": "ok"}\n["text", "a list"]\n', 2, 'string "text"'),
        (b'"just a string"\n', 1, 'string "text"'),
        (b'{"body": "no text field"}\n', 1, 'string "text"'),
        (b'{"text": 42}\n', 1, 'string "text"'),
        (b'{"text": null}\n', 1, 'string "text"'),
        (b'{"text": ["a"]}\n', 1, 'string "text"'),
        (b'{"text": "ok"}\n{"text": ""}\n', 2, 'empty "text"'),
        (b'{"text": "   \\t "}\n', 1, 'empty "text"'),
    ],
    ids=[
        "unterminated",
        "unquoted-key",
        "plain-text",
        "list",
        "string",
        "no-text",
        "number",
        "null",
        "text-list",
        "empty-text",
        "blank-text",
    ],
)
def test_jsonl_errors_name_the_line(tmp_path: Path, lines: bytes, bad_line: int, expected: str) -> None:
    path = _write(tmp_path / "corpus.jsonl", lines)
    message = _error(path)
    assert f"line {bad_line}" in message
    assert expected in message
    assert str(path) in message


def test_an_integer_too_long_to_read_says_so(tmp_path: Path) -> None:
    message = _error(_write(tmp_path / "c.jsonl", b'{"text": "ok"}\n{"text": "a", "n": ' + b"7" * 5000 + b"}\n"))
    assert f"line 2 holds an integer of more than {sys.get_int_max_str_digits():,} digits" in message
    assert "write it as a string" in message
    assert "Exceeds" not in message


def test_invalid_json_reports_the_column(tmp_path: Path) -> None:
    message = _error(_write(tmp_path / "c.jsonl", b'{"text": "a",, "x": 1}\n'))
    assert "line 1" in message
    assert "column 14" in message


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.txt"
    message = _error(path)
    assert str(path) in message
    assert "does not exist" in message


def test_a_directory_is_refused(tmp_path: Path) -> None:
    message = _error(tmp_path)
    assert "is a directory" in message
    assert str(tmp_path) in message


def test_an_unreadable_file_is_a_search_engine_error(tmp_path: Path) -> None:
    import os

    if os.geteuid() == 0:
        pytest.skip("root can read files without read permission")
    path = _write(tmp_path / "secret.txt", b"text\n")
    path.chmod(0)
    try:
        assert "cannot read" in _error(path)
    finally:
        path.chmod(0o600)


# ---------------------------------------------------------------------------------------------------------
# standard input
# ---------------------------------------------------------------------------------------------------------


def test_dash_reads_text_from_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", _FakeStdin("\ufeffone\n\n two \n".encode("utf-8")))
    assert list(read_corpus("-")) == [Document("one", "<stdin>", 1), Document("two", "<stdin>", 3)]


def test_dash_reads_jsonl_from_stdin_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", _FakeStdin(b'{"text": "from a pipe", "n": 1}\n'))
    assert list(read_corpus("-", jsonl=True)) == [Document("from a pipe", "<stdin>", 1, {"n": 1})]


def test_stdin_errors_name_stdin_and_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", _FakeStdin(b"fine\n\xc3\x28\n"))
    with pytest.raises(SearchEngineError) as error:
        list(read_corpus("-"))
    assert "<stdin> line 2" in str(error.value)


def test_a_file_named_dash_in_a_path_is_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the bare name '-' means stdin; ./- (or any path) is read from disk."""
    monkeypatch.setattr(sys, "stdin", _FakeStdin(b"from stdin\n"))
    path = _write(tmp_path / "-", b"from disk\n")
    assert [d.text for d in read_corpus(path)] == ["from disk"]


def test_gzipped_corpus_is_read_as_text(tmp_path: Path) -> None:
    import gzip

    path = tmp_path / "c.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write('{"text": "zipped", "n": 1}\n\n{"text": "two"}\n')
    documents = list(read_corpus(path))
    assert [(d.text, d.line, d.metadata) for d in documents] == [("zipped", 1, {"n": 1}), ("two", 3, {})]


def test_broken_gzip_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "c.txt.gz"
    path.write_bytes(b"not gzip at all")
    with pytest.raises(SearchEngineError, match="not a readable gzip file"):
        list(read_corpus(path))


def test_a_record_becomes_a_document_as_a_jsonl_line_would() -> None:
    from searchengine.reading.corpus import JsonFields, document_from_record

    record = {"text": "  hello  ", "id": 7, "lang": "en"}
    document = document_from_record(record, "document 1", JsonFields(id="id"))
    assert document == Document("hello", None, None, {"lang": "en"}, "7")
    assert record == {"text": "  hello  ", "id": 7, "lang": "en"}  # the caller's object is left as it was
    with pytest.raises(SearchEngineError, match='^document 2 needs a JSON object with a string "text" field$'):
        document_from_record(["text"], "document 2")
    with pytest.raises(SearchEngineError, match='^document 3 has an empty "text" field$'):
        document_from_record({"text": " "}, "document 3")


# ---------------------------------------------------------------------------------------------------------
# --text-field, --title-field


def test_a_title_is_embedded_before_the_text_and_kept_as_metadata(tmp_path: Path) -> None:
    rows = [
        {"_id": "d1", "title": "Statins", "body": "They lower cholesterol."},
        {"_id": "d2", "title": "", "body": "No title here."},
        {"_id": "d3", "body": "The title is missing."},
        {"_id": "d4", "title": None, "body": "The title is null."},
        {"_id": "d5", "title": "Only a title", "body": ""},
    ]
    path = _write(tmp_path / "beir.jsonl", "\n".join(json.dumps(row) for row in rows).encode())
    documents = list(read_corpus(path, fields=JsonFields(text="body", title="title", id="_id")))
    assert [(d.text, d.external_id) for d in documents] == [
        ("Statins They lower cholesterol.", "d1"),
        ("No title here.", "d2"),
        ("The title is missing.", "d3"),
        ("The title is null.", "d4"),
        ("Only a title", "d5"),
    ]
    assert documents[0].metadata == {"title": "Statins"}
    assert "body" not in documents[0].metadata and "_id" not in documents[0].metadata


def test_bad_title_and_text_fields_are_named(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.jsonl", b'{"title": 3, "body": "x"}\n')
    with pytest.raises(SearchEngineError, match='line 1 has a "title" field \\(the title\\) that is not a string'):
        list(read_corpus(path, fields=JsonFields(text="body", title="title")))
    with pytest.raises(SearchEngineError, match='line 1 needs a JSON object with a string "text" field'):
        list(read_corpus(path, fields=JsonFields(title="title")))
    both_empty = _write(tmp_path / "e.jsonl", b'{"title": " ", "text": " "}\n')
    with pytest.raises(SearchEngineError, match='line 1 has an empty "text" field'):
        list(read_corpus(both_empty, fields=JsonFields(title="title")))
    with pytest.raises(SearchEngineError, match="must differ"):
        JsonFields(text="t", title="t")
    with pytest.raises(SearchEngineError, match="read as plain text"):
        list(read_corpus(_write(tmp_path / "p.txt", b"plain\n"), fields=JsonFields(title="title")))


@pytest.mark.parametrize("name", ["corpus.txt", "corpus.jsonl", "corpus.txt.gz"])
def test_parts_read_back_every_document_in_order(tmp_path: Path, name: str) -> None:
    """A file cut into parts (what Ray workers read) gives read_corpus's documents: line numbers, a BOM, blank
    lines and gzip included."""
    import gzip

    lines = ["\ufefffirst", "", "second", "  ", "third", "fourth", "", "", "fifth", "sixth", "seventh"]
    if name.endswith(".jsonl"):
        lines = [json.dumps({"text": line, "n": number}) if line.strip() else line for number, line in enumerate(lines)]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    expected = list(read_corpus(path))
    for size in (1, 2, 3, 7, 100):
        parts = list(corpus_parts(path, size=size))
        assert [part.documents for part in parts[:-1]] == [size] * (len(parts) - 1)
        assert [document for part in parts for document in read_part(part)] == expected


def test_parts_check_every_line_as_read_corpus_does(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"text": "fine"}\n{"text": 3}\n', encoding="utf-8")
    with pytest.raises(SearchEngineError, match="line 2 needs a JSON object with a string"):
        list(corpus_parts(path))


def test_corpus_files_of_a_directory_are_its_corpus_shards_by_name(tmp_path: Path) -> None:
    for name in ("b.jsonl", "a.txt", "c.txt.gz", "notes.md"):
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    assert [path.name for path in corpus_files(tmp_path)] == ["a.txt", "b.jsonl", "c.txt.gz"]
    assert corpus_files(tmp_path / "a.txt") == [tmp_path / "a.txt"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(SearchEngineError, match="holds no corpus files"):
        corpus_files(tmp_path / "empty")


def test_a_csv_file_is_one_document_per_row_with_its_columns_as_fields(tmp_path: Path) -> None:
    path = tmp_path / "notes.csv"
    path.write_text(
        'id,title,text\nn1,Garden,"Water the seed,\nevery morning"\nn2,Empty,\nn3,Kitchen,Bake bread\n', "utf-8"
    )
    documents = list(read_corpus(path, fields=JsonFields("text", "title", "id")))
    assert [(d.external_id, d.text, d.metadata) for d in documents] == [
        ("n1", "Garden Water the seed,\nevery morning", {"title": "Garden"}),
        ("n3", "Kitchen Bake bread", {"title": "Kitchen"}),
    ]
    with pytest.raises(SearchEngineError, match='no "body" column .*--text-field'):
        list(read_corpus(path, fields=JsonFields("body")))
    path.write_text("text,x\nfine,1\ntoo,many,cells\n", encoding="utf-8")
    with pytest.raises(SearchEngineError, match="line 3 has more cells"):
        list(read_corpus(path))
    path.write_bytes("text\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(SearchEngineError, match="not valid UTF-8"):
        list(read_corpus(path))


def test_a_number_beyond_the_largest_float_names_its_line(tmp_path: Path) -> None:
    message = _error(_write(tmp_path / "c.jsonl", b'{"text": "ok", "n": 1e300}\n{"text": "a", "n": -1e400}\n'))
    assert "line 2 holds the number -1e400, beyond the largest a float holds; write it as a string" in message


def test_json_nested_too_deep_to_show_names_its_line(tmp_path: Path) -> None:
    deep = b"[" * 500 + b"]" * 500
    message = _error(_write(tmp_path / "c.jsonl", b'{"text": "ok", "n": [[1]]}\n{"text": "a", "n": ' + deep + b"}\n"))
    assert "line 2 is nested more than 64 levels deep; flatten its JSON" in message


def test_a_csv_cell_longer_than_the_csv_modules_default_limit_is_read_whole(tmp_path: Path) -> None:
    """Python's csv refuses a cell over 131,072 characters unless told; a long article in a row is a document."""
    article = "Kettles boil. " * 20_000  # 280,000 characters
    path = _write(tmp_path / "articles.csv", f'id,text\na1,"{article}"\n'.encode())
    assert [document.text for document in read_corpus(path)] == [article.strip()]


def test_a_csv_with_a_column_named_twice_is_refused_rather_than_losing_one(tmp_path: Path) -> None:
    message = _error(_write(tmp_path / "c.csv", b"text,note,note\nKettles boil.,first,second\n"))
    assert "has the column 'note' more than once; give each column its own name" in message
    exported = _write(tmp_path / "e.csv", b"text,,\nKettles boil.,,\n")  # empty columns, as spreadsheets export
    assert [document.text for document in read_corpus(exported)] == ["Kettles boil."]
