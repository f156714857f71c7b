"""searchengine: semantic search with trained sentence encoders, whitening-k, FAISS and SQLite.

The public names load on first use (PEP 562), so `searchengine --help` does not wait for PyTorch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_PUBLIC = {
    "Cluster": "searchengine.clustering",
    "CrossEncoder": "searchengine.cross_encoder",
    "Document": "indexer.store",
    "Encoder": "searchengine.encoder",
    "EncoderSpeed": "searchengine.encoder",
    "Hit": "searchengine.search",
    "IndexInfo": "searchengine.engine",
    "IndexingReport": "searchengine.indexing",
    "Pair": "searchengine.paraphrase_mining",
    "ScoredPair": "searchengine.paraphrase_mining",
    "SearchEngine": "searchengine.engine",
    "SearchEngineError": "searchengine.errors",
    "mine_vectors": "searchengine.paraphrase_mining",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from indexer.store import Document
    from searchengine.clustering import Cluster
    from searchengine.cross_encoder import CrossEncoder
    from searchengine.encoder import Encoder, EncoderSpeed
    from searchengine.engine import IndexInfo, SearchEngine
    from searchengine.errors import SearchEngineError
    from searchengine.indexing import IndexingReport
    from searchengine.paraphrase_mining import Pair, ScoredPair, mine_vectors
    from searchengine.search import Hit


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'searchengine' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
