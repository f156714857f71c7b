"""The training loop every method shares: AdamW with linear warm-up and decay, a progress bar showing loss and
throughput, evaluation every few steps, the best checkpoint kept, reproducible seeds, and a clean stop on
Ctrl-C that leaves the last good checkpoint in place.

Speed (docs/benchmarks.md, "Training speed"): the forward pass runs under bf16 autocast where the CPU has native
bf16 (training/precision.py), AdamW is torch's fused kernel (one pass over all parameters instead of a dozen
small operations per tensor), and torch uses every core this process may use (training/threads.py)."""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
from searchengine.training.model_directory import writing_model_directory
from searchengine.training.precision import autocast, resolve_training_precision
from searchengine.training.settings import TrainingSettings
from searchengine.training.threads import default_threads
from torch import nn
from tqdm.auto import tqdm

from searchengine.errors import SearchEngineError

Batch = object
LossFunction = Callable[[Batch], torch.Tensor]


@dataclass
class Evaluation:
    step: int
    score: float


@dataclass
class TrainingReport:
    method: str
    steps: int
    """Steps actually run (fewer than asked when interrupted)."""
    seconds: float
    texts: int
    """Sentences passed through the encoder, for throughput."""
    final_loss: float
    losses: list[float] = field(default_factory=list)
    """The loss of every step, in order."""
    evaluations: list[Evaluation] = field(default_factory=list)
    base_score: float | None = None
    """The evaluation before the first step: what training has to beat."""
    best_step: int | None = None
    best_score: float | None = None
    interrupted: bool = False
    saved: bool = False
    settings: dict = field(default_factory=dict)
    details: dict = field(default_factory=dict)
    """Method-specific options, written into the model's training_log.json."""

    def summary(self) -> str:
        """One line: steps, time, throughput, final loss, and the kept checkpoint's dev score against the base's. The
        loss has four significant digits, not four decimals: a strong base's in-batch loss can be 3e-05 (SimCSE on
        the bundled MiniLM), which four decimals would print as 0.0000."""
        rate = self.texts / self.seconds if self.seconds else 0.0
        line = f"{self.method}: {self.steps} steps in {self.seconds:.0f} s ({rate:.0f} texts/s), final loss {self.final_loss:.4g}"
        if self.best_score is not None:
            base = f" (base {self.base_score:.2f})" if self.base_score is not None else ""
            line += f"; best dev {self.best_score:.2f} at step {self.best_step}{base}"
        return line


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch so a run with the same seed and data gives the same model."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def train(
    method: str,
    model: nn.Module,
    loss_function: LossFunction,
    batches: Iterator[Batch],
    settings: TrainingSettings,
    out: Path | None,
    save: Callable[[Path], None] | None = None,
    evaluate: Callable[[], float] | None = None,
    texts_per_batch: Callable[[Batch], int] = len,
    extra_parameters: list[nn.Parameter] | None = None,
    details: dict | None = None,
) -> TrainingReport:
    """Run `settings.steps` steps of `loss_function` over `batches` and keep the best checkpoint in `out`.

    With `evaluate` (higher is better), the model is saved to `out` whenever the score improves on earlier
    checkpoints (the base's own score is recorded, not competed against: the result is always trained); without it,
    at every `eval_every` steps and at the end. `save(directory)` writes a checkpoint (default: model.save).
    `out=None` trains without saving (a first phase of a schedule). Ctrl-C stops after the current step and
    leaves the last saved checkpoint untouched; `report.interrupted` says so. The report's settings hold the
    precision and thread count the run actually used."""
    settings = replace(
        settings,
        precision=resolve_training_precision(settings.precision),
        threads=settings.threads or default_threads(),
    )
    save = save or model.save  # type: ignore[attr-defined]
    parameters = [p for p in model.parameters() if p.requires_grad] + list(extra_parameters or [])
    optimizer = torch.optim.AdamW(parameters, lr=settings.learning_rate, weight_decay=0.01, fused=True)
    warmup_steps = max(1, int(settings.steps * settings.warmup))

    def schedule(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return max(0.0, (settings.steps - step) / max(1, settings.steps - warmup_steps))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    report = TrainingReport(
        method=method,
        steps=0,
        seconds=0.0,
        texts=0,
        final_loss=math.nan,
        settings=asdict(settings),
        details=details or {},
    )
    threads_before = torch.get_num_threads()  # a process-wide setting: restored at the end
    torch.set_num_threads(settings.threads)
    started = time.perf_counter()
    running_loss = None
    model.train()
    bar = tqdm(total=settings.steps, desc=method, unit="step", disable=not settings.progress, dynamic_ncols=True)

    def diverged(step: int, what: str) -> SearchEngineError:
        kept = f"{out} holds its last good checkpoint" if report.saved else f"{out} is as it was"
        return SearchEngineError(
            f"training diverged at step {step} ({what}): lower the learning rate (now {settings.learning_rate:g}); "
            f"{kept}"
        )

    def checkpoint(step: int) -> None:
        if not all(bool(torch.isfinite(parameter).all()) for parameter in parameters):
            raise diverged(step, "the weights are not finite")
        if out is None:
            return
        report.seconds = time.perf_counter() - started
        if evaluate is not None:
            score = evaluate()
            report.evaluations.append(Evaluation(step, score))
            if settings.progress:
                bar.write(f"step {step}: dev score {score:.2f}")
            if report.best_score is not None and score <= report.best_score:
                return
            report.best_step, report.best_score = step, score
        with writing_model_directory(out) as directory:
            save(directory)
            report.saved = True
            (directory / "training_log.json").write_text(json.dumps(asdict(report), indent=2) + "\n", encoding="utf-8")

    try:
        if evaluate is not None and out is not None:
            report.base_score = evaluate()
            if settings.progress:
                bar.write(f"before training: dev score {report.base_score:.2f}")
        for step in range(1, settings.steps + 1):
            batch = next(batches)
            with autocast(settings.precision):
                loss = loss_function(batch)
            value = float(loss.detach())
            if not math.isfinite(value):
                raise diverged(step, f"the loss is {value}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(parameters, settings.max_grad_norm)
            optimizer.step()
            scheduler.step()
            running_loss = value if running_loss is None else 0.9 * running_loss + 0.1 * value
            report.steps, report.final_loss = step, value
            report.losses.append(round(value, 6))
            report.texts += texts_per_batch(batch)
            elapsed = time.perf_counter() - started
            bar.set_postfix(loss=f"{running_loss:.4g}", texts_per_s=f"{report.texts / elapsed:.0f}")
            bar.update(1)
            if step % settings.eval_every == 0 or step == settings.steps:
                checkpoint(step)
    except KeyboardInterrupt:
        report.interrupted = True
        bar.write(
            f"Interrupted at step {report.steps}: "
            + (f"the last good checkpoint in {out} is kept." if report.saved else "no checkpoint was written.")
        )
    finally:
        bar.close()
        model.eval()
        torch.set_num_threads(threads_before)
    report.seconds = time.perf_counter() - started
    return report


def cycle(items: list, batch_size: int, seed: int) -> Iterator[list]:
    """Endless batches of `items`, reshuffled every epoch with a seeded generator; the last short batch of an
    epoch is dropped so every batch has the same size (in-batch negatives need that)."""
    if len(items) < batch_size:
        batch_size = len(items)
    generator = random.Random(seed)
    order = list(range(len(items)))
    while True:
        generator.shuffle(order)
        for start in range(0, len(order) - batch_size + 1, batch_size):
            yield [items[i] for i in order[start : start + batch_size]]
