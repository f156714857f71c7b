"""PromptBERT's analysis of where sentence-embedding quality is lost (Jiang et al. 2022, "PromptBERT: Improving
BERT Sentence Embeddings with Prompts", section 3): sentence-level anisotropy and STS correlation of several
representations a transformer gives for the same sentences, among them the static token embedding average
with and without the tokens PromptBERT calls biased.

Representations (all from one forward pass over the same tokens, special tokens included, as the encoder
tokenizes them; "average" = mean over the sentence's non-padding tokens):

- static_avg: average of the input word embeddings (the embedding matrix rows of the token ids; no position
  or segment embeddings, no LayerNorm, no transformer layer).
- static_avg_unbiased: static_avg over the tokens that are not biased (see `biased_token_ids`); a sentence
  made only of biased tokens keeps all of its tokens (counted as `fallback_sentences`).
- embedding_layer_avg: average of the embedding layer's output (hidden_states[0]: word + position + segment
  embeddings after LayerNorm), the "first layer" of BERT-flow/SimCSE's first-last average.
- first_last_avg: average of (hidden_states[0] + last layer) / 2, the pooling mode of that name.
- last_avg: average of the last layer (what mean-pooling models, e.g. all-MiniLM-L6-v2, output before
  normalisation; normalisation does not change cosines).
- cls: the last layer's first ([CLS]) token.

These are the transformer's own representations: a model's prompt template, post-processing modules (Dense,
whitening, flow) and normalisation are not applied, whatever its configuration says.

Anisotropy (PromptBERT, after Ethayarajh 2019): the mean cosine similarity of randomly drawn pairs of
different sentences of the data; 1 = every vector points the same way, about 0 = isotropic.
"""

from __future__ import annotations

import gzip
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from searchengine.encoding.padding import padded
from searchengine.encoding.pooling import pool
from searchengine.errors import SearchEngineError
from searchengine.evaluation.labelled_data import RatedPair

REPRESENTATIONS = ("static_avg", "static_avg_unbiased", "embedding_layer_avg", "first_last_avg", "last_avg", "cls")
DEFAULT_TOP_FREQUENT = 36
"""How many of the data's most frequent tokens count as biased (PromptBERT removes its top 36)."""
BIAS_RULE = (
    "a token id is biased when it is one of the top_frequent most frequent token ids in the tokenized "
    "sentences (special tokens counted; ties broken by lower id), a special token, a WordPiece continuation "
    "piece (starts with '##'), made only of punctuation or symbol characters (Unicode categories P* and S*), "
    "or starts with an uppercase letter (none in an uncased vocabulary)"
)


def read_sentences(path: Path, limit: int | None = None) -> list[str]:
    """One sentence a line (plain or .gz), blank lines skipped; the first `limit` sentences when given."""
    path = Path(path)
    if not path.is_file():
        raise SearchEngineError(f"{path}: no such file")
    opener = gzip.open if path.suffix == ".gz" else open
    sentences: list[str] = []
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    sentences.append(line.strip())
                    if limit is not None and len(sentences) >= limit:
                        break
    except UnicodeDecodeError as exc:
        raise SearchEngineError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (OSError, EOFError) as exc:
        raise SearchEngineError(f"{path}: cannot read it ({exc})") from None
    if len(sentences) < 2:
        raise SearchEngineError(f"{path}: {len(sentences)} non-empty lines; anisotropy needs at least 2 sentences")
    return sentences


def anisotropy(vectors: np.ndarray, pairs: int | None = 100_000, seed: int = 0) -> float:
    """Mean cosine similarity of `pairs` random pairs of different rows (drawn with replacement, seeded).

    `pairs=None` or 0 gives the exact mean over all n(n-1) ordered pairs of different rows instead."""
    vectors = np.asarray(vectors, dtype=np.float64)
    count = vectors.shape[0]
    if count < 2:
        raise SearchEngineError(f"anisotropy needs at least 2 vectors, got {count}")
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    if not pairs:
        total = unit.sum(axis=0)
        self_similarity = float((unit * unit).sum())  # n, less any zero vectors
        return float((total @ total - self_similarity) / (count * (count - 1)))
    rng = np.random.default_rng(seed)
    first = rng.integers(0, count, size=pairs)
    second = rng.integers(0, count - 1, size=pairs)
    second += second >= first  # a different row, uniformly
    return float((unit[first] * unit[second]).sum(axis=1).mean())


@dataclass(frozen=True)
class BiasedTokens:
    ids: frozenset[int]
    frequent: list[str]
    """The top-frequent tokens of the data, most frequent first."""
    by_rule: dict[str, int]
    """How many vocabulary ids each rule marks (a token may match several)."""
    data_share: float
    """The share of the data's token occurrences that are biased."""


def _is_punctuation(token: str) -> bool:
    return bool(token) and all(unicodedata.category(char)[0] in "PS" for char in token)


def biased_token_ids(
    tokenizer,  # noqa: ANN001 (a Hugging Face fast tokenizer)
    token_ids: Sequence[Sequence[int]],
    top_frequent: int = DEFAULT_TOP_FREQUENT,
) -> BiasedTokens:
    """The biased tokens of PromptBERT section 3.2, by the rule in BIAS_RULE; `token_ids` = the tokenized data."""
    counts = Counter(token for row in token_ids for token in row)
    frequent = [token for token, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top_frequent]]
    vocabulary = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    rules = {
        "frequent": set(frequent),
        "special": set(tokenizer.all_special_ids),
        "subword": {i for i, token in enumerate(vocabulary) if token.startswith("##")},
        "punctuation": {i for i, token in enumerate(vocabulary) if _is_punctuation(token)},
        "uppercase": {i for i, token in enumerate(vocabulary) if token[:1].isupper()},
    }
    ids = frozenset().union(*rules.values())
    total = sum(counts.values())
    share = sum(n for token, n in counts.items() if token in ids) / total if total else 0.0
    return BiasedTokens(ids, tokenizer.convert_ids_to_tokens(frequent), {k: len(v) for k, v in rules.items()}, share)


@dataclass
class Representations:
    """Every representation of REPRESENTATIONS for a list of texts, rows in input order."""

    vectors: dict[str, np.ndarray]
    fallback_sentences: int = 0
    token_ids: list[list[int]] = field(default_factory=list, repr=False)


def tokenize(encoder, texts: Sequence[str]) -> list[list[int]]:  # noqa: ANN001
    """Token ids exactly as `encoder.encode` makes them (strip, lowercase if configured, truncate)."""
    prepared = [text.strip() for text in texts]
    if encoder.source.do_lower_case:
        prepared = [text.lower() for text in prepared]
    return encoder.tokenizer(prepared, truncation=True, max_length=encoder.max_seq_length, padding=False)["input_ids"]


def represent(
    encoder,  # noqa: ANN001 (a searchengine.encoding.encoder.Encoder)
    texts: Sequence[str],
    biased: frozenset[int] = frozenset(),
    batch_size: int | None = None,
) -> Representations:
    """One forward pass per batch (length-sorted, as the encoder does) giving every representation."""
    if encoder.backend != "torch":
        raise SearchEngineError(
            "the analysis reads every layer of the torch model: load the Encoder with backend='torch'"
        )
    ids = tokenize(encoder, texts)
    dimension = int(encoder.model.config.hidden_size)  # the transformer's, not the model's output size
    out = {name: np.empty((len(texts), dimension), dtype=np.float32) for name in REPRESENTATIONS}
    embedding = encoder.model.get_input_embeddings()
    is_biased = torch.zeros(embedding.weight.shape[0], dtype=torch.bool)
    is_biased[torch.tensor([token for token in biased if token < is_biased.shape[0]], dtype=torch.long)] = True
    is_biased = is_biased.to(encoder.device)
    order = np.argsort([-len(row) for row in ids], kind="stable")
    size = batch_size or encoder.batch_size
    fallback = 0
    for start in range(0, len(order), size):
        rows = order[start : start + size]
        batch = [ids[i] for i in rows]
        input_ids, mask = padded(batch, encoder.tokenizer.pad_token_id or 0)
        inputs = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in encoder.tokenizer.model_input_names:
            inputs["token_type_ids"] = torch.zeros_like(input_ids)
        inputs = {key: value.to(encoder.device) for key, value in inputs.items()}
        mask = inputs["attention_mask"]
        with torch.inference_mode():
            # pooled in fp32 whatever the model ran in, as the encoder pools
            layers = tuple(layer.float() for layer in encoder.model(**inputs, output_hidden_states=True).hidden_states)
            static = embedding(inputs["input_ids"]).float()
            unbiased = mask * ~is_biased[inputs["input_ids"]]
            empty = unbiased.sum(dim=1) == 0
            fallback += int(empty.sum())
            unbiased = torch.where(empty.unsqueeze(1), mask, unbiased)
            results = {
                "static_avg": pool("mean", (static,), mask),
                "static_avg_unbiased": pool("mean", (static,), unbiased),
                "embedding_layer_avg": pool("mean", (layers[0],), mask),
                "first_last_avg": pool("first_last_avg", layers, mask),
                "last_avg": pool("mean", layers, mask),
                "cls": pool("cls", layers, mask),
            }
        for name, vectors in results.items():
            out[name][rows] = vectors.float().cpu().numpy()
    return Representations(out, fallback, ids)


@dataclass
class AnalysisReport:
    sentences: int
    pairs: int
    seed: int
    biased: BiasedTokens
    fallback_sentences: int
    anisotropy: dict[str, float]
    sts_spearman: dict[str, float] | None = None
    sts_pairs: int = 0
    sts_fallback_sentences: int = 0

    def as_dict(self) -> dict:
        rows: dict[str, dict[str, float]] = {name: {"anisotropy": self.anisotropy[name]} for name in REPRESENTATIONS}
        for name, spearman in (self.sts_spearman or {}).items():
            rows[name]["sts_spearman"] = spearman
        report = {
            "sentences": self.sentences,
            "anisotropy_pairs": self.pairs or "all",
            "seed": self.seed,
            "representations": rows,
            "biased_tokens": {
                "rule": BIAS_RULE,
                "top_frequent": self.biased.frequent,
                "vocabulary_ids_by_rule": self.biased.by_rule,
                "vocabulary_ids": len(self.biased.ids),
                "share_of_data_tokens": self.biased.data_share,
                "fallback_sentences": self.fallback_sentences,
            },
        }
        if self.sts_spearman:
            report.update({"sts_pairs": self.sts_pairs, "sts_fallback_sentences": self.sts_fallback_sentences})
        return report


def analyze(
    encoder,  # noqa: ANN001 (a searchengine.encoding.encoder.Encoder)
    sentences: Sequence[str],
    sts_pairs: Sequence[RatedPair] | None = None,
    pairs: int | None = 100_000,
    seed: int = 0,
    top_frequent: int = DEFAULT_TOP_FREQUENT,
) -> AnalysisReport:
    """Anisotropy over `sentences` (and STS Spearman over `sts_pairs`) for every representation."""
    from searchengine.evaluation.sts import sts_spearman

    ids = tokenize(encoder, sentences)
    biased = biased_token_ids(encoder.tokenizer, ids, top_frequent)
    data = represent(encoder, sentences, biased.ids)
    report = AnalysisReport(
        len(sentences),
        pairs or 0,
        seed,
        biased,
        data.fallback_sentences,
        {name: anisotropy(data.vectors[name], pairs, seed) for name in REPRESENTATIONS},
    )
    if sts_pairs:
        texts = list(dict.fromkeys(text for pair in sts_pairs for text in (pair.first, pair.second)))
        sts = represent(encoder, texts, biased.ids)
        row = {text: i for i, text in enumerate(texts)}

        def lookup(name: str):  # noqa: ANN202
            return lambda batch: sts.vectors[name][[row[text] for text in batch]]

        report.sts_spearman = {name: sts_spearman(lookup(name), sts_pairs) for name in REPRESENTATIONS}
        report.sts_pairs = len(sts_pairs)
        report.sts_fallback_sentences = sts.fallback_sentences
    return report
