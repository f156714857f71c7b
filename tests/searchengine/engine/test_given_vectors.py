"""Vectors in and out, and chroma-style keyword arguments: SearchEngine.add(ids=, documents=, metadatas=,
embeddings=), upsert, get and search_by_vector, on the tiny model (and a whitened index)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from searchengine import BuildSettings, Document, SearchEngine, SearchEngineError
from searchengine.encoding.encoder import Encoder
from tests.conftest import SENTENCES


def test_add_with_own_vectors_stores_them_without_embedding(tmp_path: Path, tiny_encoder: Encoder) -> None:
    SearchEngine.create(tmp_path / "i", encoder=tiny_encoder).close()
    with SearchEngine.open(tmp_path / "i") as engine:
        given = np.random.default_rng(0).standard_normal((len(SENTENCES), 32)).astype(np.float32)  # no model's
        report = engine.add(ids=[f"s{n}" for n in range(len(SENTENCES))], documents=SENTENCES, embeddings=given)
        assert (report.added, report.vectors) == (len(SENTENCES), len(SENTENCES))
        assert engine.reader.encoders.loaded is None  # the model was never loaded: nothing was embedded
        assert engine.search_by_vector(given[0], k=1)[0].external_id == "s0"
        assert engine.reader.encoders.loaded is None
        ids, stored = next(engine.stored_vectors())
        unit = given / np.linalg.norm(given, axis=1, keepdims=True)
        np.testing.assert_allclose(stored[np.argsort(ids)], unit, atol=1e-6)  # as given, only normalised
        hit = engine.search_by_vector(given[3], k=1)[0]
        assert (hit.external_id, hit.text) == ("s3", SENTENCES[3])
        assert hit.score == pytest.approx(1.0, abs=1e-5)
        # the text is still stored for keyword search and snippets
        assert engine.search("piano", k=1, mode="keyword")[0].external_id == "s9"
        assert "piano" in engine.search("piano", k=1, mode="keyword")[0].snippet()


def test_search_by_vector_equals_a_dense_search_and_takes_filters(tmp_path: Path, tiny_encoder: Encoder) -> None:
    given = [Document(text, metadata={"n": n}, external_id=f"s{n}") for n, text in enumerate(SENTENCES)]
    with SearchEngine.build(given, tmp_path / "i", encoder=tiny_encoder) as engine:
        by_text = engine.search("a cat on a mat", k=4, mode="dense")
        by_vector = engine.search_by_vector(engine.encode(["a cat on a mat"])[0], k=4)
        assert [hit.id for hit in by_vector] == [hit.id for hit in by_text]
        assert [hit.score for hit in by_vector] == pytest.approx([hit.score for hit in by_text], abs=1e-5)
        filtered = engine.search_by_vector(engine.encode(["a cat on a mat"])[0].tolist(), k=3, where=["n>=6"])
        assert len(filtered) == 3 and all(hit.metadata["n"] >= 6 for hit in filtered)


def test_a_whitened_index_takes_vectors_in_its_own_space(tmp_path: Path, tiny_encoder: Encoder) -> None:
    texts = SENTENCES * 3
    settings = BuildSettings(whiten_k=8)
    with SearchEngine.build(texts, tmp_path / "i", settings, encoder=tiny_encoder) as engine:
        assert engine.encode(["x"]).shape[1] == 8
        with pytest.raises(SearchEngineError, match=r"the vector has 32 numbers, but this index's vectors have 8: make it with"):
            engine.search_by_vector(tiny_encoder.encode(["a cat"])[0], k=1)
        own = engine.encode(["a new text about the cat"])
        engine.add(ids=["new"], documents=["a new text about the cat"], embeddings=own)
        hit = engine.search_by_vector(own[0], k=1)[0]
        assert hit.external_id == "new" and hit.score == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(
    ("embeddings", "message"),
    [
        ([[0.1] * 32], r"1 embeddings for 2 documents"),
        ([[0.1] * 31, [0.1] * 31], r"have 31 numbers each, but this index's vectors have 32"),
        ([[float("nan")] * 32, [0.1] * 32], r"NaN or an infinity"),
        ([[0.0] * 32, [0.1] * 32], r"vector of zeros"),
        ([[0.1] * 32, [0.1] * 5], r"lists of numbers of the same length"),
        ([0.1] * 32, r"2-D"),
    ],
)
def test_bad_embeddings_are_refused_and_nothing_is_written(
    tmp_path: Path, tiny_encoder: Encoder, embeddings: object, message: str
) -> None:
    with SearchEngine.build(["one text"], tmp_path / "i", encoder=tiny_encoder) as engine:
        with pytest.raises(SearchEngineError, match=message):
            engine.add(documents=["a", "b"], embeddings=embeddings)
        assert len(engine) == 1


def test_chroma_style_add_upsert_and_get(tmp_path: Path, tiny_encoder: Encoder) -> None:
    with SearchEngine.create(tmp_path / "i", encoder=tiny_encoder) as engine:
        engine.add(ids=["a", "b", "c"], documents=["the cat", "the dog", "the bird"], metadatas=[{"n": 1}, None, {"n": 3}])
        assert [d.external_id for d in engine.get(ids=["c", "missing", "a"])] == ["c", "a"]
        assert engine.get(ids=["b"])[0] == Document("the dog", external_id="b")
        assert [d.external_id for d in engine.get(where={"n": 3})] == ["c"]
        assert [d.external_id for d in engine.get(ids=["a", "c"], where=["n>=2"])] == ["c"]
        engine.upsert(ids=["a"], documents=["the cat sat"], metadatas=[{"n": 9}])
        assert engine.get(ids=["a"]) == [Document("the cat sat", metadata={"n": 9}, external_id="a")]
        assert len(engine) == 3
        with pytest.raises(SearchEngineError, match="say which documents to get"):
            engine.get()
        with pytest.raises(SearchEngineError, match="not the string"):
            engine.get(ids="a")
        with pytest.raises(SearchEngineError, match="external id 1 is 1, not a str"):
            engine.get(ids=[1])  # was read as "1", an id a delete refuses
        assert [d.external_id for d in engine.get(ids=(name for name in ["b", "a"]))] == ["b", "a"]
        with pytest.raises(SearchEngineError, match="2 documents, 1 ids and 2 metadatas"):
            engine.add(ids=["x"], documents=["p", "q"], metadatas=[{}, {}])
        with pytest.raises(SearchEngineError, match="not both"):
            engine.add(["text"], documents=["p"])
        with pytest.raises(SearchEngineError, match="give ids"):
            engine.upsert(None, ["p"])
        with pytest.raises(SearchEngineError, match="documents must be a list"):
            engine.add(documents="one text")
        with pytest.raises(SearchEngineError, match="is '  ', not a text"):
            engine.add(documents=["ok", "  "])
        assert len(engine) == 3


def test_one_vector_is_refused_in_the_singular_and_many_in_the_plural() -> None:
    """A search vector's refusals read as sentences about one vector ("the vector have 3 numbers each" before)."""
    from searchengine.engine.given_vectors import given_vector, given_vectors

    for vector, said in (
        ([0.5] * 3, "the vector has 3 numbers, but this index's vectors have 4: make it with the index's model"),
        ([0.5, float("nan"), 0.5, 0.5], "the vector holds a NaN or an infinity"),
        ([0.0] * 4, "the vector is all zeros, which has no direction"),
    ):
        with pytest.raises(SearchEngineError, match=re.escape(said)):
            given_vector(vector, 4)
    with pytest.raises(SearchEngineError, match=re.escape("embeddings have 3 numbers each, but this index's vectors have 4")):
        given_vectors([[0.5] * 3] * 2, 4)


@pytest.mark.parametrize("scale", [1e19, 1e30, 1e-30])
def test_a_vector_of_very_large_or_very_small_numbers_keeps_its_direction(
    tmp_path: Path, tiny_encoder: Encoder, scale: float
) -> None:
    """Finite float32 numbers whose squares overflow (1e19) or underflow (1e-30): the first was stored as a vector of
    zeros, which every query scores 0, and the second was refused as all zeros."""
    from searchengine.engine.given_vectors import given_vector

    direction = np.random.default_rng(1).standard_normal(32).astype(np.float32)
    unit = direction / np.linalg.norm(direction)
    given = (direction.astype(np.float64) * scale).tolist()
    with SearchEngine.create(tmp_path / "i", encoder=tiny_encoder) as engine:
        engine.add(ids=["far"], documents=["a far vector"], embeddings=[given])
        _, stored = next(engine.stored_vectors())
        np.testing.assert_allclose(stored[0], unit, atol=1e-6)
        assert engine.search_by_vector(given, k=1)[0].score == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(given_vector(given, 32)[0], unit, atol=1e-6)


def test_numbers_beyond_float32_and_complex_numbers_are_refused_in_one_line() -> None:
    from searchengine.engine.given_vectors import given_vector, given_vectors

    with pytest.raises(SearchEngineError, match=re.escape("a NaN or an infinity (or a number beyond float32's 3.4e38)")):
        given_vector([1e300] * 4, 4)
    with pytest.raises(SearchEngineError, match="embeddings must be real numbers, not complex ones"):
        given_vectors(np.ones((1, 4), dtype=np.complex64), 4)  # float32 dropped the imaginary parts, with a warning
    with pytest.raises(SearchEngineError, match="the vector must be real numbers, not complex ones"):
        given_vector(np.array([1j, 1, 0, 0]), 4)  # a search's vector: cast to float32 before given_vectors looked


def test_lists_of_complex_scalars_and_integers_beyond_any_float_are_refused_in_one_line() -> None:
    """A list of numpy's complex scalars was cast with a warning only (its imaginary parts dropped: the vector
    stored was another one), and an integer beyond float64 (a JSON body may hold one) raised numpy's OverflowError."""
    from searchengine.engine.given_vectors import given_vector, given_vectors

    with pytest.raises(SearchEngineError, match="embeddings must be real numbers, not complex ones"):
        given_vectors([[np.complex128(1 + 2j), np.complex128(1), 0, 0]], 4)
    with pytest.raises(SearchEngineError, match="the vector must be real numbers, not complex ones"):
        given_vector([1j, 1, 0, 0], 4)
    with pytest.raises(SearchEngineError, match=re.escape("embeddings hold a number beyond float32's 3.4e38")):
        given_vectors([[10**400, 1, 0, 0]], 4)
    with pytest.raises(SearchEngineError, match=re.escape("the vector holds a number beyond float32's 3.4e38")):
        given_vector([10**400, 1, 0, 0], 4)
    np.testing.assert_allclose(given_vectors([[2**70, 0, 0, 0]], 4), [[1, 0, 0, 0]])  # within range: kept
