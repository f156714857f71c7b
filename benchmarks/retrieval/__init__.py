"""Retrieval benchmarks: quality and query time of the search modes, fusion, reranking and passages."""
