"""Token-to-sentence pooling, checked on hand-made tensors against values worked out by hand."""

from __future__ import annotations

import math

import pytest
import torch

from searchengine.encoding.pooling import NEEDS_ALL_LAYERS, POOLING_MODES, pool
from searchengine.errors import SearchEngineError

# Two sentences, three positions, two dimensions. Sentence 0 has 2 real tokens and one padded position whose
# values are larger than any real one (so a pooler that forgets the mask gets a visibly different answer);
# sentence 1 has 3 real tokens.
LAST = torch.tensor(
    [
        [[1.0, 2.0], [3.0, -4.0], [100.0, 100.0]],
        [[0.0, 6.0], [3.0, 0.0], [-3.0, 3.0]],
    ]
)
MASK = torch.tensor([[1, 1, 0], [1, 1, 1]])
EMBEDDINGS = torch.tensor(
    [
        [[-1.0, 0.0], [1.0, 4.0], [50.0, -50.0]],
        [[2.0, 2.0], [2.0, 2.0], [2.0, 2.0]],
    ]
)
MIDDLE = torch.tensor(
    [
        [[3.0, 2.0], [5.0, 0.0], [-70.0, 70.0]],
        [[6.0, 0.0], [0.0, 0.0], [0.0, 3.0]],
    ]
)
HIDDEN = (EMBEDDINGS, MIDDLE, LAST)
"""hidden_states as BERT returns them: the embedding layer first, the last layer last."""


def test_mean_ignores_padded_positions() -> None:
    # sentence 0: ([1, 2] + [3, -4]) / 2; sentence 1: ([0, 6] + [3, 0] + [-3, 3]) / 3
    expected = torch.tensor([[2.0, -1.0], [0.0, 3.0]])
    torch.testing.assert_close(pool("mean", HIDDEN, MASK), expected)


def test_mean_uses_only_the_last_layer() -> None:
    torch.testing.assert_close(pool("mean", (LAST,), MASK), pool("mean", HIDDEN, MASK))


def test_max_ignores_padded_positions_even_when_they_are_larger() -> None:
    expected = torch.tensor([[3.0, 2.0], [3.0, 6.0]])
    torch.testing.assert_close(pool("max", HIDDEN, MASK), expected)


def test_max_of_all_negative_values_is_not_zero() -> None:
    """Padding must be filled with -inf-like values, not 0, or negative maxima would come out as 0."""
    tokens = torch.tensor([[[-5.0, -2.0], [-1.0, -7.0], [0.0, 0.0]]])
    mask = torch.tensor([[1, 1, 0]])
    torch.testing.assert_close(pool("max", (tokens,), mask), torch.tensor([[-1.0, -2.0]]))


def test_cls_takes_position_zero_of_the_last_layer() -> None:
    expected = torch.tensor([[1.0, 2.0], [0.0, 6.0]])
    torch.testing.assert_close(pool("cls", HIDDEN, MASK), expected)


def test_mean_sqrt_len_divides_the_sum_by_the_square_root_of_the_length() -> None:
    # sentence 0: sum [4, -2] over 2 tokens; sentence 1: sum [0, 9] over 3 tokens
    expected = torch.tensor([[4.0 / math.sqrt(2), -2.0 / math.sqrt(2)], [0.0, 9.0 / math.sqrt(3)]])
    torch.testing.assert_close(pool("mean_sqrt_len", HIDDEN, MASK), expected)


def test_last2avg_averages_the_last_two_layers_then_mean_pools() -> None:
    # Token-wise (MIDDLE + LAST) / 2:
    #   sentence 0: [2, 2], [4, -2]   (padding ignored)          -> mean [3, 0]
    #   sentence 1: [3, 3], [1.5, 0], [-1.5, 3]                   -> mean [1, 2]
    expected = torch.tensor([[3.0, 0.0], [1.0, 2.0]])
    torch.testing.assert_close(pool("last2avg", HIDDEN, MASK), expected)


def test_first_last_avg_uses_the_embedding_layer_and_the_last_layer() -> None:
    # Token-wise (EMBEDDINGS + LAST) / 2, MIDDLE unused:
    #   sentence 0: [0, 1], [2, 0]                                -> mean [1, 0.5]
    #   sentence 1: [1, 4], [2.5, 1], [-0.5, 2.5]                 -> mean [1, 2.5]
    expected = torch.tensor([[1.0, 0.5], [1.0, 2.5]])
    torch.testing.assert_close(pool("first_last_avg", HIDDEN, MASK), expected)


def test_first_last_avg_ignores_the_middle_layers() -> None:
    other_middle = (EMBEDDINGS, MIDDLE * 10 + 7, LAST)
    torch.testing.assert_close(pool("first_last_avg", other_middle, MASK), pool("first_last_avg", HIDDEN, MASK))


def test_layer_mixing_modes_with_two_layers() -> None:
    """With only the embedding layer and one transformer layer, last2avg and first_last_avg coincide."""
    hidden = (EMBEDDINGS, LAST)
    torch.testing.assert_close(pool("last2avg", hidden, MASK), pool("first_last_avg", hidden, MASK))


@pytest.mark.parametrize("mode", POOLING_MODES)
def test_padding_values_never_matter(mode: str) -> None:
    """Changing what sits in padded positions, in any layer, leaves every mode's output unchanged."""
    changed = tuple(layer.clone() for layer in HIDDEN)
    for layer in changed:
        layer[0, 2] = torch.tensor([-1e6, 1e6])
    torch.testing.assert_close(pool(mode, changed, MASK), pool(mode, HIDDEN, MASK))


@pytest.mark.parametrize("mode", POOLING_MODES)
def test_output_shape_and_dtype(mode: str) -> None:
    result = pool(mode, HIDDEN, MASK)
    assert result.shape == (2, 2)
    assert result.dtype == torch.float32


@pytest.mark.parametrize("mode", POOLING_MODES)
def test_half_precision_and_boolean_mask(mode: str) -> None:
    """fp16 models on a GPU and masks of another integer/bool type give the same result as float32."""
    half = tuple(layer.half() for layer in HIDDEN)
    result = pool(mode, half, MASK.bool())
    assert result.dtype == torch.float16
    torch.testing.assert_close(result.float(), pool(mode, HIDDEN, MASK), rtol=1e-3, atol=1e-2)


def test_no_padding_mean_equals_plain_mean() -> None:
    tokens = torch.arange(24, dtype=torch.float32).reshape(2, 4, 3)
    mask = torch.ones(2, 4, dtype=torch.long)
    torch.testing.assert_close(pool("mean", (tokens,), mask), tokens.mean(dim=1))
    torch.testing.assert_close(pool("max", (tokens,), mask), tokens.amax(dim=1))
    torch.testing.assert_close(pool("mean_sqrt_len", (tokens,), mask), tokens.sum(dim=1) / 2.0)


@pytest.mark.parametrize("mode", ["", "MEAN", "average", "first-last-avg", "cls_token"])
def test_unknown_mode_is_a_search_engine_error(mode: str) -> None:
    with pytest.raises(SearchEngineError, match="unknown pooling mode") as error:
        pool(mode, HIDDEN, MASK)
    assert repr(mode) in str(error.value)
    for known in POOLING_MODES:
        assert known in str(error.value)


def test_needs_all_layers_names_the_layer_mixing_modes() -> None:
    assert NEEDS_ALL_LAYERS == {"last2avg", "first_last_avg"}
    assert NEEDS_ALL_LAYERS <= set(POOLING_MODES)
