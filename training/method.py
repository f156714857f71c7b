"""The base classes of every `searchengine train` method. A method is one dataclass: its fields are its options
(declared with training.options.option, which the command line turns into `--field-name` options), its docstring
is the command's help, and its methods say how it reads its data, builds its model and computes its loss.

TrainingMethod.train is the skeleton every training method shares (template method): read the data, seed, load
the model, build the loss, run the shared loop (training/loop.py) with an evaluation, and record the details in
the model's training_log.json. This module, like every method's module, imports no torch at import time, so the
command line lists the methods and their options without loading any training code."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from searchengine.training.model_directory import check_output_directory
from searchengine.training.options import SEED_HELP, TRUNCATE_HELP, option
from searchengine.training.settings import TrainingPrecision, TrainingSettings

if TYPE_CHECKING:
    from searchengine.training.loop import LossFunction, TrainingReport
    from searchengine.training.sentence_model import SentenceModel


@dataclass(kw_only=True)
class Method:
    """What every method takes: the model to start from and where to write the result."""

    base: str = option(
        "default", short="-b", help="Model to start from: model directory or Hugging Face id [default: bundled MiniLM]."
    )
    out: Path = option(
        short="-o", help="Directory to write the model to: new, empty or a model's (replaced only on success)."
    )

    def __post_init__(self) -> None:
        """Refuse an output directory the model cannot be written to (checked again when it is written) before any
        data is read or step trained, so a bad one costs no training time; `out=None` writes nothing."""
        if self.out is not None:
            check_output_directory(self.out)

    def run(self) -> Any:
        """Train (or fit) with these options; returns a report with summary()."""
        raise NotImplementedError


@dataclass(kw_only=True)
class FitMethod(Method):
    """A post-processing fit: the frozen base embeds a corpus once, and the fitted transform is saved as a module of
    the model, so indexing and queries apply it by themselves."""

    corpus: Path = option(
        flag="--data",
        short="-d",
        help='Corpus to fit on: .txt (one text per line), .jsonl (a "text" field), either gzipped.',
    )
    quiet: bool = option(False, short="-q", help="No progress bars.")

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of the fit function: one per field, `quiet` as `progress`."""
        arguments = {item.name: getattr(self, item.name) for item in fields(self)}
        arguments["progress"] = not arguments.pop("quiet")
        return arguments


@dataclass(kw_only=True)
class TrainingMethod(Method):
    """A run of the shared training loop (training/loop.py): optimizer steps, peak learning rate, evaluation on an
    STS file every few steps keeping the best checkpoint, seed."""

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

    report_name: ClassVar[str]
    """The method's name in its report and training_log.json."""
    texts_per_example: ClassVar[int] = 2
    """Texts one example passes through the encoder, for the throughput."""

    def settings(self) -> TrainingSettings:
        """The loop's settings from the options."""
        return TrainingSettings(
            steps=self.steps,
            learning_rate=self.learning_rate,
            eval_every=self.eval_every,
            seed=self.seed,
            progress=not self.quiet,
            precision=self.precision,
            threads=self.threads,
        )

    def run(self) -> TrainingReport:
        return self.train(self.settings())

    def train(self, settings: TrainingSettings, model: Any = None) -> TrainingReport:
        """Read the data, seed, load the model (or continue training `model`, in memory), build the loss and run
        `settings.steps` steps of the loop; `out=None` trains without saving (a first phase of a schedule). A loss
        that is a torch module (one with a classifier head) has its own parameters trained too."""
        from searchengine.training.loop import cycle, seed_everything, train
        from torch import nn

        examples = self.read()
        seed_everything(settings.seed)
        model = self.load_model() if model is None else model
        loss = self.loss(model)
        return train(
            self.report_name,
            model,
            loss,
            cycle(examples, self.batch_size, settings.seed),  # type: ignore[attr-defined]
            settings,
            self.out,
            evaluate=self.evaluator(model) if self.out is not None else None,
            texts_per_batch=lambda batch: self.texts_per_example * len(batch),
            extra_parameters=list(loss.parameters()) if isinstance(loss, nn.Module) else None,
            details=self.log_details(model, examples),
        )

    def read(self) -> list:
        """The training examples (the loop batches them)."""
        raise NotImplementedError

    def load_model(self) -> Any:
        """The model to train, loaded from `base`."""
        raise NotImplementedError

    def loss(self, model: Any) -> LossFunction:
        """The loss of one batch of examples."""
        raise NotImplementedError

    def evaluator(self, model: Any) -> Callable[[], float] | None:
        """The dev score (higher is better) of the model's current weights, or None without an evaluation file."""
        raise NotImplementedError

    def log_details(self, model: Any, examples: list) -> dict[str, Any]:
        """What the training log records besides the settings: the method's options, data and model."""
        raise NotImplementedError


@dataclass(kw_only=True)
class SentenceEncoderMethod(TrainingMethod):
    """A method that trains a sentence encoder (training/sentence_model.py), evaluated on an STS file and saved in
    the sentence-transformers layout."""

    def evaluator(self, model: SentenceModel) -> Callable[[], float] | None:
        """Spearman x 100 on the STS file with the model's current weights."""
        if self.eval_file is None:
            return None
        from searchengine.evaluation.sts import read_sts_pairs, sts_spearman

        pairs = read_sts_pairs(self.eval_file)
        return lambda: sts_spearman(model.encode, pairs)

    def details(self, examples: list) -> dict[str, Any]:
        """The method's options and data, for the training log."""
        raise NotImplementedError

    def log_details(self, model: SentenceModel, examples: list) -> dict[str, Any]:
        """The base, pooling and length the model trained with, then the method's details."""
        return {**self.model_details(model), **self.details(examples)}

    @staticmethod
    def model_details(model: SentenceModel) -> dict[str, Any]:
        """The base, pooling and length a model trains with."""
        return {"base": model.source.name, "pooling": model.pooling, "max_seq_length": model.max_seq_length}


@dataclass(kw_only=True)
class BiEncoderMethod(SentenceEncoderMethod):
    """A bi-encoder trained through the base's own pooling (or another one), on truncated texts."""

    pooling: str | None = option(None, help="Override the base's pooling: mean, cls, max, mean_sqrt_len.")
    max_seq_length: int = option(64, min=8, help=TRUNCATE_HELP)

    def load_model(self) -> SentenceModel:
        from searchengine.training.sentence_model import SentenceModel

        return SentenceModel(self.base, self.pooling, self.max_seq_length)  # type: ignore[arg-type]
