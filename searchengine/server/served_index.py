"""One index directory as the server holds it: batching reader threads and a serial writer thread sharing one
loaded model."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path

from searchengine.encoding.encoder import Encoder, EncoderSpeed
from searchengine.engine.search_engine import SearchEngine
from searchengine.errors import SearchEngineError
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.tables.wal_upkeep import empty_log
from searchengine.server.metrics import IndexGauges
from searchengine.server.reader import BatchingReader
from searchengine.server.writer import SerialWriter


class ServedIndex:
    """Opens the index (and loads its model and any rerankers) once; `close` stops its threads."""

    def __init__(
        self,
        path: Path,
        *,
        speed: EncoderSpeed | None = None,
        encoder: Encoder | None = None,
        rerank: Sequence[str] = (),
        max_batch: int = 64,
        embedding_models: Sequence[str] = (),
        readers: int = 1,
        open_engine: Callable[[], SearchEngine] | None = None,
    ) -> None:
        """Raises SearchEngineError when there is no index at `path` or a model cannot be loaded.

        encoder: an already loaded Encoder (then `speed` is ignored); rerank: cross-encoders requests may ask for,
        loaded now so the first such request does not wait and a bad name fails at start; embedding_models: models
        /v1/embeddings answers with besides the index's own, loaded now for the same reasons; readers: threads
        answering searches at once (BatchingReader); open_engine: what the readers and the writer search and write
        through instead of a SearchEngine of `path`: an object with the SearchEngine methods the routes call (the
        cluster's ingress passes searchengine.server.cluster.cluster_engine.ClusterEngine)."""
        self._local = open_engine is None
        self.rerank = tuple(rerank)
        self.embedders: dict[str, Encoder] = {
            name: Encoder(name, **(speed or EncoderSpeed()).options()) for name in dict.fromkeys(embedding_models)
        }
        """Each model named with --embedding-model, by the name it was given."""

        def open_local() -> SearchEngine:
            engine = SearchEngine.open(path, encoder=encoder, speed=speed)
            engine.encoder  # noqa: B018 (loaded now, so the other readers and the writer share it)
            for model in self.rerank:
                engine.cross_encoder(model)
            return engine

        self.reader = BatchingReader(open_engine or open_local, max_batch, readers)
        self.reader.start()
        self.path, self.encoder = self.reader.run(lambda engine: (engine.path, engine.encoder)).result()
        self.writer = SerialWriter(open_engine or (lambda: SearchEngine(self.path, self.encoder)))

    def gauges(self) -> Future[IndexGauges]:
        """What the index holds as of the reader's generation, and the writes and searches queued now."""

        def read(engine: SearchEngine) -> IndexGauges:
            info = engine.info()
            return IndexGauges(info.documents, info.vectors, info.shards, self.writer.queued, self.reader.queued)

        return self.reader.run(read)

    def close(self) -> None:
        """Stop the writer and the readers, then fold SQLite's log into the store (indexer/tables/wal_upkeep.py)."""
        self.writer.close()
        self.reader.close()
        if not self._local:
            return
        directory = IndexDirectory(self.path)
        with contextlib.suppress(SearchEngineError, OSError):  # an index removed or damaged meanwhile
            store = directory.file(directory.read_settings(), "documents")
            if store is not None:
                empty_log(store)
