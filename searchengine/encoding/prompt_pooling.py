"""PromptBERT pooling (Jiang et al. 2022): wrap each sentence in a template such as
`This sentence : "[X]" means [MASK] .` and use the last-layer hidden state at [MASK] as the sentence vector;
optionally subtract the template's own bias (template denoising).

Inputs are built the way the authors' code (kongds/Prompt-BERT) builds them: the template's text before [X] and
after [X] and the sentence are tokenized separately, then joined as [CLS] prefix sentence suffix [SEP]. Only the
sentence is truncated, never the template, so [MASK] is always in the input.

Template denoising: for a sentence of n tokens, the bare template ([CLS] prefix suffix [SEP], sentence removed)
is run with the position ids its tokens have in the full input: 0..h-1 for [CLS] and the prefix (h tokens), then
h+n.. for the suffix and [SEP]. Its [MASK] state is the bias subtracted from the sentence's [MASK] state. It
depends only on n (and the weights), so an encoder caches it per length.

sentence-transformers cannot apply such a template by itself: its modules see token ids only after tokenization,
and its `prompts` can only prepend text, not append the suffix that holds [MASK]. A model directory with this
module is therefore for searchengine: `SentenceTransformer(DIR)` refuses it (the module class is not part of
sentence-transformers), while its transformer weights and tokenizer load as usual in sentence-transformers
(`models.Transformer(DIR)`) and transformers (`AutoModel.from_pretrained(DIR)`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from searchengine.encoding.padding import padded
from searchengine.encoding.prompt_template import MASK_SLOT, PromptConfig
from searchengine.errors import SearchEngineError


class PromptPooling:
    """Builds prompted inputs for one tokenizer and template, and pools the [MASK] states of a transformer's output.

    cache: keep the template-denoising bias per sentence length. Right for an encoder whose weights are frozen;
    training passes cache=False so the bias follows the weights (and carries gradients)."""

    def __init__(self, tokenizer, config: PromptConfig, cache: bool = True) -> None:  # noqa: ANN001 (any HF tokenizer)
        self.config = config
        self.cache = cache
        self._bias: dict[int, torch.Tensor] = {}
        mask_token, mask_id = tokenizer.mask_token, tokenizer.mask_token_id
        if mask_token is None or mask_id is None:
            raise SearchEngineError("prompt pooling needs a tokenizer with a mask token; this model's has none")
        empty = tokenizer("")["input_ids"]
        if len(empty) != 2:
            raise SearchEngineError(
                "prompt pooling needs a tokenizer that wraps a text in one start and one end token (BERT's [CLS] "
                f"and [SEP], RoBERTa's <s> and </s>); this one adds {len(empty)}"
            )
        prefix = config.prefix.replace(MASK_SLOT, mask_token).strip()
        suffix = config.suffix.replace(MASK_SLOT, mask_token).strip()
        self.head: list[int] = tokenizer(prefix)["input_ids"][:-1]
        """[CLS] and the template's tokens before the sentence."""
        self.tail: list[int] = tokenizer(suffix)["input_ids"][1:]
        """The template's tokens after the sentence, and [SEP]."""
        in_head, in_tail = self.head.count(mask_id), self.tail.count(mask_id)
        if in_head + in_tail != 1:
            raise SearchEngineError(
                f"the template {config.template!r} tokenizes to {in_head + in_tail} mask tokens; its {MASK_SLOT} "
                "must stay one token"
            )
        self.mask_in_tail = in_tail == 1
        self.mask_offset = self.tail.index(mask_id) if self.mask_in_tail else self.head.index(mask_id)
        """[MASK]'s index in the tail (counted from the sentence's end) or in the head."""
        self._tokenizer = tokenizer
        self._token_types = "token_type_ids" in tokenizer.model_input_names

    @property
    def template_length(self) -> int:
        """Tokens the template adds around a sentence, [CLS] and [SEP] included."""
        return len(self.head) + len(self.tail)

    def tokenize(self, texts: Sequence[str], max_length: int) -> tuple[list[list[int]], int]:
        """Token ids of each text inside the template, at most `max_length` tokens each (the sentence is cut,
        the template never), and how many texts were cut."""
        budget = max_length - self.template_length
        if budget < 1:
            raise SearchEngineError(
                f"the template {self.config.template!r} takes {self.template_length} tokens, leaving no room for the "
                f"sentence within the model's {max_length}-token limit; use a shorter template or a longer limit"
            )
        # one token past the budget tells a cut text apart (transformers 5.17 records no overflow without special
        # tokens, so `encoding.overflowing` counted none there)
        tokens = self._tokenizer(list(texts), add_special_tokens=False, truncation=True, max_length=budget + 1)
        truncated = sum(1 for ids in tokens["input_ids"] if len(ids) > budget)
        return [self.head + ids[:budget] + self.tail for ids in tokens["input_ids"]], truncated

    def pad(self, rows: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(input_ids, attention_mask) of `rows`, padded on the right to the longest."""
        return padded(rows, pad_id)

    def sentence_lengths(self, attention_mask: torch.Tensor) -> torch.Tensor:
        """Tokens of each row's sentence (what the template left of the row's length)."""
        return attention_mask.sum(1) - self.template_length

    def mask_positions(self, attention_mask: torch.Tensor) -> torch.Tensor:
        """Index of [MASK] in each row of right-padded prompted input."""
        if self.mask_in_tail:
            return attention_mask.sum(1) - len(self.tail) + self.mask_offset
        return torch.full((len(attention_mask),), self.mask_offset, dtype=torch.long, device=attention_mask.device)

    def pool(
        self,
        transformer: torch.nn.Module,
        last_hidden: torch.Tensor,
        attention_mask: torch.Tensor,
        denoise: bool | None = None,
    ) -> torch.Tensor:
        """The [MASK] states (batch, dim) of `last_hidden`, minus the template bias when denoising (default: the
        config's choice); `transformer` is the model that produced `last_hidden`, run again on the bare template."""
        rows = torch.arange(len(last_hidden), device=last_hidden.device)
        vectors = last_hidden[rows, self.mask_positions(attention_mask).to(last_hidden.device)]
        if self.config.denoise if denoise is None else denoise:
            vectors = vectors - self.template_bias(transformer, self.sentence_lengths(attention_mask))
        return vectors

    def template_bias(self, transformer: torch.nn.Module, lengths: torch.Tensor) -> torch.Tensor:
        """The bare template's [MASK] state for each sentence length in `lengths` (batch,) -> (batch, dim)."""
        wanted = sorted(set(int(n) for n in lengths.tolist()))
        missing = [n for n in wanted if n not in self._bias] if self.cache else wanted
        computed: dict[int, torch.Tensor] = {}
        if missing:
            states = self._bare_template_states(transformer, missing)
            computed = dict(zip(missing, states))
            if self.cache:
                self._bias.update(computed)
        table = torch.stack([computed[n] if n in computed else self._bias[n] for n in wanted])
        index = {n: i for i, n in enumerate(wanted)}
        return table[torch.tensor([index[int(n)] for n in lengths.tolist()], device=table.device)]

    def bare_template_position_ids(self, lengths: Sequence[int]) -> torch.Tensor:
        """Position ids of the bare template for sentences of `lengths` tokens: the suffix is shifted by n, as it
        sits in the full input."""
        positions = torch.arange(self.template_length).repeat(len(lengths), 1)
        positions[:, len(self.head) :] += torch.tensor(list(lengths), dtype=torch.long).unsqueeze(1)
        return positions

    def _bare_template_states(self, transformer: torch.nn.Module, lengths: list[int]) -> torch.Tensor:
        device = next(transformer.parameters()).device
        input_ids = torch.tensor([self.head + self.tail] * len(lengths), dtype=torch.long, device=device)
        position_ids = self.bare_template_position_ids(lengths).to(device)
        inputs = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids), "position_ids": position_ids}
        if self._token_types:
            inputs["token_type_ids"] = torch.zeros_like(input_ids)
        output = transformer(**inputs)
        mask_index = len(self.head) + self.mask_offset if self.mask_in_tail else self.mask_offset
        return output.last_hidden_state[:, mask_index]
