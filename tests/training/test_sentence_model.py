"""Saved models load back (ours and sentence-transformers') and reproduce the trained model's embeddings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from searchengine.training.sentence_model import SentenceModel

from searchengine.encoding.encoder import Encoder

TEXTS = ["the cat sat on the mat", "how do i reset my password", "rain and snow in the city", "a"]


def test_save_then_load_reproduces_embeddings(tiny_model: Path, tmp_path: Path) -> None:
    model = SentenceModel(tiny_model)
    with __import__("torch").no_grad():
        for parameter in model.parameters():
            parameter.add_(0.01)  # make it differ from the base
    model.save(tmp_path)
    ours = Encoder(tmp_path, precision="fp32").encode(TEXTS)  # the training model runs fp32
    np.testing.assert_allclose(ours, model.encode(TEXTS), atol=1e-6)
    assert not np.allclose(ours, Encoder(tiny_model, precision="fp32").encode(TEXTS), atol=1e-4)
    modules = json.loads((tmp_path / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[-1] for m in modules] == ["Transformer", "Pooling", "Normalize"]


def test_sentence_transformers_loads_a_saved_model(tiny_model: Path, tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    model = SentenceModel(tiny_model, pooling="cls")
    model.save(tmp_path)
    theirs = SentenceTransformer(str(tmp_path), device="cpu").encode(TEXTS, convert_to_numpy=True)
    np.testing.assert_allclose(theirs, model.encode(TEXTS), atol=1e-5)
