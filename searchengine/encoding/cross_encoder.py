"""Cross-encoder: both sentences of a pair go through the transformer in one pass and a single-output head scores
them. Slower than comparing two stored vectors, usually more accurate: reranking rescoring a bi-encoder's top
candidates is what it is for.

Loads a transformers `AutoModelForSequenceClassification` directory with one output (num_labels = 1): the models
`searchengine train cross-encoder` writes, and any sentence-transformers CrossEncoder directory (its v2-v5 layout, a
plain Hugging Face directory whose config.json may name the activation; and the v6 layout, the same files plus
modules.json and config_sentence_transformers.json), or a Hub id of one (downloaded once, for users who are online).

Scores are the model's activation applied to the logit, as sentence-transformers' `CrossEncoder.predict` does:
sigmoid for one-output models (so scores lie in 0..1) unless the model's configuration names another activation
(e.g. `torch.nn.Identity` for the raw logits of MS MARCO rerankers)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

from searchengine.encoding.hf_loading import load_pretrained, model_directory
from searchengine.errors import SearchEngineError

Pair = tuple[str, str]

SIGMOID = "torch.nn.modules.activation.Sigmoid"
IDENTITY = "torch.nn.modules.linear.Identity"

_FIX = (
    "rerank with a cross-encoder: one you trained with `searchengine train cross-encoder`, or a "
    "sentence-transformers CrossEncoder directory or Hub id"
)


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


class CrossEncoder:
    """Scores sentence pairs with a one-output sequence-classification model.

    Smart batching: pairs are sorted by token count so each batch pads only to its own longest pair; scores
    come back in input order. Pairs longer than `max_length` tokens are truncated longest-first (the longer
    sentence loses tokens first), as sentence-transformers does.

    >>> cross = CrossEncoder("my-cross-encoder")
    >>> cross.score([("a cat sat on the mat", "a kitten sat on a rug")])
    array([0.83...], dtype=float32)
    """

    def __init__(
        self,
        model: str | Path,
        device: str | None = None,
        batch_size: int = 32,
        max_length: int | None = None,
    ) -> None:
        self.name = str(model)
        self.path = _model_directory(model)
        self.config = _check_cross_encoder(self.path)
        self.tokenizer, self.model = load_pretrained(
            self.path, "the cross-encoder", "AutoModelForSequenceClassification"
        )
        self.device = device or default_device()
        self.model.to(self.device).eval()
        self.activation_name, self._activation = _activation(self.path, self.config)
        if max_length is None:
            limits = [self.model.config.max_position_embeddings]
            if self.tokenizer.model_max_length < 1_000_000:
                limits.append(self.tokenizer.model_max_length)
            st_config = _read_json(self.path / "sentence_bert_config.json")
            if st_config.get("max_seq_length"):
                limits.append(int(st_config["max_seq_length"]))
            max_length = min(limits)
        self.max_length = int(max_length)
        self.batch_size = batch_size

    @property
    def applies_sigmoid(self) -> bool:
        """True when scores are sigmoid(logit), in 0..1 (the default for one-output models)."""
        return self.activation_name == SIGMOID

    def score(self, pairs: Sequence[Pair], batch_size: int | None = None) -> np.ndarray:
        """One float32 score per (first, second) pair, in input order; higher means more similar/relevant."""
        logits = score_pairs(
            self.model, self.tokenizer, pairs, self.max_length, batch_size or self.batch_size, self.device
        )
        return self._activation(torch.from_numpy(logits)).numpy().astype(np.float32)

    def rank(self, query: str, texts: Sequence[str]) -> list[tuple[int, float]]:
        """(index into texts, score) for every text, best first; ties keep the input order."""
        scores = self.score([(query, text) for text in texts])
        order = np.argsort(-scores, kind="stable")
        return [(int(i), float(scores[i])) for i in order]

    def __repr__(self) -> str:
        return f"CrossEncoder({self.name!r}, device={self.device!r}, max_length={self.max_length})"


@torch.inference_mode()
def score_pairs(
    model: torch.nn.Module,
    tokenizer: object,
    pairs: Sequence[Pair],
    max_length: int,
    batch_size: int = 32,
    device: str | torch.device | None = None,
) -> np.ndarray:
    """The raw logit (first output) of `model` for every pair, float32, in input order, in length-sorted
    batches. The model is put in eval mode for the call and restored after (training evaluates with this)."""
    if len(pairs) == 0:
        return np.zeros(0, dtype=np.float32)
    for number, pair in enumerate(pairs, start=1):
        if len(pair) != 2 or not all(isinstance(text, str) for text in pair):
            raise SearchEngineError(f"pair number {number} is not two texts: {pair!r}")
    tokens = tokenizer(
        [first for first, _ in pairs],
        [second for _, second in pairs],
        truncation="longest_first",
        max_length=max_length,
        padding=False,
    )
    order = np.argsort([-len(ids) for ids in tokens["input_ids"]], kind="stable")
    device = device or next(model.parameters()).device
    out = np.empty(len(pairs), dtype=np.float32)
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            batch = tokenizer.pad({key: [tokens[key][i] for i in rows] for key in tokens}, return_tensors="pt")
            batch = {key: value.to(device) for key, value in batch.items()}
            out[rows] = model(**batch).logits[:, 0].float().cpu().numpy()
    finally:
        model.train(was_training)
    return out


def _model_directory(model: str | Path) -> Path:
    if str(model) in ("", "default"):
        raise SearchEngineError(f"there is no bundled cross-encoder; {_FIX}")
    path = Path(model).expanduser()
    if path.exists() and not path.is_dir():
        raise SearchEngineError(f"{model} is a file, not a cross-encoder directory; {_FIX}")
    if not path.exists() and (isinstance(model, Path) or str(model).startswith((".", "/", "~"))):
        raise SearchEngineError(f"cross-encoder directory {model} does not exist; {_FIX}")
    try:
        return model_directory(str(model))
    except SearchEngineError as exc:
        raise SearchEngineError(f"{exc} (looking for a cross-encoder)") from None


def _read_json(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SearchEngineError(f"cannot read {path}: {exc}") from None
    return value if isinstance(value, dict) else {}


def _check_cross_encoder(path: Path) -> dict:
    """config.json of a one-output sequence-classification model, or a SearchEngineError naming the fix."""
    st_config = _read_json(path / "config_sentence_transformers.json")
    model_type = st_config.get("model_type")
    if model_type == "SentenceTransformer" or (path / "1_Pooling").is_dir():
        raise SearchEngineError(
            f"{path} is a sentence encoder (bi-encoder: it embeds one text at a time), not a cross-encoder; {_FIX}"
        )
    if model_type not in (None, "CrossEncoder"):
        raise SearchEngineError(f"{path} is a sentence-transformers {model_type} model, not a cross-encoder; {_FIX}")
    modules = path / "modules.json"
    if modules.is_file():
        try:
            listed = json.loads(modules.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SearchEngineError(f"cannot read {modules}: {exc}") from None
        kinds = [str(module.get("type", "")).rsplit(".", 1)[-1] for module in listed]
        if kinds != ["Transformer"] or listed[0].get("path", "") != "":
            raise SearchEngineError(
                f"{modules} lists modules {kinds}; searchengine runs cross-encoders made of one Transformer "
                f"module at the directory root; {_FIX}"
            )
    if not (path / "config.json").is_file():
        raise SearchEngineError(f"{path} is not a model directory (no config.json); {_FIX}")
    config = _read_json(path / "config.json")
    architectures = config.get("architectures") or []
    if not any(str(name).endswith("ForSequenceClassification") for name in architectures):
        found = ", ".join(architectures) or "no architecture"
        raise SearchEngineError(
            f"{path} is not a cross-encoder: its config.json names {found}, not a ...ForSequenceClassification "
            f"model with one output; {_FIX}"
        )
    labels = config.get("num_labels") or len(config.get("id2label") or {}) or 2
    if labels != 1:
        raise SearchEngineError(
            f"{path} is a classifier with {labels} outputs, not a cross-encoder with one score; {_FIX}"
        )
    return config


def _activation(path: Path, config: dict) -> tuple[str, Callable[[torch.Tensor], torch.Tensor]]:
    """The activation sentence-transformers would apply: named in config_sentence_transformers.json (v6),
    config.json's "sentence_transformers" (v4, v5) or "sbert_ce_default_activation_function" (older), else
    sigmoid. Like sentence-transformers without trust_remote_code, only torch activations are honoured."""
    named = (
        _read_json(path / "config_sentence_transformers.json").get("activation_fn")
        or (config.get("sentence_transformers") or {}).get("activation_fn")
        or config.get("sbert_ce_default_activation_function")
    )
    if isinstance(named, str) and named.startswith("torch.") and named != SIGMOID:
        module_name, _, class_name = named.rpartition(".")
        try:
            import importlib

            return named, getattr(importlib.import_module(module_name), class_name)()
        except (ImportError, AttributeError, TypeError):
            raise SearchEngineError(f"{path}: cannot make the activation {named!r} its configuration names") from None
    return SIGMOID, torch.sigmoid
