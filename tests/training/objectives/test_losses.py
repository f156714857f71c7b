"""Each objective against a value computed by hand on tiny tensors."""

from __future__ import annotations

import math

import pytest
import torch
from searchengine.training.objectives.contrastive import info_nce, nt_xent
from searchengine.training.objectives.cosine_regression import cosine_regression_loss
from searchengine.training.objectives.softmax_classification import (
    SoftmaxClassifier,
    SoftmaxLoss,
    softmax_classification_loss,
)
from searchengine.training.objectives.triplet import triplet_loss

from searchengine.evaluation.labelled_data import LabelledPair


def test_triplet_loss_by_hand() -> None:
    anchor = torch.tensor([[0.0, 0.0], [0.0, 0.0]])
    positive = torch.tensor([[3.0, 4.0], [1.0, 0.0]])  # distances 5 and 1
    negative = torch.tensor([[0.0, 1.0], [0.0, 3.0]])  # distances 1 and 3
    # max(5 - 1 + 1, 0) = 5 and max(1 - 3 + 1, 0) = 0 -> mean 2.5
    assert triplet_loss(anchor, positive, negative, margin=1.0).item() == pytest.approx(2.5)


def test_cosine_regression_by_hand() -> None:
    u = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    v = torch.tensor([[1.0, 0.0], [0.0, 2.0]])  # cosines 1 and 0
    scores = torch.tensor([0.5, 0.5])
    assert cosine_regression_loss(u, v, scores).item() == pytest.approx((0.25 + 0.25) / 2)


def test_softmax_classification_uses_u_v_and_their_absolute_difference() -> None:
    classifier = SoftmaxClassifier(dimension=1, labels=2)
    with torch.no_grad():
        classifier.linear.weight.copy_(torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))
        classifier.linear.bias.zero_()
    u, v = torch.tensor([[2.0]]), torch.tensor([[5.0]])  # features (2, 5, |2 - 5| = 3) -> logits (2, 3)
    expected = -math.log(math.exp(3) / (math.exp(2) + math.exp(3)))
    assert softmax_classification_loss(classifier, u, v, torch.tensor([1])).item() == pytest.approx(expected, rel=1e-6)


def test_softmax_loss_embeds_the_pairs_and_trains_only_its_head() -> None:
    vectors = {"two": [2.0], "five": [5.0]}
    loss = SoftmaxLoss(lambda texts: torch.tensor([vectors[text] for text in texts]), dimension=1, labels=2)
    with torch.no_grad():
        loss.classifier.linear.weight.copy_(torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))
        loss.classifier.linear.bias.zero_()
    expected = -math.log(math.exp(3) / (math.exp(2) + math.exp(3)))
    assert loss([LabelledPair("two", "five", 1)]).item() == pytest.approx(expected, rel=1e-6)
    assert [tuple(parameter.shape) for parameter in loss.parameters()] == [(2, 3), (2,)]


def test_info_nce_by_hand() -> None:
    anchors = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    positives = torch.tensor([[1.0, 0.0], [1.0, 1.0]])  # cosines: row 0 -> (1, 1/sqrt2), row 1 -> (0, 1/sqrt2)
    t = 0.5
    c = 1 / math.sqrt(2)
    row0 = -math.log(math.exp(1 / t) / (math.exp(1 / t) + math.exp(c / t)))
    row1 = -math.log(math.exp(c / t) / (math.exp(0) + math.exp(c / t)))
    assert info_nce(anchors, positives, t).item() == pytest.approx((row0 + row1) / 2, rel=1e-6)


def test_info_nce_hard_negatives_are_extra_candidates() -> None:
    anchors = torch.tensor([[1.0, 0.0]])
    positives = torch.tensor([[1.0, 0.0]])
    negatives = torch.tensor([[0.0, 1.0]])
    t = 1.0
    expected = -math.log(math.exp(1) / (math.exp(1) + math.exp(0)))
    assert info_nce(anchors, positives, t, hard_negatives=negatives).item() == pytest.approx(expected, rel=1e-6)
    assert info_nce(anchors, positives, t).item() == pytest.approx(0.0, abs=1e-7)


def test_nt_xent_by_hand() -> None:
    first = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    second = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    # each of the 4 vectors: partner cosine 1; the other two candidates cosines 0 and 0
    t = 1.0
    expected = -math.log(math.e / (math.e + 2))
    assert nt_xent(first, second, t).item() == pytest.approx(expected, rel=1e-6)
