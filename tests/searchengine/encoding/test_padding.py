"""Padding token id rows into a transformer's input tensors."""

from __future__ import annotations

import torch

from searchengine.encoding.padding import padded


def test_rows_are_padded_on_the_right_to_the_longest_with_a_mask_of_the_real_tokens() -> None:
    input_ids, attention_mask = padded([[101, 7, 102], [101, 102], [101, 5, 6, 7, 102]], pad_id=9)
    assert input_ids.tolist() == [[101, 7, 102, 9, 9], [101, 102, 9, 9, 9], [101, 5, 6, 7, 102]]
    assert attention_mask.tolist() == [[1, 1, 1, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 1]]
    assert input_ids.dtype == attention_mask.dtype == torch.long


def test_one_row_and_large_ids() -> None:
    input_ids, attention_mask = padded([[2**40, 3]], pad_id=0)
    assert input_ids.tolist() == [[2**40, 3]] and attention_mask.tolist() == [[1, 1]]
