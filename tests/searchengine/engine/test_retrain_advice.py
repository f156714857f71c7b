"""When `info` and `compact` advise `compact --retrain`: for product-quantized types once the vectors added since
training decode with RETRAIN_ERROR_RATIO times the training error (benchmarks/storage/drift.py), never for other
types, and whenever the memory budget calls for another type than the template's."""

from __future__ import annotations

from searchengine.indexer.vectors.template import RETRAIN_ERROR_RATIO, TemplateRecord

from searchengine.engine.retrain_advice import template_state


def record(factory: str, ratio: float | None) -> TemplateRecord:
    """A template trained on 1,000 vectors of error 0.5, with 100 added since whose mean error is `ratio` × that."""
    measured = 0 if ratio is None else 100
    return TemplateRecord("template.1.faiss", factory, 10, "sha256:" + "0" * 64, 1000, 0.5, 1000, 100,
                          0.0 if ratio is None else 0.5 * ratio * measured, measured)


def test_a_pq_template_is_advised_a_retrain_from_the_measured_ratio_only() -> None:
    drifted = template_state(record("IVF64,PQ48x4", RETRAIN_ERROR_RATIO + 0.05), 1100)
    assert drifted.retrain_advised and "`searchengine compact --retrain` is worth it" in drifted.summary()
    assert "100 vectors (9%) added since" in drifted.summary()
    same = template_state(record("IVF64,PQ48x4", 1.05), 1100)
    assert not same.retrain_advised and "a retrain pays from" in same.summary()
    assert same.as_json()["error_ratio"] == 1.05 and same.as_json()["retrain_advised"] is False


def test_other_types_show_their_ratio_without_advice() -> None:
    sq8 = template_state(record("SQ8", 4.0), 1100)
    assert not sq8.retrain_advised and "measured for PQ types only" in sq8.summary()
    lsh = template_state(record("LSH", None), 1100)
    assert lsh.error_ratio is None and "quantization error" not in lsh.summary()


def test_an_opq_rotation_is_advised_only_before_product_quantization() -> None:
    assert not template_state(record("OPQ16,Flat", 4.0), 1100).retrain_advised  # exact vectors: no error to compare
    assert not template_state(record("OPQ16,IVF256,Flat", 4.0), 1100).advisable
    assert template_state(record("OPQ16,IVF256,PQ16", RETRAIN_ERROR_RATIO + 0.05), 1100).retrain_advised


def test_the_budget_calling_for_another_type_is_said() -> None:
    grown = template_state(record("IVF64,PQ48np", 1.0), 1100, "IVF256,PQ48np")
    assert "the memory budget calls for IVF256,PQ48np at this size" in grown.summary()
    assert template_state(record("IVF64,PQ48np", 1.0), 1100, "IVF64,PQ48np").budget_type is None
    assert template_state(None, 1100) is None


def test_a_budget_calling_for_an_exact_type_sends_no_one_to_a_retrain_that_refuses_it() -> None:
    """Deleting all but 10 of 20,000 vectors left the budget calling for Flat, which `compact --retrain` refuses."""
    shrunk = template_state(record("IVF512,PQ8x4fs", 1.0), 10, "Flat")
    assert shrunk.budget_type is None and "--retrain` moves" not in shrunk.summary()
    assert template_state(record("IVF64,PQ48np", 1.0), 60_000, "HNSW32,SQ8").budget_type == "HNSW32,SQ8"
