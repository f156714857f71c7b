"""The sparsest graphs FAISS can build: a factory string whose HNSW or NSG graph gives each node too few
neighbours is refused before FAISS is asked, because FAISS then takes the whole process down rather than raising."""

from __future__ import annotations

import re

from searchengine.indexer.errors import IndexerError

SMALLEST_GRAPH_DEGREE = {"HNSW": 2, "NSG": 4}
"""The fewest neighbours a graph's factory string may give each node: below these FAISS 1.15 aborts the process
(HNSW0), crashes it (HNSW1, also as an IVF's quantizer "IVF4_HNSW1") or did not finish the build in 20 s (NSG1 and
NSG2 on 300 vectors of 32 dimensions, NSG3 on 300 of 16), where HNSW2 and NSG4 built and searched at once."""
_GRAPH_DEGREE = re.compile(r"(?<![A-Za-z])(HNSW|NSG)(\d+)")


def check_graph_degree(factory: str) -> None:
    """Refuse a graph of fewer neighbours a node than FAISS can build (SMALLEST_GRAPH_DEGREE): an IndexerError
    naming it, where FAISS would crash or hang the process."""
    for graph, degree in _GRAPH_DEGREE.findall(factory):
        if int(degree) < SMALLEST_GRAPH_DEGREE[graph]:
            raise IndexerError(
                f"index type {factory!r} gives {graph} graph nodes {int(degree)} neighbours, which FAISS cannot "
                f"build: use at least {graph}{SMALLEST_GRAPH_DEGREE[graph]} (e.g. HNSW32)"
            )
