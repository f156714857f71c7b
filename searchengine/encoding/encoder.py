"""Sentence encoder: tokenize, smart-batch, run the transformer, pool, normalise."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
import torch

from searchengine.encoding.backend import Backend, registered_backends, resolve_runtime, runs_on_cpu_only
from searchengine.encoding.hf_loading import load_pretrained, tokenize_on_every_core
from searchengine.encoding.long_texts import truncated_encodings
from searchengine.encoding.model_source import ModelSource, Pooling, locate_model
from searchengine.encoding.model_transforms import apply_transforms, load_transforms, output_dimension
from searchengine.encoding.padding import padded
from searchengine.encoding.passage_headings import Headings, fit_headings
from searchengine.encoding.passages import Span, Structure, check_window, passage_spans
from searchengine.encoding.pooling import NEEDS_ALL_LAYERS, pool
from searchengine.encoding.precision import BULK_TEXTS, Precision, apply_precision, bulk_precision
from searchengine.encoding.prompt_pooling import PromptPooling
from searchengine.encoding.speed import (
    EncoderSpeed,  # noqa: F401 (its public home before speed.py)
    texts_per_pass,
)
from searchengine.errors import SearchEngineError

TOKENIZE_SLICE = 64
TOKENIZE_SLICE_CHARS = 16_384
"""Texts (and characters, past a slice's first text) tokenized per hold of the encoder's lock, which a server's
queries wait for. Tokenizing a whole call at once held it for all of a write's texts, seconds for a large write;
by slices the longest hold is a small fraction of a second, for a little more total time (benchmarks/serving/encoder_lock.py,
measured in docs/benchmarks.md#serving)."""


def checked_texts(texts: object) -> list[str]:
    """`texts` as `encode` takes them, as a list; refused in one line where they are one text rather than a list of
    them (a str was embedded character by character), not a list at all, or hold something other than a str."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):
        shown = type(texts).__name__
        raise SearchEngineError(f"give the texts to encode as a list of str, such as ['a text'], not a {shown}")
    texts = list(texts)
    for number, text in enumerate(texts, start=1):
        if not isinstance(text, str):
            raise SearchEngineError(f"text number {number} to encode is a {type(text).__name__}, not a str")
    return texts


def _slices(texts: Sequence[str]) -> Iterator[slice]:
    """Consecutive slices of `texts`, each of at most TOKENIZE_SLICE texts and TOKENIZE_SLICE_CHARS characters
    (or one longer text)."""
    start = 0
    while start < len(texts):
        stop, characters = start + 1, len(texts[start])
        while (
            stop < len(texts)
            and stop - start < TOKENIZE_SLICE
            and characters + len(texts[stop]) <= TOKENIZE_SLICE_CHARS
        ):
            characters += len(texts[stop])
            stop += 1
        yield slice(start, stop)
        start = stop


DEFAULT_BATCH_SIZE = {"cpu": 64, "cuda": 1024}
"""Texts per forward pass where none is asked for. On a GPU, batches of 64 leave it waiting on the host: 1024 encodes
short, medium and long texts faster, with the same vectors (benchmarks/encoding/gpu_encoding.py, measured in
docs/benchmarks.md#gpu)."""


def default_device(backend: str = "auto", precision: str = "auto") -> str:
    """CUDA when PyTorch sees a GPU and the runtime asked for runs there; the CPU otherwise, and for the CPU-only
    runtimes (the onnx and openvino backends, searchengine.encoding.backend.runs_on_cpu_only, and int8), so that asking
    for one on a GPU machine runs it."""
    if runs_on_cpu_only(backend) or precision == "int8":
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def default_batch_size(device: str) -> int:
    """DEFAULT_BATCH_SIZE for `device` ("cuda:1" counts as CUDA)."""
    return DEFAULT_BATCH_SIZE["cuda" if device.startswith("cuda") else "cpu"]


class Encoder:
    """Turns texts into float32 sentence vectors, the way sentence-transformers would for the same model.

    Smart batching: texts are sorted by token count so each batch pads only to its own longest text, and
    vectors come back in input order (`smart_batching=False` keeps input order, for measuring what it saves).
    Texts longer than the model's limit are truncated and counted in `truncated`.

    Speed options (measured in docs/benchmarks.md): `precision` ("auto", "fp32", "bf16", "fp16", "int8"; see
    searchengine.encoding.precision), `backend` ("torch"; "onnx" for ONNX Runtime, the optional `onnx` extra;
    "openvino", the optional `openvino` extra, whose int8 is calibrated; "auto": onnx where it can run this model
    and precision and is installed, the fastest choice measured that keeps quality, else torch), `threads`
    (intra-op threads while encoding; default: the library's own choice) and `batch_size` (default:
    DEFAULT_BATCH_SIZE for the device). `device`: "cpu", "cuda" or "cuda:N"; default: default_device.

    pooling="prompt" (PromptBERT, searchengine.encoding.prompt_pooling) wraps each text in `template` (default: the model's
    prompt module, else 'This sentence : "[X]" means [MASK] .') and uses the [MASK] state; `denoise` subtracts the
    bare template's state. Either option implies prompt pooling.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        pooling: Pooling | None = None,
        device: str | None = None,
        batch_size: int | None = None,
        *,
        template: str | None = None,
        denoise: bool | None = None,
        precision: Precision = "auto",
        backend: Backend = "auto",
        threads: int | None = None,
        smart_batching: bool = True,
    ) -> None:
        self.source: ModelSource = locate_model(model, pooling, template, denoise)
        path = self.source.transformer_path
        self.tokenizer, self.model = load_pretrained(path, "the model")
        if not self.tokenizer.is_fast:
            raise SearchEngineError(f"{path} has no fast tokenizer (tokenizer.json); searchengine needs one")
        self.prompt = PromptPooling(self.tokenizer, self.source.prompt) if self.source.prompt else None
        self.device = device or default_device(backend, precision)
        self.model.to(self.device).eval()
        if self.device.startswith("cuda"):
            tokenize_on_every_core()
        if threads is not None and threads < 1:
            raise SearchEngineError(f"threads must be at least 1, not {threads}")
        self.threads = threads
        self.smart_batching = smart_batching
        self.precision: str
        """The concrete precision the transformer runs in ("auto" resolved for this device and backend)."""
        self.backend: str
        """The backend the transformer runs in ("auto" resolved)."""
        self.precision, self.backend = resolve_runtime(precision, backend, self.device, self.pooling)
        self.bulk_precision: str | None = bulk_precision(
            (precision, backend), (self.precision, self.backend), self.device
        )
        """The precision torch encodes calls of BULK_TEXTS texts or more in, where that beats the runtime above for
        them (bf16 on a CPU with AVX512-BF16 or AMX; see searchengine.encoding.precision); None: one runtime."""
        limits = [self.source.max_seq_length, self.model.config.max_position_embeddings]
        if self.tokenizer.model_max_length < 1_000_000:
            limits.append(self.tokenizer.model_max_length)
        self.max_seq_length: int = min(limit for limit in limits if limit)
        self.batch_size: int = texts_per_pass(batch_size, default_batch_size(self.device))
        self.pooled_dimension: int = int(self.model.config.hidden_size)
        """Size of the pooled vectors, before the model's post-processing modules (Dense, Flow)."""
        self.transforms = [module.to(self.device) for module in load_transforms(self.source, self.pooled_dimension)]
        self.dimension: int = output_dimension(self.transforms[-1]) if self.transforms else self.pooled_dimension
        self.truncated = 0
        self._lock = threading.Lock()
        """Serialises tokenizing, and each forward pass of a runtime that is not safe to run from several threads
        at once (`runs_concurrently`): the fast tokenizer is not safe to share between threads. Held per batch,
        so a long `encode` in one thread (a server adding documents) lets short ones from other threads (its
        queries) in between; ONNX Runtime passes run side by side, so a query need not wait for a batch."""
        torch_model = self.model  # wrapped first (an export reads fp32 weights), then cast for bulk calls
        runtime = registered_backends()[self.backend]
        self.model = runtime.load(self)
        self._torch_runs = runtime.computes_in_torch
        """Whether the main runtime computes in torch (see _threads)."""
        self._bulk_model: torch.nn.Module | None = None
        if self.bulk_precision is not None:
            self._bulk_model = apply_precision(torch_model, self.bulk_precision)

    @property
    def input_names(self) -> list[str]:
        """The inputs the transformer takes, as a backend feeds them."""
        names = ["input_ids", "attention_mask"]
        return names + ["token_type_ids"] if "token_type_ids" in self.tokenizer.model_input_names else names

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

    @property
    def text_tokens(self) -> int:
        """Tokens of text one vector holds: the model's limit less its special tokens (and, for prompt pooling,
        the template's tokens)."""
        if self.prompt is not None:
            return self.max_seq_length - self.prompt.template_length
        return self.max_seq_length - self.tokenizer.num_special_tokens_to_add(pair=False)

    def passage_spans(
        self,
        texts: Sequence[str],
        tokens: int | Sequence[int],
        overlap: int,
        structures: Sequence[Structure | None] | None = None,
    ) -> list[list[Span]]:
        """For each text, the character spans of its passages of at most `tokens` tokens (one window for all, or
        one per text; at most `text_tokens`, to fit the model), consecutive ones sharing up to `overlap`, or cut
        along the text's structure where one is given (searchengine.encoding.passages): one span, the whole text,
        when it fits."""
        check_window(tokens, self.text_tokens)
        spans: list[list[Span]] = []
        for part in _slices(texts):  # the lock per slice: see TOKENIZE_SLICE
            with self._lock:
                spans += passage_spans(
                    self.tokenizer,
                    texts[part],
                    tokens if isinstance(tokens, int) else tokens[part],
                    overlap,
                    None if structures is None else structures[part],
                )
        return spans

    def fit_headings(
        self, headings_of: Sequence[Headings], tokens: int
    ) -> tuple[list[int], list[tuple[tuple[int, str], ...]]]:
        """Each text's passage window and headings, cut to fit (searchengine.encoding.passage_headings)."""
        with self._lock:
            return fit_headings(self.tokenizer, headings_of, tokens)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text as `encode` prepares it, special tokens left out (compare with `text_tokens`, which
        `encode` truncates to); safe beside `encode` in other threads. What an API bills and bounds texts by."""
        prepared = [text.strip().lower() if self.source.do_lower_case else text.strip() for text in texts]
        with self._lock:
            return [len(ids) for ids in self.tokenizer(prepared, add_special_tokens=False)["input_ids"]]

    def encode(
        self, texts: Sequence[str], batch_size: int | None = None, *, pre_normalize: bool = False, bulk: bool = True
    ) -> np.ndarray:
        """Embed `texts` into an (n, dimension) float32 array, rows in input order. Safe to call from several
        threads at once (they take turns batch by batch).

        `pre_normalize`: return what the model's Normalize module would receive (pooled, then through the model's
        post-processing modules, not L2-normalised); what a new post-processing module is fitted on.
        `bulk`: where the encoder has a bulk runtime (`bulk_precision`), a call whose batches hold BULK_TEXTS texts
        or more runs in it; False keeps every call on the main runtime (see encode_queries)."""
        texts = checked_texts(texts)
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        prepared = [text.strip() for text in texts]
        if self.source.do_lower_case:
            prepared = [text.lower() for text in prepared]
        ids: list[list[int]] = []
        for part in _slices(prepared):  # the lock per slice: see TOKENIZE_SLICE
            with self._lock:
                ids += self._tokenize(prepared[part])
        if self.smart_batching:
            order = np.argsort([-len(row) for row in ids], kind="stable")
        else:
            order = np.arange(len(ids))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        size = texts_per_pass(batch_size, self.batch_size)
        bulk = bulk and self._bulk_model is not None and min(len(texts), size) >= BULK_TEXTS
        model = self._bulk_model if bulk else self.model
        with self._threads(torch_runs=bulk or self._torch_runs):
            for start in range(0, len(order), size):
                rows = order[start : start + size]
                with contextlib.nullcontext() if getattr(model, "runs_concurrently", False) else self._lock:
                    out[rows] = self._encode_fitting([ids[i] for i in rows], pre_normalize, model)
        return out

    def _encode_fitting(self, ids: list[list[int]], pre_normalize: bool, model: torch.nn.Module) -> np.ndarray:
        """`_encode_batch`, split in halves while a GPU runs out of memory for it (a large default batch of long
        texts on a small GPU); a clear error where one text alone does not fit."""
        try:
            return self._encode_batch(ids, pre_normalize, model)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            if len(ids) == 1:
                raise SearchEngineError(
                    f"the GPU ({self.device}) has too little free memory for one text of {len(ids[0])} tokens; "
                    "free it, or run on the CPU (CUDA_VISIBLE_DEVICES= hides the GPU)"
                ) from None
        half = len(ids) // 2
        return np.concatenate(
            [
                self._encode_fitting(ids[:half], pre_normalize, model),
                self._encode_fitting(ids[half:], pre_normalize, model),
            ]
        )

    def encode_queries(self, texts: Sequence[str], batch_size: int | None = None) -> np.ndarray:
        """`encode` on the main runtime only: a query gets the same vector whether it comes alone or in a batch of
        many (and its hits the same scores, to float rounding: searchengine.indexer.vectors.exact_batches). `batch_size`:
        texts per forward pass (default the encoder's)."""
        return self.encode(texts, batch_size, bulk=False)

    def _tokenize(self, texts: list[str]) -> list[list[int]]:
        """Token ids per text, cut to the model's limit (counted in `truncated`)."""
        if self.prompt is not None:  # the sentence inside the template; only the sentence is truncated
            ids, truncated = self.prompt.tokenize(texts, self.max_seq_length)
            self.truncated += truncated
            return ids
        encodings = truncated_encodings(
            lambda batch: self.tokenizer(batch, truncation=True, max_length=self.max_seq_length, padding=False).encodings,
            texts,
            self.max_seq_length,
            keeps_start=self.tokenizer.truncation_side == "right",
        )
        self.truncated += sum(1 for encoding in encodings if encoding.overflowing)
        return [encoding.ids for encoding in encodings]

    @contextlib.contextmanager
    def _threads(self, torch_runs: bool) -> Iterator[None]:
        """torch's intra-op thread count set to `threads` while torch encodes, restored after (it is process-wide)."""
        if self.threads is None or not torch_runs:  # ONNX Runtime's session has its own setting
            yield
            return
        before = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    def _encode_batch(self, ids: list[list[int]], pre_normalize: bool, model: torch.nn.Module) -> np.ndarray:
        """One batch through `model` (the main or the bulk runtime), pooled, transformed and normalised."""
        input_ids, attention_mask = padded(ids, self.tokenizer.pad_token_id or 0)
        all_layers = self.pooling in NEEDS_ALL_LAYERS
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if "token_type_ids" in self.input_names:
            inputs["token_type_ids"] = torch.zeros_like(input_ids)
        with torch.inference_mode():
            output = model(
                **{key: value.to(self.device) for key, value in inputs.items()}, output_hidden_states=all_layers
            )
            layers = output.hidden_states if all_layers else (output.last_hidden_state,)
            layers = tuple(layer.float() for layer in layers)  # pool in fp32 whatever the model ran in
            if self.prompt is not None:
                vectors = self.prompt.pool(model, layers[-1], attention_mask.to(self.device)).float()
            else:
                vectors = pool(self.pooling, layers, attention_mask.to(self.device))
            vectors = apply_transforms(self.transforms, vectors)
            if self.source.normalize and not pre_normalize:
                vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
        return vectors.float().cpu().numpy()
