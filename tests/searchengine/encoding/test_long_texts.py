"""Texts far longer than the window, cut before they are tokenized (searchengine/encoding/long_texts.py): the kept
tokens are those of the whole text, and the tokenizer never reads the whole of a huge one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from searchengine.encoding.encoder import Encoder
from searchengine.encoding.long_texts import CHARS_PER_TOKEN, truncated_encodings
from searchengine.encoding.model_source import locate_model
from searchengine.encoding.onnx_document_encoder import onnx_document_encoder
from searchengine.encoding.onnx_query_encoder import onnx_query_encoder
from searchengine.encoding.speed import EncoderSpeed

WINDOW = 64
LIMIT = WINDOW * CHARS_PER_TOKEN

TEXTS = [
    "short text",
    "the cat sat on the mat " * 2000,  # cut at a space, well past the window
    "x" * (LIMIT * 3),  # no space to cut at: read whole
    "word " + " " * (LIMIT * 2) + "tail end",  # a run of spaces: too few tokens before the limit, read whole
    ("a" * 99 + " ") * (LIMIT // 50),  # words of 99 characters, each one unknown token
    "   leading spaces " + "then words " * 3000,
    " " * (LIMIT + 5),
]


@pytest.fixture
def tokenizer(tiny_model: Path) -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(tiny_model / "tokenizer.json"))
    tokenizer.enable_truncation(WINDOW)
    return tokenizer


def test_the_kept_tokens_are_those_of_the_whole_text(tokenizer: Tokenizer) -> None:
    whole = tokenizer.encode_batch(TEXTS)
    cut = truncated_encodings(tokenizer.encode_batch, TEXTS, WINDOW)
    assert [encoding.ids for encoding in cut] == [encoding.ids for encoding in whole]
    assert [bool(encoding.overflowing) for encoding in cut] == [bool(encoding.overflowing) for encoding in whole]


def test_a_tokenizer_that_keeps_the_end_is_given_whole_texts(tokenizer: Tokenizer) -> None:
    tokenizer.enable_truncation(WINDOW, direction="left")
    cut = truncated_encodings(tokenizer.encode_batch, TEXTS, WINDOW, keeps_start=False)
    assert [encoding.ids for encoding in cut] == [encoding.ids for encoding in tokenizer.encode_batch(TEXTS)]


class _Recording:
    """A tokenizer (transformers' or tokenizers'), noting the length of every text it is given."""

    def __init__(self, tokenizer: object) -> None:
        self.tokenizer, self.lengths = tokenizer, []

    def __call__(self, texts: list[str], **options: object) -> object:
        self.lengths.extend(len(text) for text in texts)
        return self.tokenizer(texts, **options)

    def encode_batch(self, texts: list[str]) -> object:
        self.lengths.extend(len(text) for text in texts)
        return self.tokenizer.encode_batch(texts)

    def __getattr__(self, name: str) -> object:
        return getattr(self.tokenizer, name)


@pytest.mark.parametrize("backend", ["torch", "onnx documents", "onnx queries"])
def test_the_encoder_never_tokenizes_the_whole_of_a_huge_text(
    tiny_model: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 2 MB line was tokenized whole to keep 64 tokens (20 MB: 95 s and 4.6 GB); its vector is its head's. A
    query is as long as a client sends (8 MiB over HTTP)."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    encoder = Encoder(tiny_model, backend=backend.split()[0], precision="fp32")  # (makes the ONNX export)
    if backend != "torch":  # ONNX Runtime's own encoders: the index's writes and the server's queries use them
        source = locate_model(tiny_model, None)
        make = onnx_document_encoder if backend == "onnx documents" else onnx_query_encoder
        encoder = make(source, source.fingerprint(), EncoderSpeed(precision="fp32"))
    encoder.tokenizer = recording = _Recording(encoder.tokenizer)
    huge = "the cat sat on the mat " * 100_000
    vectors = encoder.encode([huge, huge[:3000]])
    assert recording.lengths and max(recording.lengths) <= encoder.max_seq_length * CHARS_PER_TOKEN
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)
    assert getattr(encoder, "truncated", 2) == 2
