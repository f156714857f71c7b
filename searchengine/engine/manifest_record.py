"""What a manifest records of how an index was made: the model (enough to reload it and tell another apart) and the
versions of the libraries that built it."""

from __future__ import annotations

import functools
from importlib.metadata import version
from typing import TYPE_CHECKING

import faiss

from searchengine.indexer.commit.manifest import ModelIdentity, PromptRecord

if TYPE_CHECKING:
    from searchengine.encoding.encoder import Encoder


def library_versions() -> dict[str, str]:
    """The versions a manifest records: what built the index and what encodes its queries (torch's and
    transformers' from their installed metadata, so that a write embedding without them does not import them)."""
    return {
        "searchengine": _package_version("searchengine"),
        "faiss": faiss.__version__,
        "torch": _package_version("torch"),
        "transformers": _package_version("transformers"),
    }


@functools.cache
def _package_version(distribution: str) -> str:
    """An installed distribution's version, read once a process: importlib.metadata parses the installed metadata
    each time (2 ms, at every commit of a one-document add), and the code running is the code loaded at the start
    anyway."""
    return version(distribution)


def model_identity(encoder: Encoder) -> ModelIdentity:
    """How the manifest names a model: enough to reload it and to tell a different one apart."""
    source = encoder.source
    return ModelIdentity(
        name=source.name,
        spec=source.spec,
        fingerprint=encoder.fingerprint,
        pooling=source.pooling,
        normalize=source.normalize,
        dimension=encoder.dimension,
        max_seq_length=encoder.max_seq_length,
        prompt=None if source.prompt is None else PromptRecord(source.prompt.template, source.prompt.denoise),
        transforms=tuple(f"{kind.rsplit('.', 1)[-1]} ({folder.name})" for kind, folder in source.transforms),
    )
