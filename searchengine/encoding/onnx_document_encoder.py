"""Documents embedded from a cached ONNX export without torch or transformers, for small writes in a new process.

`searchengine sync` after one file changed, or `searchengine add note.md`, spent nearly all its time importing torch
and transformers and building the torch model (measured in docs/files.md#measured) before the
Encoder ran the cached ONNX export that embeds on such a CPU. This encoder does what an add asks of the Encoder
(passage spans and headings from the model's own tokenizer, the vectors, the count of texts cut to the model's
limit) with the `tokenizers` library and that same export, so the vectors are the Encoder's to float rounding.

It serves where the Encoder would embed through that export: the conditions of the torch-free query encoder
(searchengine.encoding.onnx_query_encoder: last-layer pooling, no prompt, no post-processing module, the export
cached and valid) and no GPU that torch could find (the Encoder would embed there). Where the Encoder has a bulk
runtime beside the export (`bulk_precision`: torch bf16 for calls of 64 texts or more on a CPU with AVX512-BF16
or AMX), it serves only adds that embed fewer than 64 texts, passages counted (`bulk_elsewhere`;
EncoderChoice.for_documents): a few long documents of 64 passages or more are bulk work, which torch bf16
embeds about twice as fast as this encoder's fp32 once loaded. Anywhere else the caller loads the Encoder.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from searchengine.encoding.model_source import ModelSource
from searchengine.encoding.onnx_query_encoder import OnnxQueryEncoder, onnx_precision, onnx_query_encoder
from searchengine.encoding.passage_headings import Headings, fit_headings
from searchengine.encoding.passages import Span, Structure, check_window, passage_spans
from searchengine.encoding.precision import bulk_precision
from searchengine.encoding.speed import EncoderSpeed

NVIDIA_DEVICES = Path("/proc/driver/nvidia/gpus")
"""Where the NVIDIA driver lists the machine's GPUs: any there (unless CUDA_VISIBLE_DEVICES hides them all) and
the Encoder may embed on one, so this encoder steps aside."""


class TokenizerCall:
    """A `tokenizers` Tokenizer called the way searchengine.encoding.passages and passage_headings call a Hugging
    Face fast tokenizer (`tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True).encodings`):
    the same backend, with no truncation and no padding, as that call sets it."""

    def __init__(self, tokenizer: Any) -> None:  # noqa: ANN401 (a tokenizers.Tokenizer)
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_str(tokenizer.to_str())
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()

    def __call__(
        self, texts: Sequence[str], add_special_tokens: bool = True, return_offsets_mapping: bool = False
    ) -> SimpleNamespace:
        """`.encodings`: one tokenizers.Encoding per text (offsets are always there)."""
        del return_offsets_mapping
        return SimpleNamespace(
            encodings=self.tokenizer.encode_batch(list(texts), add_special_tokens=add_special_tokens)
        )


class OnnxDocumentEncoder(OnnxQueryEncoder):
    """The torch-free query encoder, with what adding documents needs of the Encoder."""

    def __init__(self, source: ModelSource, session: Any, fingerprint: str) -> None:  # noqa: ANN401
        super().__init__(source, session, fingerprint)
        self.bulk_elsewhere = False
        """Whether the Encoder would embed calls of BULK_TEXTS texts or more in another runtime (bulk_precision:
        torch bf16 on a CPU with AVX512-BF16 or AMX); then this encoder serves adds of fewer texts only."""
        self.truncated = 0
        """Texts cut to the model's limit so far (as Encoder.truncated)."""
        specials = (
            self.tokenizer.post_processor.num_special_tokens_to_add(False) if self.tokenizer.post_processor else 0
        )
        self.text_tokens: int = self.max_seq_length - specials
        """Tokens of text one vector holds (as Encoder.text_tokens)."""

    @functools.cached_property
    def _untruncated(self) -> TokenizerCall:
        """A copy of the tokenizer without truncation, for passages and headings: made at the first write that
        needs it, not for every query (copying the default model's tokenizer costs about 20 ms)."""
        return TokenizerCall(self.tokenizer)

    def passage_spans(
        self,
        texts: Sequence[str],
        tokens: int | Sequence[int],
        overlap: int,
        structures: Sequence[Structure | None] | None = None,
    ) -> list[list[Span]]:
        """As Encoder.passage_spans: each text's passages of at most `tokens` tokens."""
        check_window(tokens, self.text_tokens)
        return passage_spans(self._untruncated, texts, tokens, overlap, structures)

    def fit_headings(
        self, headings_of: Sequence[Headings], tokens: int
    ) -> tuple[list[int], list[tuple[tuple[int, str], ...]]]:
        """As Encoder.fit_headings: each text's passage window and headings, cut to fit."""
        return fit_headings(self._untruncated, headings_of, tokens)

    def _token_ids(self, prepared: list[str]) -> list[list[int]]:
        encodings = self._encodings(prepared)
        self.truncated += sum(1 for encoding in encodings if encoding.overflowing)
        return [encoding.ids for encoding in encodings]


def gpu_may_be_visible(devices: Path = NVIDIA_DEVICES) -> bool:
    """Whether torch could find a GPU here, judged without importing it: an NVIDIA GPU the driver lists (in
    `devices`), not hidden by an empty CUDA_VISIBLE_DEVICES."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return False
    try:
        return devices.is_dir() and any(devices.iterdir())
    except OSError:
        return True


def onnx_document_encoder(
    source: ModelSource, fingerprint: str, speed: EncoderSpeed | None = None, *, gpu_devices: Path = NVIDIA_DEVICES
) -> OnnxDocumentEncoder | None:
    """The torch-free document encoder of `source` where the Encoder with `speed` would embed through the cached
    ONNX export (see the module's docstring; `bulk_elsewhere` says whether only for small adds); None where it
    would not, so the caller loads the Encoder. `gpu_devices` is where the driver lists NVIDIA GPUs."""
    speed = speed or EncoderSpeed()
    precision = onnx_precision(source, speed)
    if precision is None or gpu_may_be_visible(gpu_devices):
        return None
    encoder = onnx_query_encoder(source, fingerprint, speed, OnnxDocumentEncoder)
    if encoder is not None:
        encoder.bulk_elsewhere = (
            bulk_precision((speed.precision, speed.backend), (precision, "onnx"), "cpu") is not None
        )
    return encoder
