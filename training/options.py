"""The options groups every training method or post-processing fit shares, as dataclasses whose fields are the
options of `searchengine train METHOD`: a field's default is the option's default, and its metadata holds the
help text, the bounds (`min`, `max`), a short flag, and the flag when it is not the field name with dashes.

This module and the method options built on it import no torch, so the command line can list every method and
its options without loading any training code."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from searchengine.training.settings import TrainingPrecision, TrainingSettings


def option(
    default: Any = MISSING,
    *,
    help: str | None = None,  # noqa: A002 (the name typer and click give it)
    flag: str | None = None,
    short: str | None = None,
    min: float | None = None,  # noqa: A002
    max: float | None = None,  # noqa: A002
) -> Any:
    """A dataclass field that is also a command-line option; no default makes the option required.

    flag: the option's name when it is not `--field-name` (e.g. "--lr"), or "--on/--off" for a boolean switch."""
    metadata = {"help": help, "flag": flag, "short": short, "min": min, "max": max}
    return field(default=default, metadata={key: value for key, value in metadata.items() if value is not None})


@dataclass(kw_only=True)
class MethodOptions:
    """What every method takes: the model to start from and where to write the result."""

    base: str = option(
        "default", short="-b", help="Model to start from: model directory or Hugging Face id [default: bundled MiniLM]."
    )
    out: Path = option(short="-o", help="Directory to write the model to (replaced only on success).")

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of the method's train function: one per field, unless a group converts some."""
        return {item.name: getattr(self, item.name) for item in fields(self)}


@dataclass(kw_only=True)
class FitOptions(MethodOptions):
    """A post-processing fit: the frozen base embeds a corpus once, and the fitted transform is saved as a module of
    the model, so indexing and queries apply it by themselves."""

    corpus: Path = option(
        flag="--data",
        short="-d",
        help='Corpus to fit on: .txt (one text per line), .jsonl (a "text" field), either gzipped.',
    )
    quiet: bool = option(False, short="-q", help="No progress bars.")

    def arguments(self) -> dict[str, Any]:
        arguments = super().arguments()
        arguments["progress"] = not arguments.pop("quiet")
        return arguments


SEED_HELP = "Random seed: the same seed and data give the same model."


@dataclass(kw_only=True)
class TrainingOptions(MethodOptions):
    """A run of the shared training loop (training/loop.py): optimizer steps, peak learning rate, evaluation on an
    STS file every few steps keeping the best checkpoint, seed; the train function gets them as `settings`."""

    eval_file: Path | None = option(
        None,
        flag="--eval",
        help="STS file (score<TAB>sentence1<TAB>sentence2) to evaluate on; the best checkpoint is kept.",
    )
    steps: int = option(500, min=1, help="Optimizer steps (batches).")
    learning_rate: float = option(
        2e-5, flag="--lr", min=0.0, help="Peak learning rate (linear warm-up over 10%, then decay)."
    )
    eval_every: int = option(100, min=1, help="Evaluate (or save, without --eval) every N steps.")
    seed: int = option(0, help=SEED_HELP)
    precision: TrainingPrecision = option(
        "auto",
        help="auto: the forward pass in bf16 autocast where the CPU has native bf16 (faster), else fp32; fp32: off.",
    )
    threads: int | None = option(
        None, min=1, help="torch threads; by default OMP_NUM_THREADS if set, else every core this process may use."
    )
    quiet: bool = option(False, short="-q", help="No progress bar.")

    def settings(self) -> TrainingSettings:
        return TrainingSettings(
            steps=self.steps,
            learning_rate=self.learning_rate,
            eval_every=self.eval_every,
            seed=self.seed,
            progress=not self.quiet,
            precision=self.precision,
            threads=self.threads,
        )

    def arguments(self) -> dict[str, Any]:
        grouped = ("steps", "learning_rate", "eval_every", "seed", "precision", "threads", "quiet")
        arguments = {name: value for name, value in super().arguments().items() if name not in grouped}
        return {**arguments, "settings": self.settings()}


TRUNCATE_HELP = "Truncate training texts to this many tokens."


@dataclass(kw_only=True)
class BiEncoderOptions(TrainingOptions):
    """A bi-encoder trained through the base's own pooling (or another one), on truncated texts."""

    pooling: str | None = option(None, help="Override the base's pooling: mean, cls, max, mean_sqrt_len.")
    max_seq_length: int = option(64, min=8, help=TRUNCATE_HELP)
