"""A passage's heading embedded with it, through the engine: each vector is its heading on a line of its own then
the passage, in a window that leaves the heading room, while the stored text, spans, snippets and highlights stay
the document's own; the index records the setting, so `add` and `sync` embed the same way, and an index written
before the setting keeps embedding passages alone."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np

from searchengine import BuildSettings, Document, SearchEngine
from searchengine.encoding.encoder import Encoder
from searchengine.engine.files import files_record, read_paths, sync_index
from searchengine.reading.file_rules import FileRules
from tests.conftest import WORDS
from tests.searchengine.reading.made_files import pdf_bytes

HEADING = "garden water soil"
TAIL = "the rocket flew past the moon toward a distant planet"


def _long(seed: int) -> str:
    """About 300 tokens of sentences: five or more passages of the tiny model's 62 tokens."""
    rng = random.Random(seed)
    return " ".join(" ".join(rng.choice(WORDS) for _ in range(11)) + "." for _ in range(27)) + f" {TAIL}."


def _corpus() -> list[Document]:
    return [
        Document(_long(0), external_id="long", headings=((0, HEADING),)),
        Document("the cat sat on the mat", external_id="short", headings=((0, "pets"),)),
    ]


def _embedded(engine: SearchEngine) -> dict[int, tuple[str, str]]:
    """Each vector id -> (the text it covers, the heading its document had at build) for the documents above."""
    documents = {hit.id: hit for hit in engine.search("the", k=10, mode="keyword")}
    vector_ids = [int(i) for ids, _ in engine.stored_vectors() for i in ids]
    spans = engine.reader.store.passages.of_vectors(vector_ids)
    out = {}
    for vector_id in vector_ids:
        document, start, end = spans.get(vector_id, (vector_id, 0, None))
        text = documents[document].text
        out[vector_id] = text[start:end]
    return out


def _vectors(engine: SearchEngine) -> dict[int, np.ndarray]:
    return {int(i): v for ids, vectors in engine.stored_vectors() for i, v in zip(ids, vectors)}


def _assert_embedded_as(engine: SearchEngine, encoder: Encoder, expected: dict[int, str]) -> None:
    vectors = _vectors(engine)
    assert set(vectors) == set(expected)
    ids = sorted(expected)
    np.testing.assert_allclose(
        np.stack([vectors[i] for i in ids]), encoder.encode([expected[i] for i in ids]), atol=1e-5
    )


def test_each_passage_is_embedded_after_its_heading_within_the_model_limit(
    tmp_path: Path, tiny_encoder: Encoder
) -> None:
    engine = SearchEngine.build(_corpus(), tmp_path / "idx", BuildSettings(passages=True), encoder=tiny_encoder)
    assert engine.manifest.passages is not None and engine.manifest.passages.headings
    passages = _embedded(engine)
    assert len(passages) > 5 and engine.last_report.truncated == 0
    heading = {i: "pets" if text.startswith("the cat") else HEADING for i, text in passages.items()}
    expected = {i: f"{heading[i]}\n{text}" for i, text in passages.items()}
    _assert_embedded_as(engine, tiny_encoder, expected)
    assert max(tiny_encoder.token_counts(list(expected.values()))) <= tiny_encoder.text_tokens  # room was left


def test_spans_snippets_and_highlights_point_into_the_text_not_the_heading(
    tmp_path: Path, tiny_encoder: Encoder
) -> None:
    engine = SearchEngine.build(_corpus(), tmp_path / "idx", BuildSettings(passages=True), encoder=tiny_encoder)
    [hit] = engine.search(TAIL, k=1, mode="dense", highlight=True)
    assert hit.external_id == "long" and hit.span is not None
    assert hit.passage == hit.text[hit.span[0] : hit.span[1]] and hit.span[1] == len(hit.text)
    assert TAIL in hit.passage and HEADING not in hit.passage
    assert hit.highlight is not None and hit.span[0] <= hit.highlight.span[0] < hit.highlight.span[1] <= hit.span[1]
    assert [hit.text[start:end] for start, end in hit.highlight.words][:2] == ["rocket", "flew"]


def test_without_passage_headings_each_passage_is_embedded_alone(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = SearchEngine.build(
        _corpus(),
        tmp_path / "idx",
        BuildSettings(passages=True, passage_headings=False),
        encoder=tiny_encoder,
    )
    assert not engine.manifest.passages.headings
    assert "headings" not in json.loads((tmp_path / "idx" / "manifest.json").read_text())["passages"]
    _assert_embedded_as(engine, tiny_encoder, _embedded(engine))


def test_add_embeds_as_the_index_was_built(tmp_path: Path, tiny_encoder: Encoder) -> None:
    engine = SearchEngine.build(
        [Document("a dog ran in the garden")],
        tmp_path / "idx",
        BuildSettings(passages=True),
        encoder=tiny_encoder,
    )
    engine.add(_corpus())
    passages = _embedded(engine)
    heading = {i: "pets" if text.startswith("the cat") else HEADING for i, text in passages.items()}
    _assert_embedded_as(
        engine,
        tiny_encoder,
        {i: text if text.startswith("a dog") else f"{heading[i]}\n{text}" for i, text in passages.items()},
    )


def test_an_index_written_before_the_setting_keeps_embedding_passages_alone(
    tmp_path: Path, tiny_encoder: Encoder
) -> None:
    SearchEngine.build(
        [Document("a dog ran in the garden")],
        tmp_path / "idx",
        BuildSettings(passages=True),
        encoder=tiny_encoder,
    ).close()
    manifest = tmp_path / "idx" / "manifest.json"
    old = json.loads(manifest.read_text())
    del old["passages"]["headings"]  # as every index written before passage headings existed
    manifest.write_text(json.dumps(old, indent=2) + "\n")
    engine = SearchEngine.open(tmp_path / "idx", encoder=tiny_encoder)
    assert not engine.manifest.passages.headings
    engine.add(_corpus())
    _assert_embedded_as(engine, tiny_encoder, _embedded(engine))
    assert json.loads(manifest.read_text())["passages"] == old["passages"]


def test_sync_embeds_a_new_pdf_page_after_its_title(tmp_path: Path, tiny_encoder: Encoder) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "pets.md").write_text("# Pets\n\nThe cat sat on the mat.\n", encoding="utf-8")
    documents, _ = read_paths([root], FileRules())
    reading = files_record([root], root, FileRules())
    engine = SearchEngine.build(
        documents,
        tmp_path / "idx",
        BuildSettings(passages=True, reading=reading),
        encoder=tiny_encoder,
    )
    (root / "oven.pdf").write_bytes(pdf_bytes(["Baking bread", "The oven must be hot before the bread goes in."]))
    assert sync_index(engine).added == ["oven.pdf"]
    [page] = [hit for hit in engine.search("oven bread", k=5, mode="keyword") if hit.external_id == "oven.pdf#2"]
    assert page.metadata["title"] == "Baking bread" and page.text.startswith("The oven")
    expected = tiny_encoder.encode([f"Baking bread\n{page.text}"])[0]
    np.testing.assert_allclose(_vectors(engine)[page.id], expected, atol=1e-5)


def test_a_record_title_is_embedded_once(tmp_path: Path, tiny_encoder: Encoder) -> None:
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text(json.dumps({"title": HEADING, "text": _long(1)}) + "\n", encoding="utf-8")
    engine = SearchEngine.build(
        corpus,
        tmp_path / "idx",
        BuildSettings(title_field="title", passages=True),
        encoder=tiny_encoder,
    )
    passages = _embedded(engine)
    first = min(passages)
    assert passages[first].startswith(HEADING)  # the title is the text's start: its first passage has it already
    _assert_embedded_as(
        engine, tiny_encoder, {i: text if i == first else f"{HEADING}\n{text}" for i, text in passages.items()}
    )
