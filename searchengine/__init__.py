"""searchengine: semantic search with trained sentence encoders, whitening-k, FAISS and SQLite.

The public names load on first use (PEP 562), so `searchengine --help` does not wait for PyTorch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_PUBLIC = {
    "BuildSettings": "searchengine.engine.build_settings",
    "Client": "searchengine.server.client",
    "Cluster": "searchengine.analysis.clustering",
    "CrossEncoder": "searchengine.encoding.cross_encoder",
    "Document": "searchengine.indexer.tables.store",
    "Encoder": "searchengine.encoding.encoder",
    "EncoderSpeed": "searchengine.encoding.encoder",
    "Hit": "searchengine.engine.search",
    "IndexInfo": "searchengine.engine.index_info",
    "IndexingReport": "searchengine.engine.indexing_report",
    "Pair": "searchengine.analysis.paraphrase_mining",
    "ScoredPair": "searchengine.analysis.paraphrase_mining",
    "SearchEngine": "searchengine.engine.search_engine",
    "SearchEngineError": "searchengine.errors",
    "mine_vectors": "searchengine.analysis.paraphrase_mining",
}
__all__ = sorted(_PUBLIC)

if TYPE_CHECKING:
    from searchengine.analysis.clustering import Cluster
    from searchengine.analysis.paraphrase_mining import Pair, ScoredPair, mine_vectors
    from searchengine.encoding.cross_encoder import CrossEncoder
    from searchengine.encoding.encoder import Encoder, EncoderSpeed
    from searchengine.engine.build_settings import BuildSettings
    from searchengine.engine.index_info import IndexInfo
    from searchengine.engine.indexing_report import IndexingReport
    from searchengine.engine.search import Hit
    from searchengine.engine.search_engine import SearchEngine
    from searchengine.errors import SearchEngineError
    from searchengine.indexer.tables.store import Document
    from searchengine.server.client import Client


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the installed distribution's version: pyproject.toml is its one source
        from importlib.metadata import version

        return version("searchengine")
    if name not in _PUBLIC:
        raise AttributeError(f"module 'searchengine' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
