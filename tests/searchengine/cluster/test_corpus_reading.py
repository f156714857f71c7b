"""The documents `searchengine cluster-index build` reads from a corpus: each with the id that picks its shard, its
own (--id-field) or NAME#LINE, the same at every reading of the same files."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from searchengine.cluster.corpus_reading import cluster_corpus
from searchengine.errors import SearchEngineError
from searchengine.reading.corpus import JsonFields


def test_documents_without_an_id_are_named_by_their_file_and_line(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "b.txt").write_text("third text\n\nfourth text\n")
    (folder / "a.jsonl").write_text(json.dumps({"text": "first text", "lang": "en"}) + "\n" + '{"text": "second"}\n')
    (folder / "notes.md").write_text("not a corpus file\n")
    documents = list(cluster_corpus(folder))
    assert [(d.external_id, d.text) for d in documents] == [
        ("a.jsonl#1", "first text"),
        ("a.jsonl#2", "second"),
        ("b.txt#1", "third text"),
        ("b.txt#3", "fourth text"),  # a blank line is no document, but it keeps its number
    ]
    assert documents[0].metadata == {"lang": "en"}
    assert [d.external_id for d in cluster_corpus(folder)] == [d.external_id for d in documents]  # stable
    assert [d.external_id for d in cluster_corpus(folder / "b.txt")] == ["b.txt#1", "b.txt#3"]


def test_an_id_field_gives_each_document_its_own_id(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"_id": "x1", "text": "one"}\n{"_id": 7, "text": "two"}\n')
    documents = list(cluster_corpus(corpus, fields=JsonFields(id="_id")))
    assert [(d.external_id, d.text) for d in documents] == [("x1", "one"), ("7", "two")]
    corpus.write_text('{"_id": "x1", "text": "one"}\n{"text": "two"}\n')
    with pytest.raises(SearchEngineError, match='line 2 needs a string or integer "_id" field'):
        list(cluster_corpus(corpus, fields=JsonFields(id="_id")))


def test_documents_from_standard_input_are_named_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one text\n\nanother text\n")))
    assert [(d.external_id, d.text) for d in cluster_corpus("-")] == [
        ("stdin#1", "one text"),
        ("stdin#3", "another text"),
    ]
