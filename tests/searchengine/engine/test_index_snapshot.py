"""The snapshot an engine reloads after its own write (IndexSnapshot.writing): read through the store connection it
holds, it still loads exactly one commit, the newest, whole (segments, tombstones, counts), whatever else another
writer committed meanwhile, and a change beyond rows and segments (a rebuild, a new field index) is loaded as an
open loads it."""

from __future__ import annotations

from pathlib import Path

import pytest
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.tables.documents import Document

from searchengine import SearchEngine
from searchengine.encoding.encoder import Encoder
from searchengine.errors import SearchEngineError

TEXTS = [
    "a cat sat on the mat",
    "stocks fell sharply",
    "snow fell in the mountains",
    "the recipe needs bread and salt",
    "the train left the city",
    "a guitar song on the piano",
]


EVERY_MODE = {"dense": True, "keyword": True, "hybrid": True}
"""What `_found` says of a text that every mode finds first."""


def _engine(path: Path, encoder: Encoder) -> SearchEngine:
    return SearchEngine.build(
        [Document(text, external_id=f"doc-{i}") for i, text in enumerate(TEXTS)], path, encoder=encoder
    )


def _found(engine: SearchEngine, text: str) -> dict[str, bool]:
    """Whether each mode finds `text` as its best hit."""
    return {mode: engine.search(text, k=1, mode=mode)[0].text == text for mode in ("dense", "keyword", "hybrid")}


def test_a_write_reloads_through_the_store_connection_it_holds(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = _engine(tmp_path / "index", tiny_encoder)
    try:
        store = engine.reader.store
        engine.add([Document("a rocket to the moon", external_id="new")], merge=False)
        assert engine.reader.store is store and store.holds_snapshot
        assert len(engine) == 7 and _found(engine, "a rocket to the moon") == EVERY_MODE
        assert engine.delete(external_ids=["doc-1"], merge=False) == [1]
        assert engine.reader.store is store and len(engine) == 6 and len(engine.reader.tombstones) == 1
        assert all(
            hit.text != "stocks fell sharply" for hit in engine.search("stocks fell sharply", k=10, mode="dense")
        )
        assert engine.refresh() is False  # the newest commit is the one loaded
    finally:
        engine.close()


def test_another_writer_committing_before_the_reload_is_loaded_whole(tmp_path: Path, tiny_encoder: Encoder) -> None:
    """Another writer's commits land between this engine's commit and its reload: the reload loads the newest
    commit, its segments, tombstones and documents together, never this engine's commit beside another's rows."""
    path = tmp_path / "index"
    engine = _engine(path, tiny_encoder)
    other = SearchEngine.open(path, encoder=tiny_encoder)
    try:
        with engine.reader.writing():
            with writing_in_place(engine.reader.directory) as write:  # this engine's own write
                change = write.store.add([Document("a planet in space", external_id="mine")])
                write.vectors.add(engine.reader.encode(["a planet in space"]), change.ids)
            other.add([Document("the doctor walked home", external_id="theirs")], merge=False)
            other.delete(external_ids=["doc-2"], merge=False)
        assert len(engine) == 7 and engine.refresh() is False
        assert len(engine.reader.tombstones) == 1 and engine.reader.vectors.count == 8
        assert _found(engine, "a planet in space") == _found(engine, "the doctor walked home") == EVERY_MODE
        for mode in ("dense", "keyword", "hybrid"):
            assert all(
                hit.text != "snow fell in the mountains" for hit in engine.search("snow mountains", k=10, mode=mode)
            )
    finally:
        other.close()
        engine.close()


def test_a_rebuild_during_the_write_is_loaded_as_an_open_loads_it(
    tmp_path: Path, tiny_encoder: Encoder, other_tiny_model: Path
) -> None:
    """A new manifest (a rebuild) names another store: the reload opens it, and refuses another model."""
    path = tmp_path / "index"
    engine = _engine(path, tiny_encoder)
    try:
        with engine.reader.writing():
            SearchEngine.build(["the garden needs water and sun"], path, encoder=tiny_encoder).close()
        assert len(engine) == 1 and engine.search("garden water", k=1)[0].text == "the garden needs water and sun"
        with pytest.raises(SearchEngineError, match="was rebuilt with model .* since it was opened"):
            with engine.reader.writing():
                SearchEngine.build(["other"], path, encoder=Encoder(other_tiny_model)).close()
        with pytest.raises(SearchEngineError, match="closed"):
            engine.search("garden", k=1)  # the loaded store was let go: it answers nothing rather than two states
    finally:
        engine.close()


def test_a_field_index_made_during_the_write_is_loaded(tmp_path: Path, tiny_encoder: Encoder) -> None:
    """A write that changed the store's tables (a field index, an upgrade step) is followed by a full load."""
    path = tmp_path / "index"
    engine = _engine(path, tiny_encoder)
    other = SearchEngine.open(path, encoder=tiny_encoder)
    try:
        with engine.reader.writing():
            other.index_fields(["lang"])
            other.add([Document("a ball game with a goal", metadata={"lang": "en"}, external_id="game")], merge=False)
        assert engine.indexed_fields() == ["lang"]
        assert [hit.text for hit in engine.search("game goal", k=5, where={"lang": "en"})] == [
            "a ball game with a goal"
        ]
    finally:
        other.close()
        engine.close()


def test_the_reload_after_a_write_still_refuses_an_inconsistent_commit(tmp_path: Path, tiny_encoder: Encoder) -> None:
    """A commit whose store counts a document without its vector fails the reload's check (one-line error), and the
    engine answers nothing until a refresh loads a whole state."""
    path = tmp_path / "index"
    engine = _engine(path, tiny_encoder)
    try:
        with pytest.raises(IndexerError, match="is inconsistent"):
            with engine.reader.writing(), writing_in_place(engine.reader.directory) as write:
                write.store.add([Document("a row without its vector", external_id="broken")])
        with pytest.raises(SearchEngineError, match="closed"):
            engine.search("row without vector", k=1)
    finally:
        engine.close()


def test_an_engine_closed_refuses_every_later_call_in_one_line(tmp_path: Path, tiny_encoder: Encoder) -> None:
    """After close() (or leaving `with`), reads, writes, refresh, len() and encode() say the engine was closed; none
    reopens it (a write once loaded the index again behind the caller's back, a read failed on a missing store, and
    len() still told the count it had when closed)."""
    with _engine(tmp_path / "index", tiny_encoder) as engine:
        assert len(engine.search("cat", k=1)) == 1
        cat = engine.encode(["cat"])[0]
    calls = {
        "search": lambda: engine.search("cat", k=1),
        "search_by_vector": lambda: engine.search_by_vector(cat),
        "encode": lambda: engine.encode(["cat"]),
        "len": lambda: len(engine),
        "get": lambda: engine.get(ids=["doc-1"]),
        "info": lambda: engine.info(),
        "add": lambda: engine.add(["a rocket to the moon"]),
        "delete": lambda: engine.delete(external_ids=["doc-1"]),
        "refresh": lambda: engine.refresh(),
    }
    for name, call in calls.items():
        with pytest.raises(SearchEngineError, match=r"^the engine on .* was closed; open the index again"):
            call()
        assert engine.reader.closed, name
    engine.close()  # closing again is harmless
    assert len(SearchEngine.open(tmp_path / "index", encoder=tiny_encoder)) == len(TEXTS)
