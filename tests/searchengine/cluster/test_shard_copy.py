"""A shard copy's writes in this process, without Ray (ShardCopy is a plain class): each commits through the index's
own protocol and the copy's reader moves on to it, and the copy merges its segments as one index's add does."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from searchengine.indexer.commit.merge_policy import MERGE_FACTOR
from searchengine.indexer.query.filter_sql import Condition
from searchengine.indexer.tables.documents import Document

from searchengine.cluster.embedded_model import EmbeddedModel
from searchengine.cluster.shard_copy import ShardCopy
from searchengine.encoding.encoder import Encoder
from searchengine.engine.index_reader import IndexReader
from tests.searchengine.cluster.conftest import corpus


def _copy(root: Path, encoder: Encoder, documents: list[Document]) -> ShardCopy:
    """A copy of `documents`, built as a cluster build builds one, on a node named "a"."""
    copy = ShardCopy(str(root / "a" / "copy"), 0, str(root), node="a")
    copy.begin_build(EmbeddedModel.of(encoder), "Flat")
    copy.write_batch(documents, encoder.encode([document.text for document in documents]))
    copy.finish_build()
    return copy


def test_a_copy_s_writes_are_read_at_once_and_its_segments_merged(tmp_path: Path, tiny_encoder: Encoder) -> None:
    copy = _copy(tmp_path, tiny_encoder, corpus(20))
    try:
        store = copy.reader.store
        for number in range(1, MERGE_FACTOR + 2):
            added = [Document(f"a rocket to the moon number {number}", external_id=f"new-{number}")]
            assert copy.apply(number, added, tiny_encoder.encode([added[0].text]), []).sequence == number
            assert copy.status()["documents"] == 20 + number
        assert copy.apply(MERGE_FACTOR + 2, [], None, ["doc-3", "new-1"]).sequence == MERGE_FACTOR + 2
        assert copy.reader.store is store  # each write reloaded through the connection the reader holds
        status = copy.status()
        assert status["documents"] == 20 + MERGE_FACTOR - 1 and status["sequence"] == MERGE_FACTOR + 2
        assert status["segments"] < MERGE_FACTOR + 1  # unmerged: the build's segment and one per write
        texts = [hit.text for hit in copy.reader.search_batch(["a rocket to the moon number 5"], k=3, mode="keyword")[0]]
        assert texts[0] == "a rocket to the moon number 5" and "a rocket to the moon number 1" not in texts
    finally:
        copy.reader.close()


WRITES = [  # (documents to upsert, external ids to delete), in order
    ([Document("a rocket to the moon", external_id="r-1"), Document("a storm at sea", external_id="r-2")], []),
    ([Document("a rocket to the moon", external_id="r-1")], []),  # the same text again: updated
    ([Document("a rocket to mars", external_id="r-1")], []),  # a new text: replaced
    ([Document("first of two", external_id="r-3"), Document("second of two", external_id="r-3")], []),  # superseded
    ([], ["r-2"]),
    ([], ["no-such-document"]),  # one index refuses it; a copy removes nothing
]


def test_a_copy_s_write_counts_what_one_index_s_add_counts_and_a_write_it_holds_counts_nothing(
    tmp_path: Path, tiny_encoder: Encoder
) -> None:
    from searchengine.cluster.write_counts import WriteCounts
    from searchengine.engine.index_writer import IndexWriter
    from searchengine.errors import SearchEngineError
    from tests.searchengine.cluster.conftest import one_index

    documents = corpus(20)
    copy = _copy(tmp_path, tiny_encoder, documents)
    writer = IndexWriter(one_index(tmp_path / "one", documents, tiny_encoder), tiny_encoder)
    try:
        for sequence, (upserted, deleted) in enumerate(WRITES, start=1):
            vectors = tiny_encoder.encode([document.text for document in upserted]) if upserted else None
            applied = copy.apply(sequence, upserted, vectors, deleted)
            assert applied.sequence == sequence
            if upserted:
                report = writer.add(upserted)
                fields = ("documents", "added", "replaced", "updated", "superseded")
                assert applied.counts == WriteCounts(**{name: getattr(report, name) for name in fields})
            elif deleted == ["no-such-document"]:
                assert applied.counts == WriteCounts()
                with pytest.raises(SearchEngineError, match="no document with external id no-such-document"):
                    writer.delete(external_ids=deleted)
            else:
                assert applied.counts == WriteCounts(deleted=len(writer.delete(external_ids=deleted)))
        held = [copy.apply(sequence, [], None, ["r-1"]) for sequence in (3, len(WRITES))]  # sent again: held
        assert held == [(len(WRITES), None), (len(WRITES), None)]
        one = IndexReader(writer.path, tiny_encoder)
        try:
            assert copy.status()["documents"] == len(one) == 22  # r-1 not deleted by the writes sent again
        finally:
            one.close()
    finally:
        copy.reader.close()


def test_a_write_sent_again_is_held_and_another_writers_write_under_a_held_number_is_refused(
    tmp_path: Path, tiny_encoder: Encoder
) -> None:
    """Two writers that each read the shard's number 0 send write 1: the copy takes the first, holds it when the
    same write comes again, and refuses the second writer's (before, it took any held number as held: the second
    writer's write was acknowledged and never stored)."""
    from searchengine.cluster.errors import WriteConflictError

    copy = _copy(tmp_path, tiny_encoder, corpus(20))

    def write(text: str, write_id: str, sequence: int = 1) -> object:
        added = [Document(text, external_id="raced")]
        return copy.apply(sequence, added, tiny_encoder.encode([text]), [], write_id)

    try:
        assert write("from the first writer", "first").sequence == 1
        assert write("from the first writer", "first") == (1, None)  # the same write sent again: held
        with pytest.raises(WriteConflictError, match="holds write 1, and this write was sent as write 1"):
            write("from the second writer", "second")
        with pytest.raises(WriteConflictError, match="holds write 1"):
            write("from the first writer", "first", sequence=0)  # an older number: another write, whatever its id
        documents = copy.reader.store.documents
        [(row_id, _)] = documents.by_external_id({"raced"}).values()
        assert documents.get([row_id])[row_id].text == "from the first writer"
        assert copy.status()["documents"] == 21
        assert write("from the second writer", "second", sequence=2).sequence == 2  # numbered after the first's
    finally:
        copy.reader.close()


def test_a_merge_that_fails_after_the_write_committed_is_logged_and_the_next_write_merges(
    tmp_path: Path, tiny_encoder: Encoder, caplog: pytest.LogCaptureFixture
) -> None:
    """The copy's segment files are out of the merge's reach (moved out of its folder: the reader holds them
    loaded) when the write that makes a merge due arrives. The write is committed and acknowledged, its document
    and the older ones are found, the merge's failure is logged, not raised; with the files back, the next write
    merges."""
    copy = _copy(tmp_path, tiny_encoder, corpus(20))

    def write(number: int) -> int:
        added = [Document(f"a rocket to the moon number {number}", external_id=f"new-{number}")]
        return copy.apply(number, added, tiny_encoder.encode([added[0].text]), []).sequence

    try:
        for number in range(1, MERGE_FACTOR - 1):  # the build's segment and one a write: a merge is due at the next
            write(number)
        aside = tmp_path / "aside"
        aside.mkdir()
        segments = sorted(copy.folder.glob("segment.*"))
        assert len(segments) == MERGE_FACTOR - 1
        for segment in segments:
            segment.rename(aside / segment.name)
        with caplog.at_level(logging.ERROR, logger="searchengine.cluster"):
            assert write(MERGE_FACTOR - 1) == MERGE_FACTOR - 1, "the write is acknowledged"
        (failed,) = [record for record in caplog.records if record.name == "searchengine.cluster"]
        assert failed.getMessage() == f"merging shard 0 copy at {copy.folder} after write {MERGE_FACTOR - 1} failed"
        assert failed.exc_info is not None and "is missing" in str(failed.exc_info[1])
        status = copy.status()
        assert (status["sequence"], status["documents"], status["segments"]) == (
            MERGE_FACTOR - 1, 20 + MERGE_FACTOR - 1, MERGE_FACTOR,
        )  # fmt: skip
        for mode in ("keyword", "dense"):
            found = copy.reader.search_batch([f"a rocket to the moon number {MERGE_FACTOR - 1}"], k=1, mode=mode)
            assert found[0][0].external_id == f"new-{MERGE_FACTOR - 1}"
        older = copy.documents([Condition("external_id", "in", ("doc-0", "new-1"))])
        assert sorted(document.external_id for document in older) == ["doc-0", "new-1"]
        for segment in segments:
            (aside / segment.name).rename(segment)
        assert write(MERGE_FACTOR) == MERGE_FACTOR
        assert copy.status()["segments"] < MERGE_FACTOR, "the next write merged"
    finally:
        copy.reader.close()
