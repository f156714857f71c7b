"""The analysis calls of `SearchEngine` over the stored vectors (cluster and the stored clustering, mine and dedupe
similar pairs): a part of the facade of their own, so engine/search_engine.py stays a short list of what the engine
does. The work is the IndexReader's (clustering, mine) and the IndexWriter's (cluster, dedupe)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchengine.analysis.cluster_settings import ClusterMethod, ClusterSettings
from searchengine.analysis.mining_request import MiningMethod

if TYPE_CHECKING:
    from searchengine.analysis.clustering import Cluster, Clustering
    from searchengine.analysis.paraphrase_mining import Pair
    from searchengine.engine.index_reader import IndexReader
    from searchengine.engine.index_writer import IndexWriter


class AnalysisCalls:
    """Cluster, mine and dedupe an index's stored vectors; a SearchEngine has them (it is one of its parts)."""

    reader: IndexReader
    writer: IndexWriter

    def cluster(
        self,
        method: ClusterMethod = "kmeans",
        *,
        k: int | None = None,
        threshold: float | None = None,
        min_size: int | None = None,
        seed: int = 0,
        top: int = 3,
    ) -> list[Cluster]:
        """Cluster the stored vectors and store the clustering with the index (IndexWriter.cluster says how)."""
        return self.writer.cluster(ClusterSettings(method, k, threshold, min_size, seed), top)

    def clustering(self, top: int = 3) -> Clustering | None:
        """The clustering stored with the index, with each cluster's `top` most central texts; None if none."""
        return self.reader.clustering(top)

    def mine(
        self,
        top: int | None = None,
        threshold: float | None = None,
        method: MiningMethod = "auto",
        neighbours: int | None = None,
    ) -> list[Pair]:
        """The most similar pairs of documents in the index, best first, from the stored vectors (IndexReader.mine)."""
        return self.reader.mine(top, threshold, method, neighbours)

    def dedupe(self, threshold: float, method: MiningMethod = "auto", neighbours: int | None = None) -> list[Pair]:
        """Mark near-duplicates (cosine >= threshold; IndexWriter.dedupe): a pair each, `second_id` of `first_id`."""
        from searchengine.analysis.paraphrase_mining import with_texts  # the analysis code: not what a query needs

        return with_texts(self.writer.dedupe(threshold, method, neighbours), self.reader.store)
