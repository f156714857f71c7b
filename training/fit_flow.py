"""Fit BERT-flow (Li et al., 2020) on a corpus: the invertible network of `searchengine.encoding.flow` trained by maximum
likelihood under a standard Gaussian prior, with the encoder frozen (its embeddings are computed once).

Actnorm layers are initialised from the data (Glow's data-dependent init: every block's input starts with zero
mean and unit variance per dimension), couplings start as the identity, then Adam maximises the mean
log-likelihood. The log-likelihood per dimension (nats) on the embeddings (plus one fixed draw of the training
noise below), before training and after each epoch, is in the report.

Training adds Gaussian noise of 1e-3 times the median per-dimension standard deviation to each batch (as flows
dequantise discrete data). Without it the maximum-likelihood problem has no solution when the embeddings do not
fill the space, and real encoders' do not: all-MiniLM-L6-v2 keeps 3 of its 384 pooled dimensions constant, so
the density could grow without bound along them, and the gradients overflow."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch
from searchengine.training.postprocessing import (
    FitReport,
    corpus_vectors,
    load_base,
    read_texts,
    write_model_with_module,
)

from searchengine.encoding.flow import Flow
from searchengine.encoding.model_source import FLOW_MODULE_TYPE
from searchengine.errors import SearchEngineError

INIT_ROWS = 4096
NOISE_FRACTION = 1e-3


def train_flow(
    embeddings: np.ndarray,
    *,
    blocks: int = 8,
    hidden: int = 256,
    epochs: int = 10,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
    seed: int = 0,
    progress: bool = True,
) -> tuple[Flow, list[float]]:
    """Train a flow on (n, d) embeddings; returns it (in eval mode, on the CPU) and the mean log-likelihood per
    dimension on `embeddings`, before training and after each epoch."""
    from tqdm import tqdm

    _check_settings(blocks, hidden, epochs, batch_size, learning_rate)
    data = torch.as_tensor(np.ascontiguousarray(embeddings, dtype=np.float32))
    count, dimension = data.shape
    if count < 2:
        raise SearchEngineError(f"a flow needs at least 2 distinct texts to fit, not {count}")
    torch.manual_seed(seed)
    flow = Flow(dimension, blocks, hidden, seed)
    generator = torch.Generator().manual_seed(seed)
    noise = NOISE_FRACTION * float(data.std(dim=0).median())
    if not noise > 0:
        raise SearchEngineError("the embeddings do not vary (most dimensions are constant); there is nothing to fit")

    def jittered(rows: torch.Tensor) -> torch.Tensor:
        return data[rows] + noise * torch.randn(len(rows), dimension, generator=generator)

    _initialise_actnorm(flow, jittered(torch.randperm(count, generator=generator)[:INIT_ROWS]))
    monitored = jittered(torch.arange(count))  # one fixed draw of the noise: the objective, comparable across epochs
    history = [_mean_log_likelihood(flow, monitored)]
    optimiser = torch.optim.Adam(flow.parameters(), lr=learning_rate)
    steps = (count + batch_size - 1) // batch_size
    with tqdm(total=epochs * steps, desc="Training flow", unit="batch", disable=not progress) as bar:
        for _ in range(epochs):
            flow.train()
            for rows in torch.randperm(count, generator=generator).split(batch_size):
                loss = -flow.log_likelihood(jittered(rows)).mean() / dimension
                optimiser.zero_grad()
                loss.backward()
                norm = torch.nn.utils.clip_grad_norm_(flow.parameters(), 10.0)
                if not torch.isfinite(norm):
                    raise SearchEngineError(
                        "flow training diverged (the gradients are not finite); use a smaller learning rate"
                    )
                optimiser.step()
                bar.update(1)
            history.append(_mean_log_likelihood(flow, monitored))
            bar.set_postfix(log_likelihood=f"{history[-1]:.3f}")
            if not np.isfinite(history[-1]):
                raise SearchEngineError(
                    "flow training diverged (the log-likelihood is not finite); use a smaller learning rate"
                )
    return flow.eval(), history


def _check_settings(blocks: int, hidden: int, epochs: int, batch_size: int, learning_rate: float) -> None:
    if blocks < 1 or hidden < 1:
        raise SearchEngineError(f"a flow needs at least 1 block and 1 hidden unit, not {blocks} and {hidden}")
    if epochs < 0 or batch_size < 1 or not learning_rate > 0:
        raise SearchEngineError(
            f"flow training needs epochs >= 0, batch size >= 1 and a positive learning rate, not {epochs}, "
            f"{batch_size}, {learning_rate}"
        )


@torch.no_grad()
def _initialise_actnorm(flow: Flow, sample: torch.Tensor) -> None:
    x = sample
    for block in flow.blocks:
        std = x.std(dim=0, unbiased=False).clamp_min(1e-12)
        block.actnorm.loc.copy_(-x.mean(dim=0))
        block.actnorm.log_scale.copy_(-torch.log(std))
        x, _ = block(x)


@torch.no_grad()
def _mean_log_likelihood(flow: Flow, data: torch.Tensor) -> float:
    flow.eval()
    total = sum(float(flow.log_likelihood(chunk).sum()) for chunk in data.split(4096))
    return total / (len(data) * data.shape[1])


def fit_flow(
    *,
    base: str | Path | None,
    corpus: str | Path,
    out: str | Path,
    blocks: int = 8,
    hidden: int = 256,
    epochs: int = 10,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
    seed: int = 0,
    device: str | None = None,
    encode_batch_size: int = 64,
    progress: bool = True,
    vectors: np.ndarray | None = None,
) -> FitReport:
    """Write `out` = `base` + a BERT-flow fitted on `corpus`; report.details["log_likelihood"] is the training
    curve (nats per dimension, before training then after each epoch). `vectors`: as in fit_whitening."""
    started = time.perf_counter()
    _check_settings(blocks, hidden, epochs, batch_size, learning_rate)  # before the slow part
    encoder = load_base(base, device, encode_batch_size)
    texts = read_texts(corpus)
    embeddings = np.concatenate(list(corpus_vectors(encoder, texts, progress, "flow", vectors)), axis=0)
    flow, history = train_flow(
        embeddings,
        blocks=blocks,
        hidden=hidden,
        epochs=epochs,
        batch_size=batch_size,
        learning_rate=learning_rate,
        seed=seed,
        progress=progress,
    )
    settings = {
        "blocks": blocks,
        "hidden": hidden,
        "epochs": epochs,
        "batch_size": batch_size,
        "learning_rate": learning_rate,
        "seed": seed,
    }
    folder = write_model_with_module(
        encoder,
        out,
        FLOW_MODULE_TYPE,
        "Flow",
        flow.save,
        {
            "method": "flow",
            **settings,
            "corpus": str(corpus),
            "texts": len(texts),
            "base": encoder.source.spec,
            "log_likelihood_per_dimension": history,
        },
    )
    d = encoder.dimension
    return FitReport(
        "flow",
        Path(out),
        encoder.source.spec,
        str(corpus),
        len(texts),
        d,
        d,
        folder,
        time.perf_counter() - started,
        {"log_likelihood": history, **settings},
    )
