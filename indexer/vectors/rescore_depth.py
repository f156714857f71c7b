"""How many candidates a query rescores from a segment's originals by default: constants of their own, so that
`query --help` shows them without importing NumPy (the CLI's help loads no numeric code)."""

from searchengine.indexer.vectors.factory_codes import is_product_quantized

DEFAULT_RESCORE = 100
"""Candidates per query a segment with originals takes from its codes and rescores exactly, unless told otherwise
(`--rescore`). On 25,000 real MiniLM vectors (benchmarks/storage/results/rescoring.json) SQ8 and HNSW32,SQ8 reach
their best recall@10 by 20 (1.0, and HNSW32's own 0.996), and binary LSH still gains at 200 (0.83 at 100, 0.91 at
200: ask for more there); 100 costs a fraction of a millisecond more than 20."""
PRODUCT_QUANTIZATION_RESCORE = 300
"""The same for product-quantized codes (IVF…,PQ…), which rank less finely: on 200,000 real MiniLM vectors and noisy
copies (benchmarks/storage/results/ivf_pq_settings_200k.json) IVF1024,PQ96x4fs searching half its lists reached
recall@10 0.975 with 300 rescored and 0.976 with 1,000, whose deeper fast-scan search cost several times more."""
LARGE_PRODUCT_QUANTIZATION_RESCORE = 1_000
"""The most a product-quantized segment rescores by default: its depth grows with the segment, one candidate per
VECTORS_PER_RESCORED vectors, from PRODUCT_QUANTIZATION_RESCORE (up to 3M vectors) to this (from 10M). The more
vectors, the more of them lie closer to a query than 4-bit codes can tell apart. On 10M vectors (the real MiniLM
vectors and noisy copies, IVF8192,PQ96x4fs probing a fifth of its lists, STS-B queries;
benchmarks/storage/results/memory_check_10m_rescore_2m_codes.json) 300 rescored reached recall@10 0.894 (0.972 on the
real vectors alone), 600 0.951 (0.973) and 1,000 0.967 (0.973), at p50 11.9, 11.5 and 12.2 ms; at 2M, 300 reached
0.978 (0.983: memory_check_2m.json). Between 3M and 10M the depth is interpolated, not measured."""
VECTORS_PER_RESCORED = 10_000


def default_rescore(factory: str, count: int) -> int:
    """Candidates a segment of FAISS type `factory` holding `count` vectors rescores from its originals unless a query
    says otherwise."""
    if not is_product_quantized(factory):
        return DEFAULT_RESCORE
    return min(LARGE_PRODUCT_QUANTIZATION_RESCORE, max(PRODUCT_QUANTIZATION_RESCORE, count // VECTORS_PER_RESCORED))
