"""Encoder.token_counts: the tokens `encode` sees, so a caller can bound texts by the model's limit."""

from __future__ import annotations

from searchengine.encoding.encoder import Encoder


def test_token_counts_match_what_encode_truncates(tiny_encoder: Encoder) -> None:
    short, long = "the cat sat", " ".join(["cat"] * (tiny_encoder.text_tokens + 1))
    counts = tiny_encoder.token_counts([short, long, "  The CAT sat  "])
    assert counts == [3, tiny_encoder.text_tokens + 1, 3]
    before = tiny_encoder.truncated
    tiny_encoder.encode([" ".join(["cat"] * tiny_encoder.text_tokens)])
    assert tiny_encoder.truncated == before  # exactly text_tokens fits
    tiny_encoder.encode([long])
    assert tiny_encoder.truncated == before + 1
