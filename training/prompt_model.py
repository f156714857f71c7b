"""A trainable PromptBERT encoder: SentenceModel's transformer with prompt pooling (searchengine.encoding.prompt_pooling)
instead of token pooling, any template per call (training uses two), saved with a prompt module so that
`searchengine index --model DIR` wraps texts in the same template."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import torch
from searchengine.training.sentence_model import SentenceModel

from searchengine.encoding.prompt_pooling import PromptPooling
from searchengine.encoding.prompt_template import (
    PROMPT_MODULE_FOLDER,
    PROMPT_MODULE_TYPE,
    PROMPT_POOLING,
    PromptConfig,
    write_prompt_module,
)


class PromptSentenceModel(SentenceModel):
    """Sentence vector = the last-layer state at the template's [MASK], minus the bare template's state when
    denoising. `prompt` is what encode() and the saved model use; embed_prompted() takes any template."""

    def __init__(
        self, base: str | Path = "default", prompt: PromptConfig | None = None, max_seq_length: int = 64
    ) -> None:
        # The base's own token pooling is replaced; "cls" only gets past SentenceModel's check of it.
        super().__init__(base, pooling="cls", max_seq_length=max_seq_length)
        self.pooling = PROMPT_POOLING
        self.prompt = prompt or PromptConfig()
        self._poolers: dict[str, PromptPooling] = {}

    def pooler(self, template: str) -> PromptPooling:
        """Prompted inputs and [MASK] pooling for `template`; no bias cache, since the weights change."""
        if template not in self._poolers:
            self._poolers[template] = PromptPooling(self.tokenizer, PromptConfig(template), cache=False)
        return self._poolers[template]

    def embed_prompted(
        self, texts: Sequence[str], template: str, denoise: bool, max_length: int | None = None
    ) -> torch.Tensor:
        """Vectors of `texts` inside `template` (truncating the text, never the template), with gradients."""
        pooler = self.pooler(template)
        prepared = [text.strip() for text in texts]
        if self.source.do_lower_case:
            prepared = [text.lower() for text in prepared]
        rows, _ = pooler.tokenize(prepared, max_length or self.max_seq_length)
        input_ids, attention_mask = pooler.pad(rows, self.tokenizer.pad_token_id or 0)
        input_ids, attention_mask = input_ids.to(self.device), attention_mask.to(self.device)
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if "token_type_ids" in self.tokenizer.model_input_names:
            inputs["token_type_ids"] = torch.zeros_like(input_ids)
        hidden = self.transformer(**inputs).last_hidden_state
        return pooler.pool(self.transformer, hidden, attention_mask, denoise=denoise)

    def embed_texts(self, texts: Sequence[str], max_length: int | None = None) -> torch.Tensor:
        return self.embed_prompted(texts, self.prompt.template, self.prompt.denoise, max_length)

    def forward(self, features: dict[str, torch.Tensor], position_ids: torch.Tensor | None = None) -> torch.Tensor:
        raise NotImplementedError("a prompt model embeds texts (embed_prompted / embed_texts), not token features")

    def save(self, directory: Path) -> None:
        """SentenceModel's layout with its Pooling module replaced by the prompt module (same place in
        modules.json), so searchengine finds the template; sentence-transformers cannot apply it (see
        searchengine.encoding.prompt_pooling) but loads the transformer."""
        directory = Path(directory)
        super().save(directory)
        modules = json.loads((directory / "modules.json").read_text(encoding="utf-8"))
        for module in modules:
            if module["type"].endswith(".Pooling"):
                shutil.rmtree(directory / module["path"], ignore_errors=True)
                module.update(path=PROMPT_MODULE_FOLDER, type=PROMPT_MODULE_TYPE)
        write_prompt_module(directory / PROMPT_MODULE_FOLDER, self.prompt)
        (directory / "modules.json").write_text(json.dumps(modules, indent=2) + "\n", encoding="utf-8")
