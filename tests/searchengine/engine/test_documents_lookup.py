"""SearchEngine.documents: stored documents by filter, without a query (the integrations' lookup by id)."""

from __future__ import annotations

from pathlib import Path

import pytest
from searchengine.indexer.query.filter_sql import Condition
from searchengine.indexer.tables.store import Document

from searchengine import SearchEngine, SearchEngineError
from searchengine.encoding.encoder import Encoder


def test_documents_by_external_id_and_by_metadata(tmp_path: Path, tiny_encoder: Encoder) -> None:
    given = [
        Document(f"note {n}", metadata={"year": 2000 + n}, external_id=f"d{n}", source="s.jsonl", line=n + 1)
        for n in range(6)
    ]
    with SearchEngine.build(given, tmp_path / "i", encoder=tiny_encoder) as engine:
        assert engine.documents([Condition("external_id", "in", ("d4", "missing", "d1"))]) == [given[1], given[4]]
        assert engine.documents(["year>=2004"]) == given[4:]
        assert engine.documents({"year": 1999}) == []
        engine.delete(external_ids=["d4"])
        assert engine.documents([Condition("external_id", "in", ("d4", "d5"))]) == [given[5]]
        with pytest.raises(SearchEngineError, match="say which documents"):
            engine.documents([])
