"""PyTorch as the encoder's transformer: the Hugging Face model itself, cast or quantized to the precision asked for.
Runs every pooling and precision on every device, so "auto" falls back to it."""

from __future__ import annotations

from typing import Any

from searchengine.encoding.backend import EncoderBackend, LoadingEncoder
from searchengine.encoding.precision import apply_precision


class TorchBackend(EncoderBackend):
    """The model in torch (searchengine.encoding.precision.apply_precision)."""

    name = "torch"
    precisions = ("fp32", "bf16", "fp16", "int8")
    cpu_only = False
    computes_in_torch = True
    auto_precisions = precisions
    auto_rank = 100
    """Last: "auto" runs torch where no other backend can."""

    def load(self, encoder: LoadingEncoder) -> Any:  # noqa: ANN401 (a torch.nn.Module)
        return apply_precision(encoder.model, encoder.precision)
