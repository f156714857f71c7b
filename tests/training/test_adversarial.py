"""The FGV perturbation: size epsilon per sentence, along the loss gradient, and it raises the loss."""

from __future__ import annotations

import pytest
import torch
from searchengine.training.adversarial import embed_perturbed, embed_recording_embeddings, fgv_perturbation
from searchengine.training.sentence_model import SentenceModel


def test_fgv_has_norm_epsilon_and_increases_the_loss(tiny_model) -> None:
    model = SentenceModel(tiny_model).eval()
    features = model.tokenize(["the cat sat on the mat", "rain and snow in the city today"])
    target = torch.zeros(2, model.dimension)
    vectors, embeddings = embed_recording_embeddings(model, features)
    loss = ((vectors - target) ** 2).sum()
    perturbation = fgv_perturbation(loss, embeddings, epsilon=0.5)
    assert torch.linalg.vector_norm(perturbation.flatten(1), dim=1).tolist() == pytest.approx([0.5, 0.5], rel=1e-5)
    gradient = torch.autograd.grad(loss, embeddings, retain_graph=True)[0]
    per_sentence = torch.cosine_similarity(perturbation.flatten(1), gradient.flatten(1), dim=1)
    assert per_sentence.tolist() == pytest.approx([1.0, 1.0], abs=1e-5)
    with torch.no_grad():
        attacked = ((embed_perturbed(model, features, perturbation) - target) ** 2).sum()
    assert attacked.item() > loss.item()
