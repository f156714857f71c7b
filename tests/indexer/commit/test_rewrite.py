"""The rewrite's copy of the store (indexer/commit/rewrite.py): where it cannot be written, one line, not SQLite's
traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from searchengine.indexer.commit.rewrite import copy_store
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.tables.store import Document, DocumentStore


def test_a_store_copied_where_it_cannot_be_written_is_refused_in_one_line(tmp_path: Path) -> None:
    """The first write to a format-1 index in a folder this user may not write (read-only media; here, a path
    under a file, which even root cannot create) raised sqlite3.OperationalError with a traceback."""
    source = tmp_path / "documents.db"
    store = DocumentStore(source, writable=True)
    store.add([Document("a text to copy")])
    store.close()
    (tmp_path / "a-file").write_text("not a folder", encoding="utf-8")
    with pytest.raises(IndexerError, match=r"^cannot write a copy of the store as .*a-file/copy.db \(unable to open"):
        copy_store(source, tmp_path / "a-file" / "copy.db")
    copy_store(source, tmp_path / "copy.db")
    assert DocumentStore(tmp_path / "copy.db").count() == 1
