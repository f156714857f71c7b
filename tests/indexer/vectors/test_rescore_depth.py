from searchengine.indexer.vectors.rescore_depth import (
    DEFAULT_RESCORE,
    LARGE_PRODUCT_QUANTIZATION_RESCORE,
    PRODUCT_QUANTIZATION_RESCORE,
    default_rescore,
)


def test_codes_other_than_product_quantization_rescore_the_same_depth_at_any_size() -> None:
    for factory in ("HNSW32,SQ8", "SQ8", "LSH", "IVF1024,SQ8"):
        assert default_rescore(factory, 1_000) == default_rescore(factory, 50_000_000) == DEFAULT_RESCORE


def test_product_quantized_segments_rescore_deeper_as_they_grow_up_to_a_bound() -> None:
    factory = "IVF8192,PQ96x4fs"
    assert default_rescore(factory, 1_000) == default_rescore(factory, 2_000_000) == PRODUCT_QUANTIZATION_RESCORE
    assert PRODUCT_QUANTIZATION_RESCORE < default_rescore(factory, 5_000_000) < LARGE_PRODUCT_QUANTIZATION_RESCORE
    assert default_rescore(factory, 10_000_000) == default_rescore(factory, 100_000_000) == 1_000
    assert default_rescore("IVF1024,PQ48np", 10_000_000) == 1_000


def test_an_opq_rotation_counts_as_product_quantization_only_before_pq_codes() -> None:
    for exact in ("OPQ16,Flat", "OPQ16,HNSW32", "OPQ16_64,IVF256,Flat"):  # rotated (or projected) floats, not codes
        assert default_rescore(exact, 5_000_000) == DEFAULT_RESCORE, exact
    for product in ("OPQ16,IVF256,PQ16", "HNSW32_PQ16", "PQ16x4fs"):
        assert default_rescore(product, 1_000) == PRODUCT_QUANTIZATION_RESCORE, product
