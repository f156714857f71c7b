"""Which shard a document belongs to: a stable hash of its external id (BLAKE2b, the same in every process and
every Python, unlike hash()), so an upsert or a delete of a document touches one shard."""

from __future__ import annotations

import hashlib


def shard_of(external_id: str, shards: int) -> int:
    """The shard (0..shards-1) that holds the document with `external_id`."""
    digest = hashlib.blake2b(external_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def global_id(local_id: int, shard: int, shards: int) -> int:
    """A document's id in the cluster: its id in its shard's index, interleaved with the shard's number, so ids are
    unique over the cluster and name their shard (`shard_of_id`)."""
    return local_id * shards + shard


def shard_of_id(document_id: int, shards: int) -> tuple[int, int]:
    """(shard, id in that shard's index) of a cluster document id (`global_id`)."""
    return document_id % shards, document_id // shards
