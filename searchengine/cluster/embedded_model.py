"""The model that embedded a cluster build's vectors, as an index's manifest records it: a shard copy builds its
index with it, so the copy never loads the model (nor torch) to store vectors a worker made."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from searchengine.encoding.model_source import ModelSource

if TYPE_CHECKING:
    from searchengine.encoding.encoder import Encoder


@dataclass(frozen=True)
class EmbeddedModel:
    """What engine.indexing.build_index reads of an encoder whose vectors come with the documents: the model's
    identity (engine.manifest_record.model_identity) and how many texts it cut (none here: the workers count
    theirs)."""

    source: ModelSource
    fingerprint: str
    dimension: int
    max_seq_length: int
    truncated: int = 0

    @classmethod
    def of(cls, encoder: Encoder) -> EmbeddedModel:
        return cls(encoder.source, encoder.fingerprint, encoder.dimension, encoder.max_seq_length)
