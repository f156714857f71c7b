"""A shard copy's writes in this process, without Ray (ShardCopy is a plain class): each commits through the index's
own protocol and the copy's reader moves on to it, and the copy merges its segments as one index's add does."""

from __future__ import annotations

from pathlib import Path

from searchengine.indexer.commit.merge_policy import MERGE_FACTOR
from searchengine.indexer.tables.documents import Document

from searchengine.cluster.embedded_model import EmbeddedModel
from searchengine.cluster.shard_copy import ShardCopy
from searchengine.encoding.encoder import Encoder
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
            assert copy.apply(number, added, tiny_encoder.encode([added[0].text]), []) == number
            assert copy.status()["documents"] == 20 + number
        assert copy.apply(MERGE_FACTOR + 2, [], None, ["doc-3", "new-1"]) == MERGE_FACTOR + 2
        assert copy.reader.store is store  # each write reloaded through the connection the reader holds
        status = copy.status()
        assert status["documents"] == 20 + MERGE_FACTOR - 1 and status["sequence"] == MERGE_FACTOR + 2
        assert status["segments"] < MERGE_FACTOR + 1  # unmerged: the build's segment and one per write
        texts = [hit.text for hit in copy.reader.search_batch(["a rocket to the moon number 5"], k=3, mode="keyword")[0]]
        assert texts[0] == "a rocket to the moon number 5" and "a rocket to the moon number 1" not in texts
    finally:
        copy.reader.close()
