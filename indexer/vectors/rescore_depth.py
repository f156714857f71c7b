"""How many candidates a query rescores from a segment's originals by default: constants of their own, so that
`query --help` shows them without importing NumPy (the CLI's help loads no numeric code)."""

import re

DEFAULT_RESCORE = 100
"""Candidates per query a segment with originals takes from its codes and rescores exactly, unless told otherwise
(`--rescore`). On 25,000 real MiniLM vectors (benchmarks/storage/results/rescoring.json) SQ8 and HNSW32,SQ8 reach
their best recall@10 by 20 (1.0, and HNSW32's own 0.996), and binary LSH still gains at 200 (0.83 at 100, 0.91 at
200: ask for more there); 100 costs a fraction of a millisecond more than 20."""
PRODUCT_QUANTIZATION_RESCORE = 300
"""The same for product-quantized codes (IVF…,PQ…), which rank less finely: on 200,000 real MiniLM vectors and noisy
copies (benchmarks/storage/results/ivf_pq_settings_200k.json) IVF1024,PQ96x4fs searching half its lists reached
recall@10 0.975 with 300 rescored and 0.976 with 1,000, whose deeper fast-scan search cost several times more."""
_PRODUCT_QUANTIZED = re.compile(r"PQ\d")


def default_rescore(factory: str) -> int:
    """Candidates a segment of FAISS type `factory` rescores from its originals unless a query says otherwise."""
    return PRODUCT_QUANTIZATION_RESCORE if _PRODUCT_QUANTIZED.search(factory) else DEFAULT_RESCORE
