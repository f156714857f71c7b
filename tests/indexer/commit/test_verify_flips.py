"""`verify` against a store with one flipped byte (issue 43, hostile finding 2): a flip that SQLite's quick_check
passes (a byte of an index's entry), and a changed letter inside a stored text or its metadata, which no check of
SQLite's can see, are both caught; an index written before rows had checksums verifies and gains them at its next
write."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.tables.store import Document, DocumentStore

from tests.indexer.small_index import build_small_index


def _store_file(directory: IndexDirectory) -> Path:
    return directory.path / directory.read_settings().files["documents"].name


def _problems(directory: IndexDirectory) -> list[str]:
    return [f"{check.role}: {check.problem}" for check in directory.verify() if check.problem]


def _flip(path: Path, offset: int, mask: int = 0x01) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= mask
    path.write_bytes(bytes(data))


def _offsets(path: Path, needle: bytes) -> list[int]:
    data, found, start = path.read_bytes(), [], 0
    while (at := data.find(needle, start)) >= 0:
        found.append(at)
        start = at + 1
    return found


def _quick_check(path: Path) -> str:
    with sqlite3.connect(path) as connection:
        return connection.execute("PRAGMA quick_check").fetchone()[0]


def test_a_flipped_byte_of_an_index_entry_that_quick_check_passes_is_caught(tmp_path: Path) -> None:
    """Every copy of one document's text hash in the file (its row, the hash index's entry) flipped in turn."""
    original = build_small_index(tmp_path / "index", 40)
    store = _store_file(original)
    with sqlite3.connect(store) as connection:
        digest = connection.execute("SELECT hash FROM documents WHERE id = 17").fetchone()[0]
    offsets = _offsets(store, digest.encode())
    assert len(offsets) >= 2
    passed_quick_check = 0
    for n, offset in enumerate(offsets):
        copy = tmp_path / f"copy{n}"
        copy.mkdir()
        for file in original.path.iterdir():
            (copy / file.name).write_bytes(file.read_bytes())
        damaged = IndexDirectory(copy)
        _flip(_store_file(damaged), offset + 5)  # one hex digit of the hash to another
        passed_quick_check += _quick_check(_store_file(damaged)) == "ok"
        problems = _problems(damaged)
        assert problems and any(problem.startswith(("store: SQLite", "rows:")) for problem in problems), offset
    assert passed_quick_check >= 1  # what verify ran before: it said OK


def test_a_changed_letter_inside_a_stored_text_or_metadata_is_caught(tmp_path: Path) -> None:
    rose = Document("a quiet garden of roses", "notes.txt", 3, {"colour": "red"}, "rose")
    directory = build_small_index(tmp_path / "index", 30, documents=[rose])
    store_path = _store_file(directory)
    assert _problems(directory) == []
    for needle, replacement in ((b"garden of roses", b"garden of noses"), (b'"red"', b'"rad"')):
        data = store_path.read_bytes()
        assert data.count(needle) == 1, needle  # the row's copy; the keyword index keeps words, not the text
        store_path.write_bytes(data.replace(needle, replacement))
        assert _quick_check(store_path) == "ok"
        problems = _problems(directory)
        assert any(problem.startswith("rows: ") and "document 30 (rose)" in problem for problem in problems), problems
        store_path.write_bytes(data)
    assert _problems(directory) == []


def test_an_index_without_row_checksums_verifies_and_gains_them_at_its_next_write(tmp_path: Path) -> None:
    directory = build_small_index(tmp_path / "index", 20)
    store_path = _store_file(directory)
    with sqlite3.connect(store_path) as connection:  # as an index written before migration 4
        connection.execute("DROP TRIGGER row_checksums_delete")
        connection.execute("DROP TABLE row_checksums")
        connection.execute("DELETE FROM schema_migrations WHERE number >= 4")
    checks = {check.role: check for check in directory.verify()}
    assert all(check.problem is None for check in checks.values()), [check.problem for check in checks.values()]
    assert "no row checksums yet" in checks["rows"].checked
    reader = DocumentStore(store_path)  # a reader copes: it reads as before
    assert reader.get([3])[3].text == "document 3"
    reader.close()
    writer = DocumentStore(store_path, writable=True)  # the first write applies the migration
    writer.begin()
    writer.tombstones.add(writer.delete([5]))
    writer.commit()
    writer.close()
    checks = {check.role: check for check in directory.verify()}
    assert all(check.problem is None for check in checks.values()), [check.problem for check in checks.values()]
    assert checks["rows"].checked.startswith("19 documents")
    with sqlite3.connect(store_path) as connection:  # the write's pages into the file, out of the log
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = store_path.read_bytes()
    assert data.count(b"document 12") == 1
    store_path.write_bytes(data.replace(b"document 12", b"document 13"))
    assert any("document 12" in problem for problem in _problems(directory))


def test_the_migration_sums_every_row_in_batches(tmp_path: Path) -> None:
    from searchengine.indexer.tables.row_checksums import record_missing_row_checksums

    directory = build_small_index(tmp_path / "index", 25)
    with sqlite3.connect(_store_file(directory)) as connection:
        connection.execute("DELETE FROM row_checksums WHERE id % 3 = 0")
    writer = DocumentStore(_store_file(directory), writable=True)
    with writer.db.atomic():
        assert record_missing_row_checksums(writer.db, batch=4) == 9
        assert record_missing_row_checksums(writer.db, batch=4) == 0
    writer.close()
    assert _problems(directory) == []


def test_a_writer_holding_the_store_is_not_reported_as_damage(tmp_path: Path) -> None:
    """FTS5 runs its check as a write: while another connection holds the write lock (past SQLite's wait), verify
    says the keyword index was not checked, and reports nothing damaged."""
    directory = build_small_index(tmp_path / "index", 10)
    writer = sqlite3.connect(_store_file(directory), isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        checks = {check.role: check for check in directory.verify()}
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert all(check.problem is None for check in checks.values()), [check.problem for check in checks.values()]
    assert "the keyword index was not checked: a writer held the store throughout" in checks["rows"].checked
