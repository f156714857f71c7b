"""Filters inside the vector search, delete, upsert, tombstones + compact, and readers beside a writer."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from pathlib import Path

import pytest
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.errors import IndexerError, IndexLockedError
from searchengine.indexer.tables import store_connection, wal_upkeep
from searchengine.indexer.tables.store import Document
from typer.testing import CliRunner

from searchengine import BuildSettings, SearchEngine, SearchEngineError
from searchengine.cli import app
from searchengine.encoding.encoder import Encoder
from tests.format_one import downgrade_to_format_1

TOPICS = ["cat", "dog", "rain", "snow", "bread", "soup", "piano", "guitar"]


def _documents(count: int = 64) -> list[Document]:
    return [
        Document(
            f"{TOPICS[i % 8]} {TOPICS[(i * 3) % 8]} note {i}",
            metadata={"year": 2000 + i % 10, "lang": "en" if i % 4 else "fr", "n": i},
            external_id=f"doc-{i}",
        )
        for i in range(count)
    ]


@pytest.fixture(
    params=[("Flat", 1), ("HNSW32", 1), ("IVF4,Flat", 1), ("Flat", 3), ("HNSW32", 3)],
    ids=["Flat", "HNSW32", "IVF4,Flat", "Flat-3-shards", "HNSW32-3-shards"],
)
def engine(request: pytest.FixtureRequest, tmp_path: Path, tiny_encoder: Encoder) -> SearchEngine:
    """An index of each kind the update paths treat differently: removable in place or tombstoned, trained, and
    split over shards (searchengine.indexer.vectors.build_parts: a segment each)."""
    index, shards = request.param
    return SearchEngine.build(
        _documents(),
        tmp_path / "idx",
        BuildSettings(index=index, shards=shards),
        encoder=tiny_encoder,
    )


def test_filtered_search_returns_k_matching_hits(engine: SearchEngine) -> None:
    hits = engine.search("cat dog note", k=10, where=["lang=fr", "year>=2004"])
    expected = {i for i in range(64) if i % 4 == 0 and 2000 + i % 10 >= 2004}
    assert len(hits) == min(10, len(expected))
    assert all(hit.metadata["lang"] == "fr" and hit.metadata["year"] >= 2004 for hit in hits)


def test_selective_filter_still_fills_k(engine: SearchEngine) -> None:
    """Four of 64 documents match: all four come back, even from approximate index types."""
    expected = [n for n in range(64) if n % 10 == 0 and n % 4 == 0]
    assert expected == [0, 20, 40, 60]
    hits = engine.search("piano", k=10, where={"year": 2000, "lang": "fr"})
    assert sorted(hit.metadata["n"] for hit in hits) == expected


def test_filter_matching_nothing_returns_nothing(engine: SearchEngine) -> None:
    assert engine.search("cat", k=5, where=["year>3000"]) == []


def test_filter_on_columns(engine: SearchEngine) -> None:
    assert {hit.id for hit in engine.search("cat", k=50, where=["id<3"])} == {0, 1, 2}


def test_unknown_field_names_the_known_ones(engine: SearchEngine) -> None:
    with pytest.raises(IndexerError, match="no document has a field 'colour'.*lang"):
        engine.search("cat", where=["colour=red"])


def test_delete_removes_from_results_and_counts(engine: SearchEngine) -> None:
    target = engine.search("cat cat note 0", k=1)[0]
    assert engine.delete(ids=[target.id]) == [target.id]
    assert len(engine) == 63
    reopened = SearchEngine.open(engine.path)
    assert target.id not in {hit.id for hit in reopened.search(target.text, k=63)}
    if not engine.info().index_type.startswith("IVF"):  # IVF probes 1 of 4 cells here: fewer hits by design
        assert len(reopened.search(target.text, k=100)) == 63


def test_delete_unknown_id_deletes_nothing(engine: SearchEngine) -> None:
    with pytest.raises(IndexerError, match="no document with id 999"):
        engine.delete(ids=[1, 999])
    assert len(SearchEngine.open(engine.path)) == 64


def test_delete_by_external_id(engine: SearchEngine) -> None:
    engine.delete(external_ids=["doc-5", "doc-6"])
    assert len(engine) == 62
    with pytest.raises(IndexerError, match="no document with external id doc-5"):
        engine.delete(external_ids=["doc-5"])
    with pytest.raises(IndexerError, match="^no document with external id doc-5, nope; nothing was deleted$"):
        engine.delete(external_ids=["doc-5", "doc-5", "nope"])  # each named once (it listed doc-5 twice)


def test_upsert_replaces_the_text_of_an_external_id(engine: SearchEngine) -> None:
    old = engine.search("snow snow", k=64, where={"n": 3})[0]
    report = engine.add([Document("a completely new soup recipe", metadata={"n": 3}, external_id="doc-3")])
    assert (report.added, report.replaced, len(engine)) == (1, 1, 64)
    assert old.text not in {hit.text for hit in engine.search(old.text, k=64)}
    assert engine.search("a completely new soup recipe", k=1)[0].metadata == {"n": 3}
    again = engine.add([Document("a completely new soup recipe", external_id="doc-3")])
    assert (again.added, again.replaced, again.updated, len(engine)) == (0, 0, 1, 64)
    assert engine.search("a completely new soup recipe", k=1)[0].metadata == {}  # the upsert's own metadata


def test_tombstones_until_compact(engine: SearchEngine) -> None:
    engine.delete(ids=[0, 1, 2])
    assert len(engine.tombstones) == 3  # segments are immutable: every index type keeps tombstones until a merge
    assert not {0, 1, 2} & {hit.id for hit in engine.search("cat", k=61)}
    dropped = engine.compact()
    assert dropped == 3
    assert len(engine.tombstones) == 0 and len(engine) == 61
    assert len(engine.search("cat", k=100, where=["id>=0"])) == 61


def test_readers_see_old_or_new_state_while_a_writer_adds(tmp_path: Path, tiny_encoder: Encoder) -> None:
    path = tmp_path / "live"
    SearchEngine.build(_documents(16), path, encoder=tiny_encoder)
    errors: list[BaseException] = []
    sizes: set[int] = set()
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            try:
                reader = SearchEngine.open(path, encoder=tiny_encoder)
                sizes.add(len(reader.search("cat", k=1000)))
                reader.close()
            except BaseException as exc:  # noqa: BLE001 (any error at all fails the test)
                errors.append(exc)
                return

    readers = [threading.Thread(target=read) for _ in range(2)]
    for thread in readers:
        thread.start()
    writer = SearchEngine.open(path, encoder=tiny_encoder)
    for round_number in range(5):
        writer.add([f"new text {round_number} {i}" for i in range(8)])
    done.set()
    for thread in readers:
        thread.join()
    assert not errors, errors
    assert sizes <= {16 + 8 * r for r in range(6)} and len(sizes) >= 2


def test_a_second_writer_is_refused(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = SearchEngine.build(["one", "two"], tmp_path / "i", encoder=tiny_encoder)
    with IndexDirectory(engine.path).writing():
        with pytest.raises(IndexLockedError, match="is being written"):
            engine.add(["three"])
    assert len(SearchEngine.open(engine.path)) == 2


def test_cli_where_add_delete_compact(tmp_path: Path, tiny_model: Path) -> None:
    import json

    runner = CliRunner()
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text(
        "\n".join(
            json.dumps({"id": f"d{i}", "text": f"{TOPICS[i % 8]} note {i}", "year": 2010 + i}) for i in range(20)
        ),
        encoding="utf-8",
    )
    target = str(tmp_path / "idx")
    base = ["-d", target]
    assert (
        runner.invoke(
            app, ["index", str(corpus), "--model", str(tiny_model), "--index", "HNSW32", "--id-field", "id", *base]
        ).exit_code
        == 0
    )
    result = runner.invoke(app, ["query", "cat", "-k", "3", "--where", "year>=2025", "--json", *base])
    assert [hit["metadata"]["year"] >= 2025 for hit in json.loads(result.output)["hits"]] == [True] * 3
    nothing = runner.invoke(app, ["query", "cat", "--where", "year>3000", *base])
    assert nothing.exit_code == 0 and "No documents match year>3000" in nothing.output
    bad = runner.invoke(app, ["query", "cat", "--where", "colour=red", *base])
    assert bad.exit_code == 1 and bad.output.startswith("Error: no document has a field 'colour'")
    malformed = runner.invoke(app, ["query", "cat", "--where", "year=>", *base])
    assert malformed.exit_code == 1 and "cannot read the filter" in malformed.output
    update = tmp_path / "update.jsonl"
    update.write_text(json.dumps({"id": "d0", "text": "a replaced first note", "year": 1999}) + "\n", encoding="utf-8")
    added = runner.invoke(app, ["add", str(update), "--id-field", "id", *base])
    assert added.exit_code == 0 and "1 replaced by upsert" in added.output
    deleted = runner.invoke(app, ["delete", "#3", "4", *base])
    assert "Deleted 2 documents" in deleted.output
    assert "3 vectors stay as tombstones until their segments merge; they are never returned." in deleted.output
    assert "`searchengine compact` drops them now" in runner.invoke(app, ["info", *base]).output
    unknown = runner.invoke(app, ["delete", "999", *base])
    assert unknown.exit_code == 1 and "nothing was deleted" in unknown.output
    assert "Dropped 3 deleted vectors" in runner.invoke(app, ["compact", *base]).output
    assert re.search(r"deleted, not compacted:\s+none", runner.invoke(app, ["info", *base]).output)
    external = runner.invoke(app, ["delete", "--external", "d7", *base])
    assert "Deleted 1 document;" in external.output
    assert "1 vector stays as a tombstone until its segment merges; it is never returned." in external.output


def test_refresh_reopens_only_after_another_writer_commits(tmp_path: Path, tiny_encoder: Encoder) -> None:
    path = tmp_path / "shared"
    reader = SearchEngine.build(_documents(8), path, encoder=tiny_encoder)
    assert reader.refresh() is False
    SearchEngine.open(path, encoder=tiny_encoder).add(["a text from another writer"])
    assert len(reader) == 8 and reader.refresh() is True and len(reader) == 9
    assert reader.search("a text from another writer", k=1)[0].text == "a text from another writer"
    assert reader.refresh() is False


def test_refresh_refuses_an_index_rebuilt_with_another_model_and_keeps_serving(
    tmp_path: Path, tiny_encoder: Encoder, other_tiny_model: Path
) -> None:
    path = tmp_path / "rebuilt"
    reader = SearchEngine.build(_documents(8), path, encoder=tiny_encoder)
    SearchEngine.build(["other"], path, encoder=Encoder(other_tiny_model))
    with pytest.raises(SearchEngineError, match="was rebuilt with model .* since it was opened"):
        reader.refresh()
    assert len(reader.search("cat", k=100)) == 8


def test_a_refresh_that_fails_keeps_serving_the_loaded_state_whole(tmp_path: Path, tiny_encoder: Encoder) -> None:
    """The server's readers refresh before each turn and keep serving when that fails: every mode must then answer
    from the state loaded, not keyword search from the new commit beside the old vectors (hybrid search failed
    with "no vector with id 8" when the refresh had moved the store's snapshot before the load failed)."""
    path = tmp_path / "damaged"
    reader = SearchEngine.build(_documents(8), path, encoder=tiny_encoder)
    writer = SearchEngine.open(path, encoder=tiny_encoder)
    writer.add(["a volcano erupted near the harbour"])
    segment = path / writer.reader.vectors.segments[-1].record.name  # the write's new segment
    intact = segment.read_bytes()
    segment.write_bytes(intact[:-5] + bytes([intact[-5] ^ 0xFF]) + intact[-4:])  # same size, other bytes
    with pytest.raises(IndexerError, match="is corrupt"):
        reader.refresh()
    for mode in ("dense", "keyword", "hybrid"):
        hits = reader.search("volcano harbour", k=20, mode=mode)
        assert all(hit.id < 8 for hit in hits), mode
    assert len(reader.search("volcano harbour", k=20, mode="hybrid")) == 8
    segment.write_bytes(intact)
    assert reader.refresh() is True
    assert reader.search("volcano harbour", k=1, mode="keyword")[0].text == "a volcano erupted near the harbour"


def _shared(engine_path: Path, tiny_encoder: Encoder) -> SearchEngine:
    return SearchEngine.build(
        [
            Document("the same text", "a.jsonl", 1, {"lang": "en"}, external_id="d10"),
            Document("the same text", "a.jsonl", 2, {"lang": "de"}, external_id="d11"),
            Document("another text", "a.jsonl", 3, {"lang": "fr"}, external_id="d12"),
        ],
        engine_path,
        encoder=tiny_encoder,
    )


def test_deleting_one_external_id_keeps_another_document_with_the_same_text(
    tmp_path: Path, tiny_encoder: Encoder
) -> None:
    """Issue 11: `delete --external d10` also deleted d11 when both had the same text."""
    engine = _shared(tmp_path / "i", tiny_encoder)
    engine.delete(external_ids=["d10"])
    hits = engine.search("the same text", k=5)
    assert [hit.external_id for hit in hits] == ["d11", "d12"]
    assert hits[0].line == 2 and hits[0].metadata == {"lang": "de"}


def test_an_upsert_that_makes_two_documents_share_a_text_then_a_delete_keeps_the_other(
    tmp_path: Path, tiny_encoder: Encoder
) -> None:
    engine = _shared(tmp_path / "i", tiny_encoder)
    report = engine.add([Document("another text", external_id="d10")])  # d10 now shares d12's text
    assert (report.added, report.repeats, report.replaced, len(engine)) == (1, 1, 1, 3)
    engine.delete(external_ids=["d12"])
    assert sorted(hit.external_id for hit in engine.search("another text", k=5)) == ["d10", "d11"]
    assert engine.search("another text", k=1)[0].external_id == "d10"


def test_a_repeated_texts_own_metadata_is_filterable(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = _shared(tmp_path / "i", tiny_encoder)
    assert [hit.external_id for hit in engine.search("text", k=5, where={"lang": "de"})] == ["d11"]
    assert [hit.line for hit in engine.search("text", k=5, where=["external_id=d11"])] == [2]


def _make_legacy(path: Path) -> None:
    """Turn the index at `path` (built by `_shared` without d11) into one as older versions wrote it: the store
    with one row per distinct text, a count, and an external_ids table naming the shared row twice (format 1)."""
    downgrade_to_format_1(path)
    manifest_path = path / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    store = path / manifest["files"]["documents"]
    store.unlink()
    connection = sqlite3.connect(store)
    connection.executescript(
        """
        CREATE TABLE documents (id INTEGER PRIMARY KEY, text TEXT, source TEXT, line INTEGER, metadata TEXT,
                                hash TEXT, count INTEGER);
        CREATE UNIQUE INDEX idx_documents_hash ON documents (hash);
        CREATE TABLE external_ids (external_id TEXT PRIMARY KEY, id INTEGER);
        CREATE INDEX idx_external_ids_id ON external_ids (id);
        CREATE TABLE tombstones (id INTEGER PRIMARY KEY);
        INSERT INTO documents VALUES (0, 'the same text', 'a.jsonl', 1, '{"lang": "en"}', 'h0', 2);
        INSERT INTO documents VALUES (1, 'another text', 'a.jsonl', 3, '{"lang": "fr"}', 'h1', 1);
        INSERT INTO external_ids VALUES ('d10', 0), ('d11', 0), ('d12', 1);
        """
    )
    connection.commit()
    connection.close()
    manifest["sizes"]["documents"] = store.stat().st_size
    manifest.get("checksums", {}).pop("documents", None)
    manifest["count"] = {"vectors": 2, "documents": 3, "tombstones": 0}
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")


def test_an_index_written_by_an_older_version_opens_answers_and_is_upgraded_on_its_next_write(
    tmp_path: Path, tiny_encoder: Encoder
) -> None:
    path = tmp_path / "old"
    SearchEngine.build(
        [Document("the same text", external_id="d10"), Document("another text", external_id="d12")],
        path,
        encoder=tiny_encoder,
    )
    _make_legacy(path)
    engine = SearchEngine.open(path, encoder=tiny_encoder)
    assert len(engine) == 2 and not engine.has_keyword_index and engine.default_mode == "dense"
    assert [hit.external_id for hit in engine.search("the same text", k=2)] == ["d10", "d12"]
    assert [hit.id for hit in engine.search("text", k=2, where=["external_id=d12"])] == [1]
    engine.delete(external_ids=["d10"])  # the write upgrades the store: d11 becomes a document of its own
    assert engine.info().documents == 2 and engine.info().vectors == 2
    hits = engine.search("the same text", k=5, mode="dense")
    assert [hit.external_id for hit in hits] == ["d11", "d12"]
    assert hits[0].text == "the same text" and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert engine.has_keyword_index  # the upgraded store holds every document, d11 too, in its keyword index
    assert [hit.external_id for hit in engine.search("same", k=5, mode="keyword")] == ["d11"]


def _give_a_blank_external_id(path: Path, external_id: str) -> None:
    """Store "" as `external_id`'s id, in one committed write with its row checksum, as the code before blank ids
    were refused (refuse_unstorable) stored a Document(external_id="")."""
    from searchengine.indexer.commit.live_write import writing_in_place
    from searchengine.indexer.tables.row_checksums import record_row_checksums

    with writing_in_place(IndexDirectory(path)) as write:
        db = write.store.documents.db
        (row_id,) = db.execute("SELECT id FROM documents WHERE external_id = ?", [external_id]).fetchone()
        db.execute("UPDATE documents SET external_id = '' WHERE id = ?", [row_id])
        record_row_checksums(db, [row_id])


def test_an_index_holding_a_blank_external_id_written_before_they_were_refused_still_serves_and_deletes_it(
    tmp_path: Path, tiny_model: Path
) -> None:
    """A write now refuses "" as an id, but an index that holds one still opens, searches, verifies, takes writes
    (an upsert of another id, compact), and `searchengine delete --external ""` removes that document."""
    path = tmp_path / "idx"
    SearchEngine.build(
        [Document("the cat sat on the mat", external_id="blank"), Document("stock prices fell", external_id="b")],
        path,
        BuildSettings(model=str(tiny_model)),
    )
    _give_a_blank_external_id(path, "blank")
    engine = SearchEngine.open(path)
    assert engine.external_ids() == ["", "b"]
    assert engine.search("the cat sat on the mat", k=1)[0].external_id == ""
    assert engine.add([Document("stock prices rose", external_id="b")]).replaced == 1
    engine.compact()
    engine.close()
    runner, base = CliRunner(), ["-d", str(path)]
    verified = runner.invoke(app, ["verify", *base])
    assert verified.exit_code == 0, verified.output
    deleted = runner.invoke(app, ["delete", "--external", "", *base])
    assert deleted.exit_code == 0 and "Deleted 1 document; the index holds 1 document." in deleted.output
    assert SearchEngine.open(path).external_ids() == ["b"]


def test_cli_delete_external_keeps_the_twin_and_query_json_carries_external_ids(
    tmp_path: Path, tiny_model: Path
) -> None:
    runner = CliRunner()
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text(
        "\n".join(
            json.dumps({"id": name, "text": text})
            for name, text in [("d10", "a shared text"), ("d11", "a shared text"), ("d12", "something else")]
        ),
        encoding="utf-8",
    )
    base = ["-d", str(tmp_path / "idx")]
    built = runner.invoke(app, ["index", str(corpus), "--model", str(tiny_model), "--id-field", "id", *base])
    assert "Indexed 3 documents from" in built.output and "of which 1 repeats an earlier text" in built.output
    deleted = runner.invoke(app, ["delete", "--external", "d10", *base])
    assert deleted.exit_code == 0 and "Deleted 1 document; the index holds 2 documents." in deleted.output
    hits = json.loads(runner.invoke(app, ["query", "a shared text", "--json", *base]).output)["hits"]
    assert [(list(hit)[:2], hit["external_id"]) for hit in hits] == [
        (["id", "external_id"], "d11"),
        (["id", "external_id"], "d12"),
    ]
    assert re.search(r"documents:\s+2 documents\n", runner.invoke(app, ["info", *base]).output)


def test_written_files_keep_the_permissions_of_the_index(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = SearchEngine.build(["one", "two"], tmp_path / "i", encoder=tiny_encoder)
    for entry in engine.path.iterdir():
        entry.chmod(0o640)
    engine.add(["three"])  # a new segment: it takes the store's permissions
    engine.compact()  # a merged segment too
    directory = IndexDirectory(engine.path)
    manifest = directory.read_manifest()
    segments = [directory.file(manifest, role) for role in manifest.files if role.startswith("segment")]
    for path in (directory.file(manifest, "documents"), *segments, engine.path / "manifest.json"):
        assert path.stat().st_mode & 0o777 == 0o640, path.name


def test_info_and_searches_never_fail_while_a_writer_keeps_committing(tmp_path: Path, tiny_encoder: Encoder) -> None:
    """Issue 11: about 3 in 16,000 `info` calls failed during writes. Readers loop over `info` (the CLI command's
    own code) and open-and-search for a bounded few seconds while a writer commits as fast as it can."""
    import time

    from click.exceptions import Exit

    from searchengine.cli.maintenance import info

    path = tmp_path / "busy"
    SearchEngine.build(_documents(16), path, encoder=tiny_encoder)
    failures: list[BaseException] = []
    calls = [0, 0]
    done = threading.Event()

    def read_info() -> None:
        while not done.is_set():
            try:
                info(index_dir=path, as_json=True)
            except (Exit, Exception) as exc:  # noqa: BLE001 (any failure at all counts)
                failures.append(exc)
            calls[0] += 1

    def search() -> None:
        while not done.is_set():
            try:
                with SearchEngine.open(path, encoder=tiny_encoder) as reader:
                    reader.search("cat", k=3)
            except Exception as exc:  # noqa: BLE001
                failures.append(exc)
            calls[1] += 1

    readers = [threading.Thread(target=read_info), threading.Thread(target=search)]
    for thread in readers:
        thread.start()
    writer = SearchEngine.open(path, encoder=tiny_encoder)
    commits, deadline = 0, time.monotonic() + 4
    while time.monotonic() < deadline:
        writer.add([Document(f"churn {commits}", external_id="churn")])
        commits += 1
    done.set()
    for thread in readers:
        thread.join()
    assert not failures, failures[:3]
    assert commits >= 5 and min(calls) >= 5, (commits, calls)


def test_a_reader_s_cached_filter_sees_a_later_writer_after_refresh(tmp_path: Path, tiny_encoder: Encoder) -> None:
    """A read-only store keeps a filter's ids for its read snapshot; a commit by another writer must not be hidden
    by it once the reader refreshes."""
    path = tmp_path / "cached"
    SearchEngine.build([Document(f"cat number {i}", metadata={"n": i}) for i in range(6)], path, encoder=tiny_encoder)
    reader = SearchEngine.open(path, encoder=tiny_encoder)
    assert len(reader.search("cat", k=10, where=["n>=3"])) == 3  # cached now
    writer = SearchEngine.open(path, encoder=tiny_encoder)
    writer.add([Document("cat number 7", metadata={"n": 7})])
    writer.delete(ids=[3])
    assert len(reader.search("cat", k=10, where=["n>=3"])) == 3  # the reader's snapshot, until it refreshes
    assert reader.refresh()
    found = reader.search("cat", k=10, where=["n>=3"])
    assert sorted(hit.metadata["n"] for hit in found) == [4, 5, 7]


def test_an_id_repeated_in_one_input_is_one_document_and_the_summary_says_so(tmp_path: Path, tiny_model: Path) -> None:
    """Ids are text, so 1 and "1" are one id; the later document replaces the earlier before anything is stored,
    and the summary counts it (it used to replace silently)."""
    corpus = tmp_path / "docs.jsonl"
    rows = [{"id": 1, "text": "first text"}, {"id": "1", "text": "second text"}, {"id": "b", "text": "other"}]
    corpus.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
    built = CliRunner().invoke(
        app, ["index", str(corpus), "--model", str(tiny_model), "--id-field", "id", "-d", str(tmp_path / "i")]
    )
    assert built.exit_code == 0, built.output
    assert (
        '1 replaced by a later document with the same id in this input (ids are text: 1 and "1" are one id)'
        in built.output
    )
    engine = SearchEngine.open(tmp_path / "i")
    assert len(engine) == 2 and sorted(engine.external_ids()) == ["1", "b"]
    assert engine.search("second text", k=1, mode="keyword")[0].external_id == "1"


def _log_bytes(engine: SearchEngine) -> int:
    log = Path(f"{engine.directory.file(engine.manifest, 'documents')}-wal")
    return log.stat().st_size if log.exists() else 0


def test_writes_through_one_engine_leave_sqlites_log_empty(
    tmp_path: Path, tiny_encoder: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An engine that held its read snapshot across its own writes kept SQLite from ever emptying its log: 100
    adds of 200 documents left an 89 MB log beside the store, and it stayed after close."""
    monkeypatch.setattr(store_connection, "WAL_KEEP_BYTES", 1024)
    monkeypatch.setattr(wal_upkeep, "_waited_in_vain", {})
    engine = SearchEngine.build(_documents(8), tmp_path / "index", encoder=tiny_encoder)
    for start in range(0, 60, 20):
        engine.add([f"{TOPICS[i % 8]} added note {start + i}" for i in range(20)], merge=False)
        assert _log_bytes(engine) == 0
    assert engine.delete(external_ids=["doc-1"]) == [1]
    assert _log_bytes(engine) == 0
    assert wal_upkeep._waited_in_vain == {}  # no write waited for the engine's own snapshot
    assert len(engine) == 67 and engine.search("piano added note 6", k=1)[0].text == "piano added note 6"


def test_a_failed_write_leaves_the_engine_reading_one_commit(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = SearchEngine.build(_documents(8), tmp_path / "index", encoder=tiny_encoder)
    with pytest.raises(SearchEngineError, match="lone surrogate|surrogate"):
        engine.add(["fine", "bad \ud800 text"])
    assert engine.reader.store.db.conn.in_transaction  # its read snapshot is back
    SearchEngine.open(tmp_path / "index", encoder=tiny_encoder).add(["written by another engine"])
    assert len(engine) == 8 and len(engine.search("written by another engine", k=100, mode="keyword")) == 0
    assert engine.refresh() is True and len(engine) == 9


def test_a_reload_that_fails_after_a_write_never_answers_from_two_commits(
    tmp_path: Path, tiny_encoder: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write committed, so the engine's snapshot of the commit before is gone: it answers nothing (one-line
    errors) until a refresh loads, never keyword hits of the new commit beside the old vectors."""
    import searchengine.engine.index_snapshot as engine_module

    engine = SearchEngine.build(_documents(8), tmp_path / "index", encoder=tiny_encoder)
    loading = engine_module.load_segment

    def out_of_files(*args: object, **kwargs: object) -> object:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(engine_module, "load_segment", out_of_files)
    with pytest.raises(OSError, match="Too many open files"):
        engine.add(["zebra crossing"], merge=False)
    for mode in ("keyword", "hybrid", "dense"):
        with pytest.raises(SearchEngineError, match="closed"):
            engine.search("zebra crossing", k=20, mode=mode)
    monkeypatch.setattr(engine_module, "load_segment", loading)
    assert engine.delete(external_ids=["doc-1"]) == [1]  # a write through the closed engine loads it again
    assert len(engine) == 8 and engine.refresh() is False
    assert engine.search("zebra crossing", k=1, mode="hybrid")[0].text == "zebra crossing"
    engine.close()
    engine = SearchEngine.open(tmp_path / "index", encoder=tiny_encoder)
    monkeypatch.setattr(engine_module, "load_segment", out_of_files)
    with pytest.raises(OSError, match="Too many open files"):
        engine.add(["yak herding"], merge=False)
    monkeypatch.setattr(engine_module, "load_segment", loading)
    assert engine.refresh() is True and len(engine) == 9


def test_refresh_of_an_index_of_format_1_reloads_only_after_a_write(tmp_path: Path, tiny_encoder: Encoder) -> None:
    """A format-1 store holds no read snapshot: refresh must not take that for a released one and reload each time."""
    SearchEngine.build(_documents(8), tmp_path / "index", encoder=tiny_encoder).close()
    downgrade_to_format_1(tmp_path / "index")
    reader = SearchEngine.open(tmp_path / "index", encoder=tiny_encoder)
    assert reader.manifest.segmented is False
    assert [reader.refresh() for _ in range(3)] == [False, False, False]
    SearchEngine.open(tmp_path / "index", encoder=tiny_encoder).add(["converted by this write"])
    assert reader.refresh() is True and len(reader) == 9 and reader.refresh() is False
