"""Sentence encoder: tokenize, smart-batch, run the transformer, pool, normalise."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from searchengine.errors import SearchEngineError
from searchengine.model_source import ModelSource, locate_model
from searchengine.pooling import NEEDS_ALL_LAYERS, pool


def default_device() -> str:
    """CUDA when PyTorch sees a GPU, CPU otherwise."""
    return "cuda" if torch.cuda.is_available() else "cpu"


class Encoder:
    """Turns texts into float32 sentence vectors, the way sentence-transformers would for the same model.

    Smart batching: texts are sorted by token count so each batch pads only to its own longest text, and
    vectors come back in input order. Texts longer than the model's limit are truncated and counted in
    `truncated`.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        pooling: str | None = None,
        device: str | None = None,
        batch_size: int = 64,
    ) -> None:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import transformers

        transformers.utils.logging.set_verbosity_error()
        transformers.utils.logging.disable_progress_bar()
        self.source: ModelSource = locate_model(model, pooling)
        path = self.source.transformer_path
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(path)
            self.model = transformers.AutoModel.from_pretrained(path, use_safetensors=True)
        except (OSError, ValueError) as exc:
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise SearchEngineError(
                f"cannot load the model in {path}: {first_line} (searchengine loads safetensors weights only)"
            ) from None
        if not self.tokenizer.is_fast:
            raise SearchEngineError(f"{path} has no fast tokenizer (tokenizer.json); searchengine needs one")
        self.device = device or default_device()
        self.model.to(self.device).eval()
        limits = [self.source.max_seq_length, self.model.config.max_position_embeddings]
        if self.tokenizer.model_max_length < 1_000_000:
            limits.append(self.tokenizer.model_max_length)
        self.max_seq_length: int = min(limit for limit in limits if limit)
        self.batch_size = batch_size
        self.dimension: int = int(self.model.config.hidden_size)
        self.truncated = 0

    @property
    def name(self) -> str:
        return self.source.name

    @functools.cached_property
    def fingerprint(self) -> str:
        """Identifies the model's weights and tokenizer (see ModelSource.fingerprint)."""
        return self.source.fingerprint()

    @property
    def pooling(self) -> str:
        return self.source.pooling

    def encode(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """Embed `texts` into an (n, dimension) float32 array, rows in input order."""
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        prepared = [text.strip() for text in texts]
        if self.source.do_lower_case:
            prepared = [text.lower() for text in prepared]
        tokens = self.tokenizer(prepared, truncation=True, max_length=self.max_seq_length, padding=False)
        self.truncated += sum(1 for encoding in tokens.encodings if encoding.overflowing)
        ids = tokens["input_ids"]
        order = np.argsort([-len(row) for row in ids], kind="stable")
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        size = batch_size or self.batch_size
        for start in range(0, len(order), size):
            rows = order[start : start + size]
            out[rows] = self._encode_batch([ids[i] for i in rows])
        return out

    def _encode_batch(self, ids: list[list[int]]) -> np.ndarray:
        width = max(len(row) for row in ids)
        input_ids = torch.full((len(ids), width), self.tokenizer.pad_token_id or 0, dtype=torch.long)
        attention_mask = torch.zeros((len(ids), width), dtype=torch.long)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)] = torch.tensor(row)
            attention_mask[i, : len(row)] = 1
        all_layers = self.pooling in NEEDS_ALL_LAYERS
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if "token_type_ids" in self.tokenizer.model_input_names:
            inputs["token_type_ids"] = torch.zeros_like(input_ids)
        with torch.inference_mode():
            output = self.model(
                **{key: value.to(self.device) for key, value in inputs.items()}, output_hidden_states=all_layers
            )
            layers = output.hidden_states if all_layers else (output.last_hidden_state,)
            vectors = pool(self.pooling, layers, attention_mask.to(self.device))
            if self.source.normalize:
                vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
        return vectors.float().cpu().numpy()
