"""SyncRequest (`searchengine sync`) and AddRequest (the server's POST /documents, the MCP add tool) run in the
engine: a sync re-reads only the folders named, and a record that is not a document refuses the whole add."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchengine.encoding.encoder import Encoder
from searchengine.encoding.speed import EncoderSpeed
from searchengine.engine.add_request import AddRequest
from searchengine.engine.sync_request import SyncRequest
from searchengine.errors import SearchEngineError
from searchengine.reading.corpus import JsonFields
from tests.searchengine.engine.test_files import _build
from tests.searchengine.reading.made_files import notes_folder


def test_a_sync_request_adds_a_new_file_and_names_it(tmp_path: Path, tiny_encoder: Encoder) -> None:
    root = notes_folder(tmp_path / "notes")
    _build(root, tmp_path / "index", tiny_encoder).close()
    (root / "new.md").write_text("# Weather\n\nThe storm brings rain and wind.\n", encoding="utf-8")
    request = SyncRequest(tmp_path / "index", [], EncoderSpeed("fp32"))
    assert request.paths is None  # none named: every folder the index reads
    engine = request.open()
    assert request.run(engine).added == ["new.md"]
    assert SyncRequest(tmp_path / "index", [root]).run(engine).files.unchanged == 5
    with pytest.raises(SearchEngineError, match="is not one of the folders this index reads"):
        SyncRequest(tmp_path / "index", [tmp_path]).run(engine)
    engine.close()


def test_an_add_request_reads_every_record_before_anything_is_written(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = _build(notes_folder(tmp_path / "notes"), tmp_path / "index", tiny_encoder)
    size = len(engine)
    with pytest.raises(SearchEngineError, match="document 2"):
        AddRequest([{"text": "fine"}, {"body": "no text field"}])
    adding = AddRequest([{"body": "a note on kites", "id": "k1"}], JsonFields(text="body", id="id"))
    assert [document.external_id for document in adding.documents] == ["k1"]
    answer = adding.run(engine)
    assert answer["added"] == 1 and answer["index_size"] == size + 1 == len(engine)
    engine.close()


def test_an_add_request_takes_source_and_line_from_their_fields() -> None:
    """POST /documents' source_field and line_field: the values become the documents' origin, not metadata, and a
    value of the wrong kind refuses the request in one line."""
    records = [{"text": "a", "from": "notes.txt", "at": 3, "n": 1}, {"text": "b"}]
    documents = AddRequest(records, source_field="from", line_field="at").documents
    assert [(d.source, d.line, d.metadata) for d in documents] == [("notes.txt", 3, {"n": 1}), (None, None, {})]
    assert AddRequest(records).documents[0].metadata == {"from": "notes.txt", "at": 3, "n": 1}
    with pytest.raises(SearchEngineError, match='document 1 has a "at" field \\(its line\\) that is not a whole'):
        AddRequest([{"text": "a", "at": "3"}], line_field="at")
    with pytest.raises(SearchEngineError, match='document 1 has a "from" field \\(its source\\) that is not a string'):
        AddRequest([{"text": "a", "from": 3}], source_field="from")
