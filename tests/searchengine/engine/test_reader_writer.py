"""The reader and the writer each open on their own over an index directory, without SearchEngine: what a shard
server (an IndexReader) and a shard's writer (an IndexWriter) will be."""

from __future__ import annotations

from pathlib import Path

from searchengine.encoding.encoder import Encoder
from searchengine.engine.index_reader import IndexReader
from searchengine.engine.index_writer import IndexWriter, create_index
from searchengine.reading.corpus import JsonFields


def test_a_writer_alone_writes_what_a_reader_alone_then_finds(tmp_path: Path, tiny_encoder: Encoder) -> None:
    path = tmp_path / "index"
    create_index(path, tiny_encoder)
    writer = IndexWriter(path, tiny_encoder)
    report = writer.add(["a cat sat on the mat", "stocks fell sharply", "snow fell in the mountains"])
    assert report.added == 3
    reader = IndexReader(path, tiny_encoder)
    try:
        assert len(reader) == 3
        assert reader.search_batch(["a cat sat on the mat"], k=1, mode="dense")[0][0].text == "a cat sat on the mat"
        assert writer.delete([1]) == [1]
        assert reader.refresh() and len(reader) == 2  # the reader moves on to the writer's commit
        assert sorted(document.text for document in reader.documents(["id<10"])) == [
            "a cat sat on the mat",
            "snow fell in the mountains",
        ]
    finally:
        reader.close()


def test_a_writer_alone_loads_the_index_own_model(tmp_path: Path, tiny_model: Path) -> None:
    """Without an encoder, the writer loads the model the index names (checked against it) when it embeds."""
    path = tmp_path / "index"
    create_index(path, Encoder(tiny_model))
    writer = IndexWriter(path)
    assert writer.add(["one", "two"], JsonFields()).added == 2
    assert writer.encoders.loaded is not None or writer.encoders.onnx is not None


def test_search_engine_stays_a_thin_front() -> None:
    """Issue 40's target: the facade over the reader and the writer is at most 300 lines, its chroma-style and
    analysis calls in modules of their own that it inherits (so its public calls are unchanged)."""
    import searchengine.engine.search_engine as module
    from searchengine.engine.analysis_calls import AnalysisCalls
    from searchengine.engine.chroma_style import ChromaStyleCalls
    from searchengine.engine.search_engine import SearchEngine

    lines = len(Path(module.__file__).read_text(encoding="utf-8").splitlines())
    assert lines <= 300, f"engine/search_engine.py is {lines} lines: move a group of calls into a module of its own"
    assert issubclass(SearchEngine, ChromaStyleCalls) and issubclass(SearchEngine, AnalysisCalls)
    for name in ("add", "upsert", "get", "search_by_vector", "cluster", "clustering", "mine", "dedupe", "search"):
        assert callable(getattr(SearchEngine, name)), name


def test_ensure_index_adds_to_an_index_another_writer_made_while_it_loaded_its_model(
    tmp_path: Path, tiny_encoder: Encoder
) -> None:
    """`index --append` and the LangChain and LlamaIndex stores look for the index, load their model (seconds),
    then create it: one made meanwhile by another writer was emptied before create refused a path holding an index,
    and then failed the call with 'exists already'. The other writer's create and add run here at the moment
    ensure_index calls create_index (a profile hook; the code itself runs as it is)."""
    import sys

    from searchengine.engine.index_writer import ensure_index

    path = tmp_path / "index"
    other: list[int] = []

    def other_writer(frame: object, event: str, arg: object) -> None:  # noqa: ARG001
        if event == "call" and frame.f_code is create_index.__code__ and not other:  # type: ignore[attr-defined]
            create_index(path, tiny_encoder)
            other.append(IndexWriter(path, tiny_encoder).add(["written by the other writer"]).added)

    sys.setprofile(other_writer)
    try:
        assert ensure_index(path, encoder=tiny_encoder) is tiny_encoder
    finally:
        sys.setprofile(None)
    assert other == [1]
    reader = IndexReader(path, tiny_encoder)
    try:
        assert len(reader) == 1
    finally:
        reader.close()
