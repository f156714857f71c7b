"""searchengine: semantic search with trained sentence encoders, whitening-k, FAISS and SQLite."""

from searchengine.encoder import Encoder
from searchengine.engine import IndexInfo, SearchEngine
from searchengine.errors import SearchEngineError
from searchengine.indexing import IndexingReport
from searchengine.search import Hit

__all__ = ["Encoder", "Hit", "IndexInfo", "IndexingReport", "SearchEngine", "SearchEngineError"]
