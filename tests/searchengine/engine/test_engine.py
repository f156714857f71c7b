"""The Python API end to end on the tiny model: build, open, search, add, and every bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from searchengine.indexer.errors import IndexerError

from searchengine import BuildSettings, SearchEngine, SearchEngineError
from searchengine.encoding.encoder import Encoder
from searchengine.encoding.speed import EncoderSpeed
from tests.format_one import downgrade_to_format_1

FP32 = EncoderSpeed(precision="fp32")
"""What the tests' encoders run; `auto` is bf16 on a CPU with AMX, whose scores differ in the third decimal."""


@pytest.fixture
def engine(tmp_path: Path, tiny_encoder: Encoder, sentences: list[str]) -> SearchEngine:
    return SearchEngine.build(sentences, tmp_path / "index", encoder=tiny_encoder)


def _all_results(engine: SearchEngine, queries: list[str], k: int = 5) -> list[list[tuple[int, float]]]:
    return [[(hit.id, round(hit.score, 5)) for hit in hits] for hits in engine.search_batch(queries, k)]


def _assert_same_results(after: list[list[tuple[int, float]]], before: list[list[tuple[int, float]]]) -> None:
    """Same documents in the same order, same scores to float rounding (a reopened index encodes queries through
    the cached ONNX export without torch, searchengine.encoding.onnx_query_encoder)."""
    assert [[id_ for id_, _ in hits] for hits in after] == [[id_ for id_, _ in hits] for hits in before]
    assert np.allclose([[s for _, s in hits] for hits in after], [[s for _, s in hits] for hits in before], atol=2e-5)


def test_each_text_finds_itself_first(engine: SearchEngine, sentences: list[str]) -> None:
    for hits, sentence in zip(engine.search_batch(sentences, k=3, mode="dense"), sentences):
        assert hits[0].text == sentence
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)
        assert len(hits) == 3 and hits[0].score >= hits[1].score >= hits[2].score


def test_search_equals_search_batch_and_hits_are_typed(engine: SearchEngine, sentences: list[str]) -> None:
    single = engine.search(sentences[3], k=4)
    assert single == engine.search_batch([sentences[3]], k=4)[0]
    assert single[0].id == 3 and single[0].line == 4 and single[0].count == 1 and single[0].metadata == {}


def test_scores_are_cosine_of_encoder_vectors(
    engine: SearchEngine, tiny_encoder: Encoder, sentences: list[str]
) -> None:
    raw = tiny_encoder.encode(["a query about the moon", sentences[4]])
    expected = float(raw[0] @ raw[1] / np.linalg.norm(raw[0]) / np.linalg.norm(raw[1]))
    dense = {hit.id: hit.score for hit in engine.search("a query about the moon", k=len(sentences), mode="dense")}
    hybrid = {hit.id: hit.dense_score for hit in engine.search("a query about the moon", k=len(sentences))}
    assert dense[4] == pytest.approx(expected, abs=1e-5) and hybrid[4] == pytest.approx(expected, abs=1e-5)


def test_open_reloads_the_same_index(engine: SearchEngine, tiny_encoder: Encoder, sentences: list[str]) -> None:
    before = _all_results(engine, sentences)
    reopened = SearchEngine.open(engine.path, speed=FP32)  # auto is bf16 on a CPU with AMX; the build's was fp32
    assert reopened.encoder.fingerprint == tiny_encoder.fingerprint
    assert _all_results(reopened, sentences) == before


def test_k_larger_than_index_returns_everything(engine: SearchEngine, sentences: list[str]) -> None:
    assert len(engine.search("cat", k=1000)) == len(sentences)


def test_k_below_one_is_refused(engine: SearchEngine) -> None:
    with pytest.raises(SearchEngineError, match="k must be at least 1"):
        engine.search("cat", k=0)


@pytest.mark.parametrize("mode", ["dense", "keyword", "hybrid"])
def test_a_k_beyond_64_bits_returns_everything_in_every_mode(
    engine: SearchEngine, sentences: list[str], mode: str
) -> None:
    """SQLite's LIMIT is a 64-bit integer: keyword and hybrid search used to end in OverflowError at k = 2**63."""
    hits = engine.search("the cat", k=2**63, mode=mode)
    assert 0 < len(hits) <= len(sentences)
    assert engine.search_batch(["the cat"], k=2**64, mode=mode) == [hits]


@pytest.mark.parametrize("k", [1.5, "3", None, True, [3]])
def test_a_k_that_is_not_a_whole_number_is_a_search_engine_error(engine: SearchEngine, k: object) -> None:
    with pytest.raises(SearchEngineError, match=r"k must be a whole number of at least 1, not "):
        engine.search("cat", k=k)


def test_a_numpy_integer_k_is_a_count(engine: SearchEngine) -> None:
    assert len(engine.search("cat", k=np.int64(2))) == 2


@pytest.mark.parametrize("top", [2.5, "9", None])
def test_a_rerank_top_that_is_not_a_whole_number_is_refused(engine: SearchEngine, top: object) -> None:
    with pytest.raises(SearchEngineError, match="rerank_top must be a whole number"):
        engine.search("cat", rerank_top=top)


@pytest.mark.parametrize(
    ("where", "named"),
    [
        ([["year>=2020"]], r"not \['year>=2020'\]"),
        (["lang=en", 2020], "not 2020"),
        (2020, "not 2020"),
        ({"l"}, "not {'l'}"),
    ],
)
def test_filters_of_the_wrong_type_are_a_search_engine_error(engine: SearchEngine, where: object, named: str) -> None:
    with pytest.raises(SearchEngineError, match=named):
        engine.search("cat", where=where)
    with pytest.raises(SearchEngineError, match=named):
        engine.documents(where)


def test_identical_texts_are_documents_of_their_own_and_counted(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = SearchEngine.build(["the cat", "the dog", "the cat", " the cat "], tmp_path / "i", encoder=tiny_encoder)
    assert len(engine) == 4
    assert engine.last_report.repeats == 2
    assert engine.info().documents == 4 and engine.info().vectors == 4 and engine.info().repeats == 2
    hits = engine.search("the cat", k=3)
    assert sorted(hit.line for hit in hits) == [1, 3, 4] and {hit.count for hit in hits} == {3}
    assert len({round(hit.score, 5) for hit in hits}) == 1  # one text, encoded once, one vector per document


@pytest.mark.parametrize("text", [5, None, b"bytes"])
def test_a_document_whose_text_is_not_a_str_is_refused_before_anything_is_written(
    engine: SearchEngine, sentences: list[str], text: object
) -> None:
    from searchengine import Document

    with pytest.raises(SearchEngineError, match=f"text number 2 is a {type(text).__name__}, not a str"):
        engine.add([Document("a fine text"), Document(text)])  # type: ignore[arg-type]
    assert len(engine) == len(sentences)


@pytest.mark.parametrize("corpus", [b"the cat sat", bytearray(b"the cat sat")])
def test_bytes_given_as_the_corpus_are_refused_in_one_line(
    engine: SearchEngine, sentences: list[str], tmp_path: Path, tiny_encoder: Encoder, corpus: object
) -> None:
    """Read as a sequence, each byte was a text: 'text number 1 is a int, not a str'."""
    refused = rf"the corpus is {type(corpus).__name__}, not texts: decode it"
    with pytest.raises(SearchEngineError, match=refused):
        engine.add(corpus)  # type: ignore[arg-type]
    with pytest.raises(SearchEngineError, match=refused):
        SearchEngine.build(corpus, tmp_path / "other", encoder=tiny_encoder)  # type: ignore[arg-type]
    assert len(engine) == len(sentences)


def test_a_document_of_only_spaces_is_left_out_as_an_empty_one_is(engine: SearchEngine, sentences: list[str]) -> None:
    """Document("") was left out, as a blank text is, but Document("   ") was stored, a blank hit for every query."""
    from searchengine import Document

    report = engine.add([Document("   ", external_id="spaces"), Document("", external_id="empty"), Document("kept")])
    assert report.added == 1 and len(engine) == len(sentences) + 1
    assert engine.get(ids=["spaces", "empty"]) == []


def test_add_appends_and_counts_repeats(engine: SearchEngine, sentences: list[str]) -> None:
    report = engine.add(["a brand new text about the sun", sentences[0]])
    assert (report.added, report.repeats) == (2, 1)
    assert len(engine) == len(sentences) + 2
    assert engine.search("a brand new text about the sun", k=1)[0].id == len(sentences)
    assert len(SearchEngine.open(engine.path)) == len(sentences) + 2


def test_reports_time_by_stage(tmp_path: Path, tiny_encoder: Encoder, sentences: list[str]) -> None:
    built = SearchEngine.build(
        sentences,
        tmp_path / "i",
        BuildSettings(index="IVF2,Flat", whiten_k=8),
        encoder=tiny_encoder,
    )
    stages = built.last_report.stages
    assert list(stages) == ["reading", "storing", "encoding", "whitening", "training", "vector index", "commit"]
    assert all(seconds >= 0 for seconds in stages.values())
    assert list(built.last_report.stages_cpu) == list(stages)  # CPU seconds beside each stage's wall seconds
    assert all(seconds >= 0 for seconds in built.last_report.stages_cpu.values())
    assert sum(stages.values()) <= built.last_report.seconds
    added = built.add(["a brand new text about the sun"])
    assert set(added.stages) == {"reading", "storing", "encoding", "vector index", "commit"}
    assert sum(added.stages.values()) <= added.seconds


def test_jsonl_metadata_is_kept(tmp_path: Path, tiny_encoder: Encoder) -> None:
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text(
        json.dumps({"text": "the cat sat", "author": "Zoë", "year": 2021})
        + "\n"
        + json.dumps({"text": "dogs run"})
        + "\n",
        encoding="utf-8",
    )
    engine = SearchEngine.build(corpus, tmp_path / "i", encoder=tiny_encoder)
    hit = engine.search("the cat sat", k=1)[0]
    assert hit.metadata == {"author": "Zoë", "year": 2021}
    assert (hit.source, hit.line) == (str(corpus), 1)


def test_whitening_k_is_fitted_saved_and_applied(tmp_path: Path, tiny_encoder: Encoder, sentences: list[str]) -> None:
    texts = sentences + [f"{a} {b}" for a in sentences[:6] for b in sentences[6:]]
    engine = SearchEngine.build(texts, tmp_path / "i", BuildSettings(whiten_k=8), encoder=tiny_encoder)
    info = engine.info()
    assert (info.dimension, info.model_dimension, info.whitening) == (8, 32, 8)
    assert engine.encode(["x"]).shape == (1, 8)
    reopened = SearchEngine.open(engine.path, whiten_k=8, speed=FP32)
    assert reopened.search(texts[5], k=1)[0].text == texts[5]
    with pytest.raises(SearchEngineError, match="whitening"):
        SearchEngine.open(engine.path, whiten_k=16)


def test_whitening_can_be_fitted_on_another_corpus(tmp_path: Path, tiny_encoder: Encoder, sentences: list[str]) -> None:
    fit = [f"{a} {b}" for a in sentences for b in sentences[:3]]
    engine = SearchEngine.build(
        sentences[:4],
        tmp_path / "i",
        BuildSettings(whiten_k=4, whiten_fit=fit),
        encoder=tiny_encoder,
    )
    assert engine.manifest.whitening.fit_count == len(set(fit))
    assert engine.search(sentences[2], k=1)[0].text == sentences[2]


@pytest.mark.parametrize("factory", ["HNSW32", "IVF4,Flat"])
def test_other_faiss_types_train_and_search(
    tmp_path: Path, tiny_encoder: Encoder, sentences: list[str], factory: str
) -> None:
    texts = [f"{a} {b}" for a in sentences for b in sentences]
    engine = SearchEngine.build(texts, tmp_path / "i", BuildSettings(index=factory), encoder=tiny_encoder)
    assert engine.info().index_type == factory and len(engine) == len(texts)
    found = sum(engine.search(text, k=1)[0].text == text for text in texts[:20])
    assert found >= 18


def test_empty_corpus_is_refused_and_leaves_old_index(
    engine: SearchEngine, tiny_encoder: Encoder, sentences: list[str]
) -> None:
    before = _all_results(engine, sentences)
    with pytest.raises(SearchEngineError, match="no text to index"):
        SearchEngine.build(["", "   "], engine.path, encoder=tiny_encoder)
    _assert_same_results(_all_results(SearchEngine.open(engine.path, speed=FP32), sentences), before)


def test_query_on_empty_index(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = SearchEngine.create(tmp_path / "empty", encoder=tiny_encoder)
    with pytest.raises(SearchEngineError, match="is empty"):
        engine.search("anything")
    engine.add(["now there is one text"])
    assert engine.search("now there is one text", k=3, mode="dense")[0].score == pytest.approx(1.0, abs=1e-5)


def test_create_refuses_a_path_that_holds_an_index_and_leaves_it_as_it_was(
    engine: SearchEngine, sentences: list[str], tiny_encoder: Encoder
) -> None:
    """create over an index emptied it without a word (a script run twice lost what its first run added)."""
    with pytest.raises(SearchEngineError, match=r"index .* exists already: open it \(SearchEngine.open\) to add to it"):
        SearchEngine.create(engine.path, encoder=tiny_encoder)
    assert len(SearchEngine.open(engine.path, encoder=tiny_encoder)) == len(sentences)


def test_empty_index_cannot_need_training(tmp_path: Path, tiny_encoder: Encoder) -> None:
    with pytest.raises(SearchEngineError, match="fitted on documents"):
        SearchEngine.create(tmp_path / "empty", encoder=tiny_encoder, index="IVF4,Flat")


def test_interrupted_build_keeps_previous_index(
    engine: SearchEngine, tiny_encoder: Encoder, sentences: list[str]
) -> None:
    before = _all_results(engine, sentences)
    files_before = sorted(p.name for p in engine.path.iterdir())

    def interrupted():
        yield from ["one new text", "another new text"] * 3000
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        SearchEngine.build(interrupted(), engine.path, encoder=tiny_encoder)
    assert sorted(p.name for p in engine.path.iterdir()) == files_before
    _assert_same_results(_all_results(SearchEngine.open(engine.path, speed=FP32), sentences), before)


def test_interrupted_append_keeps_previous_index(engine: SearchEngine, sentences: list[str]) -> None:
    before = _all_results(engine, sentences)

    def interrupted():
        yield from [f"text number {i}" for i in range(5000)]
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        engine.add(interrupted())
    assert len(engine) == len(sentences)
    _assert_same_results(_all_results(SearchEngine.open(engine.path, speed=FP32), sentences), before)


def test_missing_index_directory(tmp_path: Path) -> None:
    with pytest.raises(IndexerError, match="no index at"):
        SearchEngine.open(tmp_path / "nowhere")


def test_a_different_model_is_refused(engine: SearchEngine, other_tiny_model: Path) -> None:
    """A model the caller names is checked when the index is opened, from its files, before anything encodes."""
    with pytest.raises(SearchEngineError, match="was built with model"):
        SearchEngine.open(engine.path, model=other_tiny_model)
    with pytest.raises(SearchEngineError, match="was built with model"):
        SearchEngine.open(engine.path, encoder=Encoder(other_tiny_model))


def test_a_different_pooling_is_refused(engine: SearchEngine) -> None:
    with pytest.raises(SearchEngineError, match="mean pooling, not cls"):
        SearchEngine.open(engine.path, pooling="cls")


def test_model_changed_on_disk_is_detected(tmp_path: Path, sentences: list[str]) -> None:
    import shutil

    from tests.conftest import write_tiny_model

    model = write_tiny_model(tmp_path / "model")
    engine = SearchEngine.build(sentences, tmp_path / "i", BuildSettings(model=model))
    shutil.rmtree(model)
    write_tiny_model(model, seed=5)
    reopened = SearchEngine.open(engine.path)  # the index's own model is checked when it is loaded
    with pytest.raises(SearchEngineError, match="fingerprint"):
        reopened.search("cat")


def test_an_index_whose_model_is_gone_can_still_be_inspected_and_changed(tmp_path: Path, sentences: list[str]) -> None:
    """Only encoding needs the model: info, delete, compact, mine and cluster work from the stored vectors."""
    import shutil

    from tests.conftest import write_tiny_model

    model = write_tiny_model(tmp_path / "model")
    SearchEngine.build(sentences, tmp_path / "i", BuildSettings(model=model, index="HNSW32"))
    shutil.rmtree(model)
    engine = SearchEngine.open(tmp_path / "i")
    assert engine.info().vectors == len(engine) == len(sentences)
    assert len(engine.mine(top=2)) == 2
    assert len(engine.cluster(k=3)) == 3
    assert engine.delete([0, 1]) == [0, 1] and len(engine.tombstones) == 2
    assert engine.compact() == 2 and len(engine) == len(sentences) - 2
    with pytest.raises(SearchEngineError, match="does not exist"):
        engine.search("cat")


_OPEN_AND_CHANGE = """
import sys

from searchengine import SearchEngine
from searchengine.encoding.speed import EncoderSpeed

engine = SearchEngine.open(sys.argv[1], speed=EncoderSpeed(precision="fp32"))  # auto: torch bf16 where AMX is
assert len(engine) == engine.info().vectors == 12
engine.mine(top=3)
engine.dedupe(0.99)
engine.cluster(k=2)
engine.clustering()
list(engine.stored_vectors())
engine.delete([0])
assert engine.compact() == 1
loaded = [name for name in ("transformers", "torch") if name in sys.modules]
assert not loaded, f"opening and changing the index imported {loaded}"
assert engine.search("the cat sat on the mat", k=1)[0].text == "the cat sat on the mat"
assert "transformers" not in sys.modules  # the query ran the model's cached ONNX export
engine.add(["a new text about the weather"])  # embedded through the same cached export
assert "transformers" not in sys.modules and "torch" not in sys.modules
assert engine.search("a new text about the weather", k=1, mode="dense")[0].score > 0.999
torch_engine = SearchEngine.open(sys.argv[1], speed=EncoderSpeed(precision="fp32", backend="torch"))
torch_engine.add(["another text about the sea"])
assert "transformers" in sys.modules  # adding documents where torch embeds loads the model
"""


def test_opening_loads_no_model_until_something_encodes(tmp_path: Path, tiny_model: Path, sentences: list[str]) -> None:
    """In a fresh process: open, inspect, mine, cluster, delete and compact import neither transformers nor torch
    (so no transformer is built); nor does a search, served by the cached ONNX export, nor an add that the export
    embeds as the Encoder would; an add that torch embeds loads the model."""
    import subprocess
    import sys

    # built and opened on the CPU, whose auto backend caches the ONNX export that serves the search (on a GPU the
    # query runs torch there; found on an H200, where the opening process saw the GPU)
    SearchEngine.build(
        sentences,
        tmp_path / "i",
        BuildSettings(index="HNSW32"),
        encoder=Encoder(tiny_model, device="cpu"),
    )
    completed = subprocess.run(
        [sys.executable, "-c", _OPEN_AND_CHANGE, str(tmp_path / "i")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]


def test_a_small_add_on_a_bf16_cpu_needs_no_torch_model(
    tmp_path: Path, tiny_model: Path, sentences: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where `auto` embeds bulk calls in torch bf16 (AVX512-BF16 or AMX), an add of fewer than BULK_TEXTS documents
    is embedded by the torch-free ONNX encoder, as the Encoder would embed them; a larger add loads the Encoder."""
    from searchengine.encoding import precision as precision_module
    from searchengine.encoding.onnx_document_encoder import OnnxDocumentEncoder
    from searchengine.encoding.precision import BULK_TEXTS

    monkeypatch.setattr(precision_module, "cpu_flags", lambda cpuinfo=None: frozenset({"avx512f", "avx512_bf16"}))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    SearchEngine.build(sentences, tmp_path / "i", encoder=Encoder(tiny_model, device="cpu"))  # caches the export
    engine = SearchEngine.open(tmp_path / "i")
    engine.add([f"a small note number {i} about the weather" for i in range(BULK_TEXTS - 1)])
    light = engine.reader.encoders.onnx
    assert isinstance(light, OnnxDocumentEncoder) and light.bulk_elsewhere and engine.reader.encoders.loaded is None
    assert engine.search("a small note number 3 about the weather", k=1, mode="dense")[0].score > 0.999
    engine.add([f"a large batch, note {i} about the sea" for i in range(BULK_TEXTS)])
    assert engine.reader.encoders.loaded is not None and engine.reader.encoders.loaded.bulk_precision == "bf16"


def test_a_few_long_documents_of_bulk_passages_load_the_bulk_encoder(
    tmp_path: Path, tiny_model: Path, sentences: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fewer than BULK_TEXTS documents that split into BULK_TEXTS passages or more are bulk work for the Encoder
    (torch bf16 where auto has it): the torch-free encoder, which embeds all of them in ONNX Runtime fp32, steps
    aside (3 long Markdown files of 1,353 passages took 83 s that way on an AMX Xeon, 43 s with torch loaded)."""
    from searchengine.encoding import precision as precision_module
    from searchengine.encoding.precision import BULK_TEXTS

    monkeypatch.setattr(precision_module, "cpu_flags", lambda cpuinfo=None: frozenset({"avx512f", "amx_bf16"}))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    encoder = Encoder(tiny_model, device="cpu")
    SearchEngine.build(sentences, tmp_path / "i", BuildSettings(passages=True), encoder=encoder)  # caches the export
    reports = [
        " ".join(f"{word}{i} of a long report" for i in range(encoder.text_tokens * BULK_TEXTS // 4)) for word in "ab"
    ]
    engine = SearchEngine.open(tmp_path / "i")
    engine.add([f"a short note {i}" for i in range(3)])
    assert engine.reader.encoders.loaded is None
    engine.add(reports)
    assert engine.last_report is not None and engine.last_report.vectors >= BULK_TEXTS
    assert engine.reader.encoders.loaded is not None and engine.reader.encoders.loaded.bulk_precision == "bf16"


def _manifest_written_before_typing(index: Path, model: Path, fingerprint: str) -> dict:
    """manifest.json as the code before the typed manifest (commit 71e681a) wrote it for a whitened Flat index of
    the 12 sentences, naming this index's files."""
    current = json.loads((index / "manifest.json").read_text(encoding="utf-8"))["files"]  # format 1 (downgraded)
    files = {role: current[role] for role in ("vectors", "documents", "whitening")}
    return {
        "format_version": 1,
        "model": {
            "name": str(model),
            "spec": str(model),
            "fingerprint": fingerprint,
            "pooling": "mean",
            "normalize": True,
            "dimension": 32,
            "max_seq_length": 64,
        },
        "whitening": {"k": 8, "fit_count": 12},
        "index": {"type": "Flat", "metric": "inner_product", "dimension": 8},
        "count": {"vectors": 12, "documents": 12, "tombstones": 0},
        "created_at": "2026-11-23T14:05:46+0000",
        "updated_at": "2026-11-23T14:05:46+0000",
        "versions": {"searchengine": "0.1.0", "faiss": "1.15.1", "torch": "2.13.0+cpu", "transformers": "5.23.0"},
        "files": files,
        "sizes": {role: (index / name).stat().st_size for role, name in files.items()},
    }


def test_an_index_written_before_the_typed_manifest_opens(
    tmp_path: Path, tiny_model: Path, tiny_encoder: Encoder, sentences: list[str]
) -> None:
    built = SearchEngine.build(sentences, tmp_path / "i", BuildSettings(whiten_k=8), encoder=tiny_encoder)
    before = _all_results(built, sentences)
    built.close()  # its read snapshot would hold the store
    downgrade_to_format_1(built.path)
    old = _manifest_written_before_typing(built.path, tiny_model.resolve(), tiny_encoder.fingerprint)
    (built.path / "manifest.json").write_text(json.dumps(old, indent=2) + "\n", encoding="utf-8")
    engine = SearchEngine.open(built.path, whiten_k=8, speed=FP32)
    assert (len(engine), engine.info().whitening, engine.info().created_at) == (12, 8, "2026-11-23T14:05:46+0000")
    _assert_same_results(_all_results(engine, sentences), before)
    engine.delete([0])  # the first write converts it to format 2
    rewritten = json.loads((built.path / "manifest.json").read_text(encoding="utf-8"))
    assert rewritten["format_version"] == 2 and "count" not in rewritten  # counts now come from the store
    assert rewritten["model"] == old["model"] and rewritten["created_at"] == old["created_at"]
    assert (engine.info().documents, engine.info().vectors) == (11, 11)


@pytest.mark.parametrize("role", ["segment.0", "whitening"])
def test_truncated_index_file_is_reported(
    tmp_path: Path, tiny_encoder: Encoder, sentences: list[str], role: str
) -> None:
    engine = SearchEngine.build(sentences, tmp_path / "index", BuildSettings(whiten_k=8), encoder=tiny_encoder)
    path = engine.directory.file(engine.manifest, role)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(IndexerError, match="truncated"):
        SearchEngine.open(engine.path)


@pytest.mark.parametrize("role", ["segment.0", "documents"])
def test_corrupt_index_file_of_the_right_size_is_reported(engine: SearchEngine, role: str) -> None:
    path = engine.directory.file(engine.manifest, role)
    path.write_bytes(b"\x13" * path.stat().st_size)
    with pytest.raises(IndexerError, match="corrupt"):
        SearchEngine.open(engine.path)


def test_corrupt_manifest_is_reported(engine: SearchEngine) -> None:
    (engine.path / "manifest.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(IndexerError, match="corrupt"):
        SearchEngine.open(engine.path)


def test_non_string_texts_are_refused(tmp_path: Path, tiny_encoder: Encoder) -> None:
    with pytest.raises(SearchEngineError, match="not a str"):
        SearchEngine.build(["fine", 42], tmp_path / "i", encoder=tiny_encoder)


def test_a_pipe_is_read_once(tmp_path: Path, tiny_encoder: Encoder, sentences: list[str]) -> None:
    """Process substitution (`<(zcat corpus.gz)`) hands over a FIFO, which cannot be counted and re-read."""
    import os
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text("\n".join(sentences) + "\n", encoding="utf-8"))
    writer.start()
    engine = SearchEngine.build(fifo, tmp_path / "i", encoder=tiny_encoder)
    writer.join()
    assert len(engine) == len(sentences)


def test_a_single_query_runs_on_one_thread_and_restores_the_setting(
    engine: SearchEngine, sentences: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import faiss
    import torch

    import searchengine.engine.search as search_module

    seen: list[tuple[int, int]] = []
    search = search_module.dense_rankings

    def watching(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        seen.append((torch.get_num_threads(), faiss.omp_get_max_threads()))
        return search(*args, **kwargs)

    monkeypatch.setattr(search_module, "dense_rankings", watching)
    torch.set_num_threads(2)
    faiss.omp_set_num_threads(2)
    assert engine.search(sentences[0], k=1, mode="dense")[0].text == sentences[0]
    engine.search_batch(sentences[:2], k=1, mode="dense")
    assert seen == [(1, 1), (2, 2)]
    assert (torch.get_num_threads(), faiss.omp_get_max_threads()) == (2, 2)


@pytest.mark.parametrize("query", ["", "   ", "\n"])
def test_an_empty_query_is_refused(engine: SearchEngine, query: str) -> None:
    with pytest.raises(SearchEngineError, match="the query is empty"):
        engine.search(query)
    with pytest.raises(SearchEngineError, match="query number 2 is empty"):
        engine.search_batch(["cat", query])


@pytest.mark.parametrize("bad", [2**63, -1, -(2**70), True])
def test_delete_refuses_ids_no_document_can_have(engine: SearchEngine, bad: int) -> None:
    before = len(engine)
    with pytest.raises(SearchEngineError, match="is not a document id"):
        engine.delete(ids=[bad])
    assert len(engine) == before


def test_too_few_texts_for_ivf_say_what_to_do(tmp_path: Path, tiny_encoder: Encoder, sentences: list[str]) -> None:
    with pytest.raises(SearchEngineError, match=r"IVF1024 needs at least 39×1024 training vectors.*has 12: use Flat"):
        SearchEngine.build(sentences, tmp_path / "ivf", BuildSettings(index="IVF1024,Flat"), encoder=tiny_encoder)
    assert not (tmp_path / "ivf").exists()


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ("ab", "give a list of external ids, not the string 'ab'; write ['ab']"),
        (b"ab", "give a list of external ids, not the string b'ab'; write [b'ab']"),
        ([5], "external id 1 is 5, not a str: ids are text, e.g. '5'"),
        (["a", None], "external id 2 is None, not a str: ids are text, e.g. 'None'"),
        (5, "give a list of external ids, not 5"),
    ],
)
def test_delete_refuses_external_ids_that_are_not_a_list_of_str_before_deleting_any(
    tmp_path: Path, tiny_encoder: Encoder, bad: object, said: str
) -> None:
    """A lone string was read as its letters: external_ids="ab" deleted the documents "a" and "b" and kept "ab"; an
    int id raised TypeError from the store."""
    from searchengine import Document

    engine = SearchEngine.create(tmp_path / "index", encoder=tiny_encoder)
    engine.add([Document(text, external_id=name) for name, text in (("a", "alpha"), ("b", "beta"), ("ab", "both"))])
    with pytest.raises(SearchEngineError) as refused:
        engine.delete(external_ids=bad)  # type: ignore[arg-type]
    assert str(refused.value) == said
    assert sorted(engine.external_ids()) == ["a", "ab", "b"]
