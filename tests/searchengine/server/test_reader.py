"""The reader thread: queries that wait together are answered in one batch, each with its own results."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TypeVar

import pytest
from searchengine.indexer.tables import store_connection, wal_upkeep
from searchengine.indexer.tables.store import Document

from searchengine.encoding.encoder import Encoder
from searchengine.engine.search_engine import SearchEngine
from searchengine.errors import SearchEngineError
from searchengine.server import reader as reader_module
from searchengine.server.reader import BatchingReader, SearchOptions
from searchengine.server.served_index import ServedIndex
from tests.conftest import SENTENCES

T = TypeVar("T")


def _hold(reader: BatchingReader) -> tuple[threading.Event, Future]:
    """Keep the reader thread busy until the returned event is set; returns once it is busy."""
    busy, release = threading.Event(), threading.Event()
    held = reader.run(lambda _engine: busy.set() or release.wait(30))
    assert busy.wait(30)
    return release, held


def test_queries_waiting_together_are_one_batch_per_options(served: ServedIndex) -> None:
    reader = served.reader
    release, held = _hold(reader)
    same = [reader.search([text], SearchOptions(k=1)) for text in SENTENCES[:8]]
    filtered = reader.search(SENTENCES[8:10], SearchOptions(k=2, where=("lang=en",)))
    batches_before = reader.batches
    release.set()
    assert held.result(30) is True
    for text, future in zip(SENTENCES[:8], same):
        assert future.result(30)[0][0].text == text
    assert all(hit.metadata["lang"] == "en" for hits in filtered.result(30) for hit in hits)
    assert reader.batches - batches_before == 2  # eight single queries in one encoder call, the filtered pair in one


def test_an_error_reaches_only_the_queries_that_asked_for_it(served: ServedIndex) -> None:
    reader = served.reader
    release, _ = _hold(reader)
    bad = reader.search(["cat"], SearchOptions(where=("colour=red",)))
    good = reader.search(["the cat sat on the mat"], SearchOptions(k=1))
    release.set()
    assert "no document has a field 'colour'" in str(bad.exception(30))
    assert good.result(30)[0][0].text == "the cat sat on the mat"


def test_max_batch_bounds_a_turn(served: ServedIndex) -> None:
    reader = served.reader
    reader.max_batch = 3
    release, _ = _hold(reader)
    futures = [reader.search([text], SearchOptions(k=1)) for text in SENTENCES[:7]]
    before = reader.batches
    release.set()
    assert [future.result(30)[0][0].text for future in futures] == SENTENCES[:7]
    assert reader.batches - before == 3  # 3 + 3 + 1


def test_a_cancelled_query_is_skipped_and_the_reader_goes_on(served: ServedIndex) -> None:
    reader = served.reader
    release, _ = _hold(reader)
    given_up = reader.search(["cat"], SearchOptions(k=1))
    assert given_up.cancel()
    kept = reader.search(["the cat sat on the mat"], SearchOptions(k=1))
    release.set()
    assert kept.result(30)[0][0].text == "the cat sat on the mat"
    assert reader.search(["the king and queen ruled the empire"], SearchOptions(k=1)).result(30)[0][0].id == 11


def test_two_readers_answer_at_once_with_siblings_that_share_the_model_and_segments(index_path, tiny_encoder) -> None:
    served = ServedIndex(index_path, encoder=tiny_encoder, readers=2)
    try:
        reader = served.reader
        assert reader.readers == 2
        release, held = _hold(reader)  # one reader is busy: the other still answers
        assert reader.search(["the cat sat on the mat"], SearchOptions(k=1)).result(30)[0][0].text == (
            "the cat sat on the mat"
        )
        both_busy, second = threading.Event(), reader.run(lambda engine: both_busy.set() or engine)
        assert both_busy.wait(30)
        release.set()
        first = held.result(30)
        engines = [second.result(30)] + [reader.run(lambda engine: engine).result(30) for _ in range(4)]
        assert {id(engine.encoder) for engine in engines} == {id(tiny_encoder)}
        segment_files = {id(segment.index) for engine in engines for segment in engine.reader.vectors.segments}
        assert len(segment_files) == len(engines[0].reader.vectors.segments)  # loaded once for both
        assert first is True
        served.writer.submit(lambda engine: engine.add(["a brand new sentence about volcanoes"])).result(30)
        for _ in range(4):  # whichever reader answers has seen the write
            hits = reader.search(["a brand new sentence about volcanoes"], SearchOptions(k=1)).result(30)
            assert hits[0][0].text == "a brand new sentence about volcanoes"
    finally:
        served.close()
    assert not any(
        thread.is_alive() for thread in threading.enumerate() if thread.name.startswith("searchengine-reader")
    )


@pytest.mark.parametrize("readers", [0, 65, 10**12, True, 2.0])
def test_a_reader_count_out_of_range_is_refused_before_any_thread(readers: object) -> None:
    with pytest.raises(SearchEngineError, match=r"1 to 64 reader threads, not"):
        BatchingReader(lambda: None, readers=readers)  # type: ignore[arg-type]


def test_a_reader_thread_the_system_refuses_is_one_error_and_stops_the_started_ones(
    index_path: Path, tiny_encoder: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    class SecondRefused(threading.Thread):
        def start(self) -> None:
            if self.name.endswith("-1"):
                raise RuntimeError("can't start new thread")
            super().start()

    monkeypatch.setattr(reader_module.threading, "Thread", SecondRefused)
    reader = BatchingReader(lambda: SearchEngine.open(index_path, encoder=tiny_encoder), readers=2)
    with pytest.raises(SearchEngineError, match=r"cannot start reader thread searchengine-reader-1 .*fewer --readers"):
        reader.start()
    monkeypatch.undo()
    assert not any(thread.name.startswith("searchengine-reader") for thread in threading.enumerate())


def _on_every_reader(reader: BatchingReader, function: Callable[[SearchEngine], T]) -> list[T]:
    """`function(engine)` once on each reader thread: each call waits until every reader holds one, so no reader
    takes two (a turn takes all the calls queued)."""
    together = threading.Barrier(reader.readers)

    def call(engine: SearchEngine, started: threading.Event) -> T:
        started.set()
        together.wait(30)
        return function(engine)

    futures = []
    for _ in range(reader.readers):
        started = threading.Event()
        futures.append(reader.run(lambda engine, started=started: call(engine, started)))
        assert started.wait(30)
    return [future.result(30) for future in futures]


def test_a_search_keeps_its_state_while_another_process_merges_and_every_reader_then_sees_the_new_one(
    index_path: Path, tiny_encoder: Encoder
) -> None:
    """A reader in the middle of its turn answers from the state it loaded while an outside writer (as
    `searchengine add`, `delete` and `compact` in another process) commits and removes every segment file that
    reader has loaded; each reader's next turn answers from the new state, none stuck on the old segment list."""
    served = ServedIndex(index_path, encoder=tiny_encoder, readers=3)
    outside = SearchEngine.open(index_path, encoder=tiny_encoder)
    queries = ["a brand new sentence about volcanoes", "the cat sat on the mat"]
    try:
        reader = served.reader
        inside, release, loaded = threading.Event(), threading.Event(), []

        def mid_turn(engine: SearchEngine) -> list[list]:
            loaded.extend(segment.record.name for segment in engine.reader.vectors.segments)
            inside.set()
            assert release.wait(30)
            return engine.search_batch(queries, k=30, mode="hybrid")

        held = reader.run(mid_turn)
        assert inside.wait(30)
        outside.add(["a brand new sentence about volcanoes"])
        outside.delete(external_ids=["doc-1"])
        assert outside.compact() == 1
        assert not any((index_path / name).exists() for name in loaded)  # removed under the held reader
        release.set()
        before = held.result(30)
        assert [sorted(hit.id for hit in hits) for hits in before] == [list(range(len(SENTENCES)))] * 2
        for hits in _on_every_reader(reader, lambda engine: engine.search_batch(queries, k=30, mode="hybrid")):
            texts = {hit.text for query_hits in hits for hit in query_hits}
            assert "a brand new sentence about volcanoes" in texts and "the cat sat on the mat" not in texts
            assert len(hits[0]) == len(SENTENCES)
    finally:
        outside.close()
        served.close()


def test_every_answer_in_every_mode_holds_a_write_whole_or_not_at_all(index_path: Path, tiny_encoder: Encoder) -> None:
    """Clients search in dense, keyword and hybrid mode, filtered to one write, on three readers while the writer
    adds writes of four documents (one long enough to be split into passages) and replaces them all (upsert): an
    answer holds all four documents of a write or none, all of one version."""
    served = ServedIndex(index_path, encoder=tiny_encoder, readers=3)
    long_text = " ".join(["the rocket flew past the moon toward a distant planet"] * 12)

    def batch(number: int, version: int) -> list[Document]:
        texts = [f"tag{number} garden note {n} v{version}" for n in range(3)] + [f"tag{number} v{version} {long_text}"]
        return [
            Document(text, metadata={"batch": number, "version": version}, external_id=f"b{number}-{n}")
            for n, text in enumerate(texts)
        ]

    problems, answers, done = [], [0], threading.Event()

    def client(mode: str) -> None:
        while not done.is_set():
            for number in range(4):
                options = SearchOptions(k=50, where=(f"batch={number}",), mode=mode)
                hits = served.reader.search([f"tag{number} garden"], options).result(30)[0]
                versions = [hit.metadata["version"] for hit in hits]
                if len(hits) not in (0, 4) or len(set(versions)) > 1:
                    problems.append((mode, number, sorted(hit.external_id for hit in hits), versions))
                answers[0] += 1

    def write(number: int, version: int) -> None:
        served.writer.submit(lambda engine: engine.add(batch(number, version))).result(60)

    clients = [threading.Thread(target=client, args=(mode,)) for mode in ("dense", "keyword", "hybrid") * 2]
    try:
        write(0, 1)  # the field `batch` exists before a filter names it
        for thread in clients:
            thread.start()
        for number, version in [(0, 2), (1, 1), (1, 2), (2, 1), (3, 1), (2, 2), (3, 2)]:
            write(number, version)
    finally:
        done.set()
        for thread in clients:
            thread.join()
        served.close()
    assert problems == []
    assert answers[0] >= 24


def test_health_stays_stale_while_any_reader_serves_an_old_generation(
    index_path: Path, tiny_encoder: Encoder, other_tiny_model: Path
) -> None:
    """Each reader reopens on its own turn: one that reopened does not clear another's problem."""

    def opened() -> SearchEngine:
        return SearchEngine.open(index_path, encoder=tiny_encoder)

    reader = BatchingReader(opened, readers=2, idle_refresh_s=600.0)  # no idle turn refreshes a reader behind the test
    reader.start()

    def each_reader_takes_a_turn() -> None:
        release, held = _hold(reader)  # one reader busy, so the next call goes to the other
        reader.run(lambda _engine: None).result(30)
        release.set()
        held.result(30)

    try:
        SearchEngine.build(["something else entirely"], index_path, encoder=Encoder(other_tiny_model)).close()
        each_reader_takes_a_turn()
        assert reader.problem is not None and reader.problem.endswith("(2 of 2 readers)")
        SearchEngine.build(SENTENCES, index_path, encoder=tiny_encoder).close()  # the model it serves, again
        release, held = _hold(reader)  # this reader reopens; the other has not taken a turn since
        assert "was rebuilt with model" in reader.problem and reader.problem.endswith("(1 of 2 readers)")
        release.set()
        held.result(30)
        each_reader_takes_a_turn()
        assert reader.problem is None
    finally:
        reader.close()


def test_writes_beside_idle_readers_leave_sqlites_log_empty(
    index_path: Path, tiny_encoder: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two readers hold read snapshots all the time; each write waits for them to load it and renew, then empties
    the log (a 100,000-document add through the server had left a 629 MB log beside an 80 MB store)."""
    monkeypatch.setattr(store_connection, "WAL_KEEP_BYTES", 1024)
    monkeypatch.setattr(wal_upkeep, "_waited_in_vain", {})
    served = ServedIndex(index_path, encoder=tiny_encoder, readers=2)
    try:
        store = served.writer.submit(lambda engine: engine.directory.file(engine.manifest, "documents")).result(30)
        log = Path(f"{store}-wal")
        for start in range(0, 30, 10):
            served.writer.submit(
                lambda engine, start=start: engine.add([f"new {start + i}" for i in range(10)])
            ).result(30)
            assert log.stat().st_size == 0
        with SearchEngine.open(index_path, encoder=tiny_encoder) as elsewhere:  # as another process's writes
            elsewhere.add(["written beside the server"], merge=False)  # the idle writer engine holds no snapshot
            assert log.stat().st_size == 0
        assert wal_upkeep._waited_in_vain == {}
        assert len(served.reader.search(["new 25"], SearchOptions(k=100)).result(30)[0]) == len(SENTENCES) + 31
    finally:
        served.close()
    assert not log.exists()


def test_after_close_reads_and_writes_are_refused_not_left_waiting(served: ServedIndex) -> None:
    """A LangChain or LlamaIndex store used after close() (or its with block) waited forever for a reader thread
    that had stopped; a write raised the executor's RuntimeError."""
    served.close()
    for call in (
        lambda: served.reader.run(len),
        lambda: served.reader.search(["cat"], SearchOptions()),
        lambda: served.writer.submit(len),
    ):
        with pytest.raises(SearchEngineError, match="this index was closed"):
            call()
    served.close()  # a second close does nothing
