"""The CLI through typer's test runner (and, for signals, a real process): output, JSON, and one-line errors."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchengine.cli import app
from tests.searchengine.cli.usage_errors import assert_usage_error

runner = CliRunner()


def run(*args: str, input: str | None = None):  # noqa: ANN201
    return runner.invoke(app, [str(a) for a in args], input=input)


def assert_one_line_error(result, *fragments: str) -> None:  # noqa: ANN001
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    message = result.output.strip()
    assert message.startswith("Error: ") and "\n" not in message, message
    for fragment in fragments:
        assert fragment in message, message


@pytest.fixture
def corpus(tmp_path: Path, sentences: list[str]) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def index_dir(tmp_path: Path, corpus: Path, tiny_model: Path) -> Path:
    target = tmp_path / "idx"
    result = run("index", corpus, "-d", target, "--model", tiny_model)
    assert result.exit_code == 0, result.output
    return target


def test_index_reports_what_it_did(tmp_path: Path, corpus: Path, tiny_model: Path, sentences: list[str]) -> None:
    result = run("index", corpus, "-d", tmp_path / "i", "--model", tiny_model)
    assert result.exit_code == 0, result.output
    assert f"Indexed {len(sentences)} documents from {corpus} into" in result.output  # no "of which 0 repeat"
    assert "of which" not in result.output
    assert "Index type Flat, chosen for this corpus size" in result.output
    assert re.search(
        r"Time by stage: reading [\d.]+ s, storing [\d.]+ s, encoding [\d.]+ s, vector index [\d.]+ s, "
        r"commit [\d.]+ s, other [\d.]+ s\.",
        result.output,
    )


def test_query_prints_rank_score_id_text(index_dir: Path, sentences: list[str]) -> None:
    result = run("query", sentences[2], "-k", "3", "-d", index_dir, "--mode", "dense")
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 3
    rank, score, doc_id, *text = lines[0].split()
    assert (rank, doc_id, " ".join(text)) == ("1", "#2", sentences[2])
    assert float(score) == pytest.approx(1.0, abs=1e-4)


def test_query_json(index_dir: Path, sentences: list[str]) -> None:
    result = run("query", sentences[1], "-k", "2", "--json", "-d", index_dir)
    payload = json.loads(result.output)
    assert payload["query"] == sentences[1]
    assert [hit["id"] for hit in payload["hits"]][0] == 1
    assert set(payload["hits"][0]) >= {"id", "score", "text", "source", "line", "metadata"}


def test_queries_from_a_file_run_as_one_batch(index_dir: Path, tmp_path: Path, sentences: list[str]) -> None:
    queries = tmp_path / "q.txt"
    queries.write_text(f"{sentences[0]}\n\n{sentences[5]}\n", encoding="utf-8")
    result = run("query", "--file", queries, "-k", "1", "--json", "-d", index_dir)
    payload = json.loads(result.output)
    assert [entry["hits"][0]["text"] for entry in payload] == [sentences[0], sentences[5]]
    text_result = run("query", "--file", queries, "-k", "1", "-d", index_dir)
    assert f"Query: {sentences[5]}" in text_result.output


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "utf-8-sig"])
def test_a_query_file_with_a_byte_order_mark_is_read_as_a_corpus_file_is(
    index_dir: Path, tmp_path: Path, sentences: list[str], encoding: str
) -> None:
    """A query file saved by a Windows editor starts with a byte order mark; it was refused as binary (UTF-16), or
    its first query began with U+FEFF (UTF-8)."""
    queries = tmp_path / "q.txt"
    queries.write_bytes(f"{sentences[0]}\r\n{sentences[5]}\r\n".encode(encoding))
    result = run("query", "--file", queries, "-k", "1", "--json", "-d", index_dir, "--mode", "dense")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert [entry["query"] for entry in payload] == [sentences[0], sentences[5]]
    assert [entry["hits"][0]["text"] for entry in payload] == [sentences[0], sentences[5]]


def test_a_query_file_that_is_not_what_its_byte_order_mark_says_is_one_line(index_dir: Path, tmp_path: Path) -> None:
    queries = tmp_path / "q.txt"
    queries.write_bytes(b"\xff\xfeq\x00\x00\xd8")  # a UTF-16 mark, then a lone half of a surrogate pair
    assert_one_line_error(run("query", "--file", queries, "-d", index_dir), "q.txt", "not valid UTF-16")


def test_k_larger_than_index_says_so(index_dir: Path, sentences: list[str]) -> None:
    result = run("query", "cat", "-k", "500", "-d", index_dir)
    assert result.exit_code == 0
    assert f"the index holds {len(sentences)} documents" in result.output


def test_info(index_dir: Path, sentences: list[str]) -> None:
    result = run("info", "-d", index_dir)
    assert result.exit_code == 0, result.output
    for fragment in (
        f"documents:              {len(sentences)} documents",
        "pooling:",
        "mean + normalize",
        "dimension:",
        "32",
        "whitening:              none",
        "Flat (FAISS",
        "size on disk:",
        "built:",
    ):
        assert fragment in result.output
    manifest = json.loads(run("info", "-d", index_dir, "--json").output)
    assert manifest["count"]["vectors"] == len(sentences)


def test_info_json_is_the_manifest_on_disk_and_the_stored_extras(index_dir: Path, corpus: Path) -> None:
    printed = json.loads(run("info", "-d", index_dir, "--json").output)
    on_disk = json.loads((index_dir / "manifest.json").read_text(encoding="utf-8"))
    stored = {key: printed[key] for key in ("count", "updated_at", "segments", "size_on_disk")}
    reading = {"fields": {"text": "text", "title": None, "id": None}, "sources": [str(corpus.absolute())]}
    extras = {"clustering": None, "duplicates": 0, "repeats": 0, "keyword_index": True, "reading": reading}
    extras["template"] = None  # a Flat index has no trained template (engine/retrain_advice.py)
    memory = printed.pop("memory")
    assert printed == {**on_disk, **stored, **extras}  # the manifest, what the store says, and the extras
    assert stored["count"] == {"vectors": 12, "documents": 12, "tombstones": 0}
    assert [segment["file"] for segment in stored["segments"]] == [
        path.name for path in index_dir.glob("segment.*.faiss")
    ]
    assert list(printed) == [
        "format_version",
        "model",
        "whitening",
        "index",
        "created_at",
        "versions",
        "files",
        "sizes",
        "checksums",
        "count",
        "updated_at",
        "segments",
        "size_on_disk",
        "clustering",
        "duplicates",
        "repeats",
        "keyword_index",
        "reading",
        "template",
    ]
    assert memory["resident"] == memory["codes"] + memory["graph"] + memory["ids"] + memory["fixed"] > 0


def test_info_shows_the_memory_each_part_takes_from_the_real_files(index_dir: Path, sentences: list[str]) -> None:
    """A Flat index of 12 vectors of 32 dimensions: float32 codes, FAISS's id map, no graph; its segment files
    mapped, and the store's file and page cache limit apart."""
    from searchengine.indexer.vectors.memory_parts import REVERSE_ID_BYTES

    memory = json.loads(run("info", "-d", index_dir, "--json").output)["memory"]
    count = len(sentences)
    assert (memory["codes"], memory["graph"], memory["fixed"]) == (count * 32 * 4, 0, 0)
    assert memory["ids"] == count * (8 + REVERSE_ID_BYTES)
    segments = list(index_dir.glob("segment.*.faiss"))
    assert memory["mapped_files"] == sum(path.stat().st_size for path in segments) > memory["codes"]
    assert 0 <= memory["mapped_cached"] <= memory["mapped_files"] + 4096 * len(segments)
    assert memory["store_file"] == next(index_dir.glob("documents.*.db")).stat().st_size
    assert memory["store_cache_limit"] > 0
    shown = run("info", "-d", index_dir).output
    assert f"memory:                 {memory['resident'] / 1024:.1f} KiB to search (codes 1.5 KiB, ids " in shown
    assert "in the page cache now (shared, evictable); store's page cache up to 2.0 MiB a connection" in shown


_WITHOUT_ENCODING = """
import sys

from typer.testing import CliRunner

from searchengine.cli import app

index = sys.argv[1]
commands = [
    ["info", "-d", index], ["info", "--json", "-d", index], ["mine", "--top", "3", "-d", index],
    ["mine", "--threshold", "0.99", "--dedupe", "-d", index], ["cluster", "--k", "2", "-d", index],
    ["delete", "0", "-d", index], ["compact", "-d", index],
]
for command in commands:
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, (command, result.output)
    loaded = [name for name in ("transformers", "torch") if name in sys.modules]
    assert not loaded, f"searchengine {command[0]} imported {loaded}"
assert "Dropped 1 deleted vector." in result.output
"""


def test_commands_that_do_not_encode_load_no_model(tmp_path: Path, corpus: Path, tiny_model: Path) -> None:
    """info, mine, cluster, delete and compact work from the stored vectors: in a fresh process they import neither
    transformers nor torch, so no transformer is built (and none of torch's start-up time is paid)."""
    target = tmp_path / "hnsw"
    assert run("index", corpus, "-d", target, "--model", tiny_model, "--index", "HNSW32", "-q").exit_code == 0
    completed = subprocess.run(
        [sys.executable, "-c", _WITHOUT_ENCODING, str(target)], capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr[-3000:]


@pytest.mark.parametrize("command", [["info"], ["delete", "1"], ["mine"], ["cluster", "--k", "2"], ["query", "cat"]])
def test_a_damaged_manifest_is_one_line(index_dir: Path, command: list[str]) -> None:
    manifest = json.loads((index_dir / "manifest.json").read_text(encoding="utf-8"))
    manifest["index"]["type"] = None
    (index_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    problem = "manifest.json is corrupt: key 'index.type' is null"
    assert_one_line_error(run(*command, "-d", index_dir), problem, "rebuild")


def test_stdin_jsonl_and_append(index_dir: Path, tiny_model: Path, sentences: list[str]) -> None:
    lines = json.dumps({"text": "a new text about rain", "tag": "weather"}) + "\n"
    result = run("index", "-", "--jsonl", "--append", "-d", index_dir, input=lines)
    assert result.exit_code == 0, result.output
    payload = json.loads(run("query", "a new text about rain", "-k", "1", "--json", "-d", index_dir).output)
    assert payload["hits"][0]["metadata"] == {"tag": "weather"}
    assert f"documents:              {len(sentences) + 1}" in run("info", "-d", index_dir).output


def test_whiten_k_option(tmp_path: Path, tiny_model: Path, sentences: list[str]) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"{a} {b}" for a in sentences for b in sentences[:4]), encoding="utf-8")
    result = run("index", corpus, "-d", tmp_path / "w", "--model", tiny_model, "--whiten-k", "8", "-q")
    assert result.exit_code == 0, result.output
    assert "whitening-k 8" in run("info", "-d", tmp_path / "w").output
    assert run("query", "cat", "-d", tmp_path / "w", "--whiten-k", "8").exit_code == 0
    assert_one_line_error(run("query", "cat", "-d", tmp_path / "w", "--whiten-k", "4"), "whitening")


def test_help_teaches_with_examples() -> None:
    for command in ("index", "query", "info"):
        result = run(command, "--help")
        assert result.exit_code == 0 and "Example" in result.output


# Bad input: one line, exit 1, nothing lost.


def test_empty_corpus(tmp_path: Path, tiny_model: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n  \n", encoding="utf-8")
    assert_one_line_error(run("index", empty, "-d", tmp_path / "i", "--model", tiny_model), "no text to index")
    assert not (tmp_path / "i" / "manifest.json").exists()


def test_index_replace_rebuilds_over_an_index_that_cannot_be_read(tmp_path: Path, tiny_model: Path, index_dir: Path) -> None:
    """The damaged index's error said "rebuild the index from its corpus with `searchengine index`", and
    `index --replace` refused with that same error."""
    (index_dir / "manifest.json").write_text("not json {", encoding="utf-8")
    corpus = tmp_path / "again.txt"
    corpus.write_text("the cat sat on the mat\na dog ran\n", encoding="utf-8")
    kept = run("index", corpus, "-d", index_dir, "--model", tiny_model)
    assert_one_line_error(kept, "holds an index that cannot be read", "pass --replace")
    rebuilt = run("index", corpus, "-d", index_dir, "--model", tiny_model, "--replace")
    assert rebuilt.exit_code == 0, rebuilt.output
    assert run("verify", "-d", index_dir).exit_code == 0
    assert "the cat sat on the mat" in run("query", "cat", "-d", index_dir, "-k", "1").output


def test_binary_corpus_names_the_line(tmp_path: Path, tiny_model: Path, index_dir: Path) -> None:
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"fine text\n\x89PNG\x00\x00\x01\n")
    before = run("query", "cat", "-d", index_dir).output
    refused = run("index", binary, "-d", index_dir, "--model", tiny_model)
    assert_one_line_error(refused, "already holds an index of 12 documents", "--replace")
    assert_one_line_error(run("index", binary, "-d", index_dir, "--model", tiny_model, "--replace"), "line 2", "binary")
    assert run("query", "cat", "-d", index_dir).output == before


def test_non_utf8_corpus_names_the_line(tmp_path: Path, tiny_model: Path) -> None:
    latin = tmp_path / "latin.txt"
    latin.write_bytes("first\nsecond\ncaf\xe9\n".encode("latin-1"))
    assert_one_line_error(run("index", latin, "-d", tmp_path / "i", "--model", tiny_model), "line 3", "UTF-8")


def test_long_lines_are_truncated_and_counted(tmp_path: Path, tiny_model: Path) -> None:
    corpus = tmp_path / "long.txt"
    corpus.write_text("short line\n" + "word " * 5000 + "\n", encoding="utf-8")
    result = run("index", corpus, "-d", tmp_path / "i", "--model", tiny_model)
    assert result.exit_code == 0, result.output
    assert "1 text was longer than the model's 64 tokens" in result.output


def test_missing_corpus_file(tmp_path: Path, tiny_model: Path) -> None:
    assert_one_line_error(run("index", tmp_path / "nope.txt", "-d", tmp_path / "i"), "does not exist")


def test_missing_index(tmp_path: Path) -> None:
    assert_one_line_error(run("query", "cat", "-d", tmp_path / "none"), "no index at", "searchengine index")
    assert_one_line_error(run("info", "-d", tmp_path / "none"), "no index at")
    (tmp_path / "corpus.jsonl").write_text('{"text": "a cat"}\n')
    for command in (("query", "cat"), ("info",)):  # as `add` says it: the answer was "no index at" a file
        assert_one_line_error(run(*command, "-d", tmp_path / "corpus.jsonl"), "corpus.jsonl is a file, not an index directory")


def test_an_index_directory_under_a_file_is_refused_in_one_line(tmp_path: Path, tiny_model: Path) -> None:
    """mkdir's NotADirectoryError reached the user as a traceback."""
    (tmp_path / "corpus.txt").write_text("a cat\n")
    under_a_file = tmp_path / "corpus.txt" / "index"
    assert_one_line_error(
        run("index", tmp_path / "corpus.txt", "-d", under_a_file, "--model", tiny_model),
        f"cannot make the index directory {under_a_file} (Not a directory); choose another index directory",
    )


def test_corrupt_index(index_dir: Path) -> None:
    next(index_dir.glob("segment.*.faiss")).write_bytes(b"garbage")
    assert_one_line_error(run("query", "cat", "-d", index_dir), "truncated", "rebuild")


def test_model_mismatch(index_dir: Path, other_tiny_model: Path) -> None:
    assert_one_line_error(run("query", "cat", "-d", index_dir, "--model", other_tiny_model), "was built with model")


def test_query_on_empty_index(tmp_path: Path, tiny_model: Path) -> None:
    from searchengine import SearchEngine

    SearchEngine.create(tmp_path / "empty", model=tiny_model)
    assert_one_line_error(run("query", "cat", "-d", tmp_path / "empty"), "is empty")


def test_unknown_model_and_pooling(tmp_path: Path, corpus: Path, tiny_model: Path) -> None:
    assert_one_line_error(run("index", corpus, "-d", tmp_path / "i", "--model", "./no/such/model"), "does not exist")
    assert_usage_error(
        run("index", corpus, "-d", tmp_path / "i", "--model", tiny_model, "--pooling", "median"),
        "--pooling",
        "'median' is not one of 'mean', 'cls', 'max', 'mean_sqrt_len', 'last2avg', 'first_last_avg', 'prompt'",
    )
    assert not (tmp_path / "i").exists()


def test_bad_factory_string(tmp_path: Path, corpus: Path, tiny_model: Path) -> None:
    assert_one_line_error(
        run("index", corpus, "-d", tmp_path / "i", "--model", tiny_model, "--index", "NotAType99"), "NotAType99"
    )


def test_index_into_a_foreign_directory_refuses(tmp_path: Path, corpus: Path, tiny_model: Path) -> None:
    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "holiday.jpg").write_bytes(b"jpeg")
    assert_one_line_error(run("index", corpus, "-d", foreign, "--model", tiny_model), "not a searchengine index")
    assert (foreign / "holiday.jpg").read_bytes() == b"jpeg"


def test_query_needs_text_or_file(index_dir: Path) -> None:
    assert_one_line_error(run("query", "-d", index_dir), "give one query")
    assert_one_line_error(run("query", "   ", "-d", index_dir), "empty")


def _spawn_indexer(index_dir: Path, model: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}  # SIGABRT dumps every thread's stack
    command = [
        sys.executable,
        "-m",
        "searchengine",
        "index",
        "-",
        "-d",
        str(index_dir),
        "--model",
        str(model),
        "--replace",
    ]
    # A test run started in the background (`.ci/run &`) ignores SIGINT, and a child inherits that: Python then
    # leaves Ctrl-C ignored, as a shell expects of a background job, and the indexer would never see it.
    return subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _wait_for_new_files(index_dir: Path, before: set[str], process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while not set(p.name for p in index_dir.iterdir()) - before - {".lock"}:
        assert process.poll() is None and time.monotonic() < deadline, process.stderr.read().decode()
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_interrupted_or_killed_indexing_leaves_previous_index(
    index_dir: Path, tiny_model: Path, sentences: list[str], sig: signal.Signals
) -> None:
    before = run("query", sentences[0], "-k", "5", "-d", index_dir).output
    names_before = set(p.name for p in index_dir.iterdir())
    process = _spawn_indexer(index_dir, tiny_model)
    process.stdin.write(("a replacement text that never lands\n" * 5000).encode())
    process.stdin.flush()
    _wait_for_new_files(index_dir, names_before, process)
    process.send_signal(sig)
    try:
        process.wait(timeout=60)  # stdin stays open until the process is gone: EOF must not race the signal
    except subprocess.TimeoutExpired:  # say where it hangs
        process.send_signal(signal.SIGABRT)
        stacks = process.communicate(timeout=30)[1].decode(errors="replace")
        pytest.fail(f"the indexer did not stop within 60 s of {sig.name}; its stacks:\n{stacks[-6000:]}")
    process.stdin.close()
    stderr = process.stderr.read()
    if sig == signal.SIGINT:
        assert process.returncode == 130
        assert b"Interrupted: nothing was changed" in stderr and b"Traceback" not in stderr
    assert run("query", sentences[0], "-k", "5", "-d", index_dir).output == before
    # The next writer clears what the dead run left behind.
    assert run("index", "-", "--append", "-d", index_dir, input="one more text\n").exit_code == 0
    from searchengine.indexer.commit.index_directory import IndexDirectory

    live = IndexDirectory(index_dir).live_file_names()  # the manifest's files and the store's segments
    store_logs = {f"{name}{suffix}" for name in live if name.startswith("documents.") for suffix in ("-wal", "-shm")}
    assert set(p.name for p in index_dir.iterdir()) - store_logs == {".lock", "manifest.json", *live}


def test_second_writer_gets_a_clear_error(index_dir: Path, tiny_model: Path) -> None:
    from searchengine.indexer.commit.index_directory import IndexDirectory

    with IndexDirectory(index_dir).writing():
        result = run("index", "-", "--append", "-d", index_dir, input="text\n")
    assert_one_line_error(result, "is being written by")


def test_speed_options_index_and_query(
    tmp_path: Path, corpus: Path, tiny_model: Path, sentences: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCHENGINE_CACHE", str(tmp_path / "cache"))
    target = tmp_path / "fast"
    result = run("index", corpus, "-d", target, "--model", tiny_model, "--precision", "int8", "--threads", "1")
    assert result.exit_code == 0, result.output
    for options in (["--backend", "onnx"], ["--precision", "fp32", "--threads", "1"]):
        result = run("query", sentences[2], "-k", "1", "-d", target, "--json", *options)
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["hits"][0]["text"] == sentences[2]


def test_a_precision_the_device_cannot_run_is_a_one_line_error(index_dir: Path) -> None:
    assert_one_line_error(run("query", "anything", "-d", index_dir, "--precision", "fp16"), "fp16 is for GPUs")


@pytest.mark.parametrize(
    ("option", "value", "choices"),
    [
        ("--precision", "int4", "'auto', 'fp32', 'bf16', 'fp16', 'int8'"),
        ("--backend", "tensorrt", "'auto', 'torch', 'onnx'"),
    ],
)
def test_unknown_speed_options_are_usage_errors(index_dir: Path, option: str, value: str, choices: str) -> None:
    result = run("query", "anything", "-d", index_dir, option, value)
    assert_usage_error(result, option, f"'{value}' is not one of {choices}")


def test_queries_from_standard_input(index_dir: Path, sentences: list[str]) -> None:
    result = run(
        "query", "--file", "-", "-k", "1", "--json", "-d", index_dir, input=f"{sentences[0]}\n{sentences[5]}\n"
    )
    assert result.exit_code == 0, result.output
    assert [entry["hits"][0]["text"] for entry in json.loads(result.output)] == [sentences[0], sentences[5]]


def test_filters_with_or_in_and_quoted_fields(tmp_path: Path, tiny_model: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    rows = [
        {"text": "the cat sat", "lang": "en", "my field": "x"},
        {"text": "the dog ran", "lang": "de"},
        {"text": "the sun rose", "lang": "fr"},
    ]
    corpus.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
    assert run("index", corpus, "-d", tmp_path / "i", "--model", tiny_model, "-q").exit_code == 0
    found = {
        where: sorted(
            hit["text"]
            for hit in json.loads(run("query", "the", "-d", tmp_path / "i", "--json", "--where", where).output)["hits"]
        )
        for where in ("lang in en,de", "lang=fr or lang=de", "`my field`=x", "text ^= the s")
    }
    assert found == {
        "lang in en,de": ["the cat sat", "the dog ran"],
        "lang=fr or lang=de": ["the dog ran", "the sun rose"],
        "`my field`=x": ["the cat sat"],
        "text ^= the s": ["the sun rose"],
    }


# Long documents as passages, and one-line snippets.

LONG_TAIL = "the rocket flew past the moon toward a distant planet"


def _long_text(seed: int, tail: str = LONG_TAIL) -> str:
    """About 160 tokens of sentences from the tiny model's words, then `tail`: several 62-token passages."""
    words = "cat dog rain snow bread soup piano guitar city road king queen".split()
    sentences = [" ".join(words[(seed + i * j) % len(words)] for j in range(10)) + "." for i in range(15)]
    return " ".join(sentences) + f" {tail}."


def test_passages_are_a_build_setting_that_add_keeps(tmp_path: Path, tiny_model: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        json.dumps({"id": "long", "text": _long_text(0)}) + "\n" + json.dumps({"id": "short", "text": "a cat"}) + "\n",
        encoding="utf-8",
    )
    target = tmp_path / "i"
    result = run("index", corpus, "-d", target, "--model", tiny_model, "--id-field", "id", "--passages")
    assert result.exit_code == 0, result.output
    assert "1 document longer than the model's 62 tokens was split into passages: " in result.output
    assert "for 2 documents added." in result.output and "embedded from the beginning" not in result.output
    assert "one per passage of a document longer than the model's 62 tokens" in run("info", "-d", target).output
    more = tmp_path / "more.txt"
    more.write_text(_long_text(3, "bake the bread in a hot oven with salt") + "\n", encoding="utf-8")
    assert "1 document longer than" in run("add", more, "-d", target).output
    assert_one_line_error(run("index", more, "--append", "--no-passages", "-d", target), "--passages/--no-passages")
    payload = json.loads(run("query", LONG_TAIL, "-k", "1", "--json", "-d", target, "--max-chars", "40").output)
    [hit] = payload["hits"]
    start, end = hit["span"]
    assert hit["external_id"] == "long" and LONG_TAIL in hit["text"][start:end] and end == len(hit["text"])
    assert hit["snippet"].startswith("…") and len(hit["snippet"]) <= 40


def test_without_passages_a_long_text_is_truncated_and_the_summary_says_how_to_split(
    tmp_path: Path, tiny_model: Path
) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text(_long_text(0) + "\n", encoding="utf-8")
    result = run("index", corpus, "-d", tmp_path / "i", "--model", tiny_model, "--no-passages")
    assert "1 text was longer than the model's 64 tokens and embedded from the beginning; index with --passages" in (
        result.output
    )


def test_query_prints_one_line_per_hit_cut_to_max_chars(tmp_path: Path, tiny_model: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    texts = [
        "first line\nsecond line\r\nthird\tline",
        "a bell\x07 and an escape\x1b[31m red and a right-to-left \u202e mark",
        " ".join(["word"] * 200),
    ]
    corpus.write_text("".join(json.dumps({"text": text, "id": f"d{i}"}) + "\n" for i, text in enumerate(texts)))
    target = tmp_path / "i"
    assert run("index", corpus, "-d", target, "--model", tiny_model, "--id-field", "id", "-q").exit_code == 0
    result = run("query", "line word bell", "-k", "3", "-d", target, "--max-chars", "30", "--mode", "dense")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == 3
    snippets = {line.split(") ", 1)[1] for line in lines}
    assert snippets == {
        "first line second line third…",
        "a bell and an escape [31m red…",
        "word word word word word word…",
    }
    payload = json.loads(run("query", "line", "-k", "3", "--json", "-d", target).output)
    by_id = {hit["external_id"]: hit for hit in payload["hits"]}
    assert by_id["d0"]["text"] == texts[0] and by_id["d0"]["snippet"] == "first line second line third line"
    assert by_id["d0"]["span"] is None and list(by_id["d0"])[:4] == ["id", "external_id", "text", "snippet"]
    assert_usage_error(run("query", "line", "-d", target, "--max-chars", "5"), "--max-chars")


def test_max_chars_default_agrees_between_help_and_readme() -> None:
    from searchengine.engine.snippets import DEFAULT_SNIPPET_CHARS

    assert f"[default: {DEFAULT_SNIPPET_CHARS}]" in " ".join(run("query", "--help").output.replace("│", " ").split())
    readme = (Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8")
    assert f"`--max-chars N` (default {DEFAULT_SNIPPET_CHARS})" in readme


def test_described_defaults_show_in_help() -> None:
    """Defaults that are not a plain value (None until resolved) are named in --help, not lost to rich markup."""
    from searchengine.indexer.vectors.index_choice import EXACT_SEARCH_LIMIT, MID_SIZE_DEFAULT

    from searchengine.engine.modes import DEFAULT_FUSION, DEFAULT_MODE

    expected = {
        ("query",): [f"[default: ({DEFAULT_MODE}; dense on an index without a keyword index)]", "[default: (100)]"],
        ("index",): [
            f"[default: (auto: Flat up to {EXACT_SEARCH_LIMIT:,} texts, else {MID_SIZE_DEFAULT})]",
            "[default: (no limit)]",
            "[default: (the model's own prompt)]",
        ],
        ("eval", "retrieval"): [f"[default: ({DEFAULT_FUSION.method})]", f"[default: ({DEFAULT_FUSION.depth})]"],
        ("adapt",): ["[default: (the method's)]"],
    }
    for command, defaults in expected.items():
        shown = " ".join(run(*command, "--help").output.replace("│", " ").split())
        for default in defaults:
            assert default in shown, (command, default)


def test_index_in_shards_answers_as_one_index(tmp_path: Path, corpus: Path, index_dir: Path, tiny_model: Path) -> None:
    sharded = tmp_path / "sharded"
    assert run("index", corpus, "-d", sharded, "--model", tiny_model, "--shards", "3").exit_code == 0
    assert "Flat (FAISS, inner product), in 3 segments searched together" in run("info", "-d", sharded).output
    for query in ("reset my password", "snow and wind"):
        one = json.loads(run("query", query, "-k", "5", "--json", "-d", index_dir).output)["hits"]
        three = json.loads(run("query", query, "-k", "5", "--json", "-d", sharded).output)["hits"]
        assert three == one


def test_mining_and_clustering_read_every_shard(
    tmp_path: Path, corpus: Path, index_dir: Path, tiny_model: Path
) -> None:
    sharded = tmp_path / "sharded"
    assert run("index", corpus, "-d", sharded, "--model", tiny_model, "--shards", "2").exit_code == 0
    for method in ("exact", "ann"):
        command = ["mine", "--top", "5", "--method", method, "--json"]
        sharded_pairs, pairs = [
            json.loads(run(*command, "-d", where).output)["pairs"] for where in (sharded, index_dir)
        ]
        # the same pairs; scores to float rounding (the segments' products are summed in another order)
        assert [{**pair, "score": pytest.approx(pair["score"], abs=1e-6)} for pair in pairs] == sharded_pairs
    clustered = json.loads(run("cluster", "--method", "kmeans", "--k", "3", "--json", "-d", sharded).output)
    assert sorted(i for cluster in clustered["clusters"] for i in cluster["member_ids"]) == list(range(12))


def test_ray_without_ray_installed_says_how_to_install_it(
    tmp_path: Path, corpus: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets where it is not installed
    result = run("index", corpus, "-d", tmp_path / "i", "--model", tiny_model, "--ray", "local")
    assert_one_line_error(result, "pip install 'searchengine[ray]'")
    assert not (tmp_path / "i").exists()


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--ray-workers", "2"], "add --ray ADDRESS to use Ray"),
        (["--ray-part-size", "100000"], "add --ray ADDRESS to use Ray"),
        (["--append", "--ray", "local"], "drop them"),
        (["--append", "--shards", "2"], "drop them"),
    ],
)
def test_ray_options_out_of_place_are_one_error(index_dir: Path, corpus: Path, extra: list[str], fragment: str) -> None:
    assert_one_line_error(run("index", corpus, "-d", index_dir, *extra), fragment)


def test_ray_reads_files_not_standard_input(tmp_path: Path, tiny_model: Path) -> None:
    result = run("index", "-", "-d", tmp_path / "i", "--model", tiny_model, "--ray", "local", input="some text\n")
    assert_one_line_error(result, "Ray workers read the corpus from files")


def test_ray_head_that_does_not_answer_is_one_error_not_a_wait(tmp_path: Path, corpus: Path, tiny_model: Path) -> None:
    result = run("index", corpus, "-d", tmp_path / "i", "--model", tiny_model, "--ray", "127.0.0.1:1")
    assert_one_line_error(result, "the Ray head at 127.0.0.1:1 does not answer", "ray start --head --port 1")


def test_ctrl_c_after_the_commit_says_the_write_is_in_the_index(
    index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit may wait for readers to leave SQLite's log; Ctrl+C then lands after the write committed, and
    must not be reported as 'nothing was changed'."""
    import searchengine.indexer.tables.store as store_module

    def interrupted(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(store_module, "truncate_log", interrupted)
    result = run("add", "-", "-d", index_dir, input="a text added just before ctrl c\n")
    assert result.exit_code == 130, result.output
    assert "Interrupted after the write was committed" in result.output and "nothing was changed" not in result.output
    monkeypatch.undo()
    hits = run("query", "a text added just before ctrl c", "-k", "1", "-d", index_dir, "--mode", "keyword")
    assert "a text added just before ctrl c" in hits.output
