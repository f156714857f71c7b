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
from searchengine.model_transforms import apply_transforms, load_transforms, output_dimension
from searchengine.pooling import NEEDS_ALL_LAYERS, pool
from searchengine.prompt_pooling import PromptPooling


def default_device() -> str:
    """CUDA when PyTorch sees a GPU, CPU otherwise."""
    return "cuda" if torch.cuda.is_available() else "cpu"


class Encoder:
    """Turns texts into float32 sentence vectors, the way sentence-transformers would for the same model.

    Smart batching: texts are sorted by token count so each batch pads only to its own longest text, and
    vectors come back in input order. Texts longer than the model's limit are truncated and counted in
    `truncated`.

    pooling="prompt" (PromptBERT, searchengine.prompt_pooling) wraps each text in `template` (default: the model's
    prompt module, else 'This sentence : "[X]" means [MASK] .') and uses the [MASK] state; `denoise` subtracts the
    bare template's state. Either option implies prompt pooling.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        pooling: str | None = None,
        device: str | None = None,
        batch_size: int = 64,
        *,
        template: str | None = None,
        denoise: bool | None = None,
    ) -> None:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import transformers

        transformers.utils.logging.set_verbosity_error()
        transformers.utils.logging.disable_progress_bar()
        self.source: ModelSource = locate_model(model, pooling, template, denoise)
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
        self.prompt = PromptPooling(self.tokenizer, self.source.prompt) if self.source.prompt else None
        self.device = device or default_device()
        self.model.to(self.device).eval()
        limits = [self.source.max_seq_length, self.model.config.max_position_embeddings]
        if self.tokenizer.model_max_length < 1_000_000:
            limits.append(self.tokenizer.model_max_length)
        self.max_seq_length: int = min(limit for limit in limits if limit)
        self.batch_size = batch_size
        self.pooled_dimension: int = int(self.model.config.hidden_size)
        """Size of the pooled vectors, before the model's post-processing modules (Dense, Flow)."""
        self.transforms = [module.to(self.device) for module in load_transforms(self.source, self.pooled_dimension)]
        self.dimension: int = output_dimension(self.transforms[-1]) if self.transforms else self.pooled_dimension
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

    def encode(self, texts: Sequence[str], batch_size: int | None = None, *, pre_normalize: bool = False) -> np.ndarray:
        """Embed `texts` into an (n, dimension) float32 array, rows in input order.

        `pre_normalize`: return what the model's Normalize module would receive (pooled, then through the model's
        post-processing modules, not L2-normalised); what a new post-processing module is fitted on."""
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        prepared = [text.strip() for text in texts]
        if self.source.do_lower_case:
            prepared = [text.lower() for text in prepared]
        if self.prompt is not None:  # the sentence inside the template; only the sentence is truncated
            ids, truncated = self.prompt.tokenize(prepared, self.max_seq_length)
            self.truncated += truncated
        else:
            tokens = self.tokenizer(prepared, truncation=True, max_length=self.max_seq_length, padding=False)
            self.truncated += sum(1 for encoding in tokens.encodings if encoding.overflowing)
            ids = tokens["input_ids"]
        order = np.argsort([-len(row) for row in ids], kind="stable")
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        size = batch_size or self.batch_size
        for start in range(0, len(order), size):
            rows = order[start : start + size]
            out[rows] = self._encode_batch([ids[i] for i in rows], pre_normalize)
        return out

    def _encode_batch(self, ids: list[list[int]], pre_normalize: bool = False) -> np.ndarray:
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
            if self.prompt is not None:
                vectors = self.prompt.pool(self.model, output.last_hidden_state, attention_mask.to(self.device))
            else:
                vectors = pool(self.pooling, layers, attention_mask.to(self.device))
            vectors = apply_transforms(self.transforms, vectors)
            if self.source.normalize and not pre_normalize:
                vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
        return vectors.float().cpu().numpy()
