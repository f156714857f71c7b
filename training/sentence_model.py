"""A trainable bi-encoder: the transformer and pooling of a model directory, with gradients, plus the hooks the
augmentations need (position ids, edits to the embedding layer's output), saved back in the
sentence-transformers layout that `searchengine.encoding.encoder.Encoder` and sentence-transformers load."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from torch import nn

from searchengine.encoding.hf_loading import load_pretrained
from searchengine.encoding.model_source import ModelSource, locate_model
from searchengine.encoding.pooling import NEEDS_ALL_LAYERS, pool
from searchengine.errors import SearchEngineError
from searchengine.evaluation.labelled_data import Triplet

EmbeddingEdit = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""(embedding-layer output (batch, seq, dim), attention mask (batch, seq)) -> edited output."""

TrainablePooling = Literal["mean", "cls", "max", "mean_sqrt_len"]
"""The pooling modes sentence-transformers' Pooling module saves, so the ones a trained model can keep."""

_ST_POOLING_FLAGS = {
    "cls": "pooling_mode_cls_token",
    "mean": "pooling_mode_mean_tokens",
    "max": "pooling_mode_max_tokens",
    "mean_sqrt_len": "pooling_mode_mean_sqrt_len_tokens",
}


class SentenceModel(nn.Module):
    """Transformer + pooling with gradients. `forward` returns un-normalised sentence vectors."""

    def __init__(
        self, base: str | Path = "default", pooling: TrainablePooling | None = None, max_seq_length: int = 64
    ) -> None:
        super().__init__()
        self.source: ModelSource = locate_model(base, pooling)
        if self.source.pooling not in _ST_POOLING_FLAGS:
            raise SearchEngineError(
                f"training supports the pooling modes sentence-transformers can save ({', '.join(_ST_POOLING_FLAGS)}), "
                f"not {self.source.pooling!r}"
            )
        if self.source.transforms:
            raise SearchEngineError(
                f"{self.source.path} has post-processing modules ({', '.join(p.name for _, p in self.source.transforms)}) "
                "fitted to its current weights; train from the model without them, then fit them again"
            )
        path = self.source.transformer_path
        self.tokenizer, self.transformer = load_pretrained(path, "the base model")
        self.pooling = self.source.pooling
        self.normalize = self.source.normalize
        self.max_seq_length = min(max_seq_length, self.transformer.config.max_position_embeddings)
        self.dimension = int(self.transformer.config.hidden_size)
        self._embedding_edit: EmbeddingEdit | None = None
        self._current_mask: torch.Tensor | None = None

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def saved_max_seq_length(self) -> int:
        """The limit the saved model encodes with (the base's), longer than the training truncation."""
        return min(self.source.max_seq_length or 1 << 30, self.transformer.config.max_position_embeddings)

    def tokenize(self, texts: Sequence[str], max_length: int | None = None) -> dict[str, torch.Tensor]:
        """Pad to the batch's longest text, truncate at `max_length` (default: the training max_seq_length)."""
        prepared = [text.strip() for text in texts]
        if self.source.do_lower_case:
            prepared = [text.lower() for text in prepared]
        features = self.tokenizer(
            prepared, truncation=True, max_length=max_length or self.max_seq_length, padding=True, return_tensors="pt"
        )
        return {key: value.to(self.device) for key, value in features.items()}

    def token_states(
        self, features: dict[str, torch.Tensor], position_ids: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, ...]:
        """Hidden states of every layer needed by the pooling (the last layer at least)."""
        all_layers = self.pooling in NEEDS_ALL_LAYERS
        inputs = {k: v for k, v in features.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        if position_ids is not None:
            inputs["position_ids"] = position_ids
        self._current_mask = features["attention_mask"]
        try:
            output = self.transformer(**inputs, output_hidden_states=all_layers)
        finally:
            self._current_mask = None
        return output.hidden_states if all_layers else (output.last_hidden_state,)

    def forward(self, features: dict[str, torch.Tensor], position_ids: torch.Tensor | None = None) -> torch.Tensor:
        return pool(self.pooling, self.token_states(features, position_ids), features["attention_mask"])

    def embed_texts(self, texts: Sequence[str], max_length: int | None = None) -> torch.Tensor:
        """tokenize + forward, with gradients."""
        return self(self.tokenize(texts, max_length))

    def embed_triplets(self, triplets: Sequence[Triplet]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(anchor, positive, negative) vectors of `triplets`, from one forward pass, with gradients."""
        texts = [t.anchor for t in triplets] + [t.positive for t in triplets] + [t.negative for t in triplets]
        anchor, positive, negative = self.embed_texts(texts).chunk(3)
        return anchor, positive, negative

    @contextmanager
    def editing_embeddings(self, edit: EmbeddingEdit) -> Iterator[None]:
        """Apply `edit` to the embedding layer's output (after its LayerNorm and dropout) in forward passes run
        inside this block: where ConSERT's cutoff, dropout and adversarial views act."""
        embeddings = getattr(self.transformer, "embeddings", None)
        if embeddings is None:
            raise SearchEngineError(
                f"{type(self.transformer).__name__} has no .embeddings layer; this augmentation needs a BERT-like model"
            )

        def hook(_module: nn.Module, _inputs: tuple, output: torch.Tensor) -> torch.Tensor:
            return edit(output, self._current_mask)

        handle = embeddings.register_forward_hook(hook)
        try:
            yield
        finally:
            handle.remove()

    @torch.no_grad()
    def encode(self, texts: Sequence[str], batch_size: int = 128) -> np.ndarray:
        """Eval-mode float32 vectors as the saved model will give them (its own length limit, normalised if it
        normalises), sorted by length for speed."""
        was_training = self.training
        self.eval()
        order = np.argsort([-len(text) for text in texts], kind="stable")
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        try:
            for start in range(0, len(texts), batch_size):
                rows = order[start : start + batch_size]
                vectors = self.embed_texts([texts[i] for i in rows], self.saved_max_seq_length)
                if self.normalize:
                    vectors = nn.functional.normalize(vectors, dim=1)
                out[rows] = vectors.float().cpu().numpy()
        finally:
            self.train(was_training)
        return out

    def save(self, directory: Path) -> None:
        """Write the sentence-transformers layout: transformer and tokenizer at the root, 1_Pooling/,
        2_Normalize/ when the base normalised, modules.json."""
        directory = Path(directory)
        self.transformer.save_pretrained(directory, safe_serialization=True)
        self.tokenizer.save_pretrained(directory)
        _write_json(
            directory / "sentence_bert_config.json",
            {"max_seq_length": self.saved_max_seq_length, "do_lower_case": self.source.do_lower_case},
        )
        _write_json(
            directory / "config_sentence_transformers.json",
            {
                "model_type": "SentenceTransformer",
                "similarity_fn_name": "cosine",
                "prompts": {},
                "default_prompt_name": None,
            },
        )
        (directory / "1_Pooling").mkdir(exist_ok=True)
        _write_json(
            directory / "1_Pooling" / "config.json",
            {
                "word_embedding_dimension": self.dimension,
                **{flag: mode == self.pooling for mode, flag in _ST_POOLING_FLAGS.items()},
            },
        )
        modules = [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        ]
        if self.normalize:
            (directory / "2_Normalize").mkdir(exist_ok=True)
            modules.append(
                {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
            )
        _write_json(directory / "modules.json", modules)


def _write_json(path: Path, value: object) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
