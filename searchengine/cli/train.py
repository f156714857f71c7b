"""`searchengine train METHOD`: one subcommand per training method or post-processing transform.

Training code is imported inside each command, so `searchengine --help` and queries stay fast."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from searchengine.cli.errors import user_errors

train_app = typer.Typer(
    help="Train or calibrate a sentence encoder; writes a sentence-transformers model directory (--out).",
    no_args_is_help=True,
)

BaseOption = typer.Option(
    "default", "--base", "-b", help="Model to start from: model directory or Hugging Face id [default: bundled MiniLM]."
)
OutOption = typer.Option(..., "--out", "-o", help="Directory to write the model to (replaced only on success).")
EvalOption = typer.Option(
    None, "--eval", help="STS file (score<TAB>sentence1<TAB>sentence2) to evaluate on; the best checkpoint is kept."
)
SeedOption = typer.Option(0, "--seed", help="Random seed: the same seed and data give the same model.")


# --- post-processing transforms: fitted on a corpus, saved as a module of the model (index and queries apply it) ---

FitDataOption = typer.Option(
    ..., "--data", "-d", help="Corpus to fit on: .txt (one text per line), .jsonl (a \"text\" field), either gzipped."
)
QuietFitOption = typer.Option(False, "--quiet", "-q", help="No progress bars.")


@train_app.command("whitening")
def train_whitening(
    base: str = BaseOption,
    data: Path = FitDataOption,
    out: Path = OutOption,
    k: Optional[int] = typer.Option(
        None, "--k", help="Dimensions to keep (whitening-k) [default: every direction the embeddings span]."
    ),
    quiet: bool = QuietFitOption,
) -> None:
    """BERT-whitening(-k), the same fit as `index --whiten-k`, saved as a Dense module of the model."""
    with user_errors():
        from searchengine.training.fit_whitening import fit_whitening

        typer.echo(fit_whitening(base, data, out, k, progress=not quiet).summary())


@train_app.command("flow")
def train_flow(
    base: str = BaseOption,
    data: Path = FitDataOption,
    out: Path = OutOption,
    epochs: int = typer.Option(10, "--epochs", help="Passes over the corpus embeddings."),
    lr: float = typer.Option(1e-3, "--lr", help="Adam learning rate."),
    blocks: int = typer.Option(8, "--blocks", help="Flow blocks (actnorm, permutation, additive coupling)."),
    hidden: int = typer.Option(256, "--hidden", help="Hidden units of each coupling layer's network."),
    batch_size: int = typer.Option(256, "--batch-size", help="Embeddings per optimisation step."),
    seed: int = SeedOption,
    quiet: bool = QuietFitOption,
) -> None:
    """BERT-flow: an invertible flow trained by maximum likelihood on the frozen encoder's embeddings, which
    are then mapped to its Gaussian latent."""
    with user_errors():
        from searchengine.training.fit_flow import fit_flow

        report = fit_flow(
            base, data, out, blocks=blocks, hidden=hidden, epochs=epochs, batch_size=batch_size,
            learning_rate=lr, seed=seed, progress=not quiet,
        )
        curve = report.details["log_likelihood"]
        typer.echo(f"{report.summary()}; log-likelihood per dimension {curve[0]:.3f} -> {curve[-1]:.3f} nats")


@train_app.command("sn")
def train_sn(
    base: str = BaseOption,
    data: Path = FitDataOption,
    out: Path = OutOption,
    quiet: bool = QuietFitOption,
) -> None:
    """Standard normalisation (x - mean) / std per dimension, saved as a Dense module of the model."""
    with user_errors():
        from searchengine.training.fit_normalisation import fit_sn

        typer.echo(fit_sn(base, data, out, progress=not quiet).summary())


@train_app.command("natsv")
def train_natsv(
    base: str = BaseOption,
    data: Path = FitDataOption,
    out: Path = OutOption,
    k: int = typer.Option(1, "--k", help="Top singular directions to null."),
    centre: bool = typer.Option(False, "--centre", help="Subtract the corpus mean first (all-but-the-top)."),
    quiet: bool = QuietFitOption,
) -> None:
    """NATSV: null the top-k singular directions of the corpus embeddings, saved as a Dense module of the model."""
    with user_errors():
        from searchengine.training.fit_normalisation import fit_natsv

        typer.echo(fit_natsv(base, data, out, k, centre=centre, progress=not quiet).summary())
StepsOption = typer.Option(500, "--steps", min=1, help="Optimizer steps (batches).")
LearningRateOption = typer.Option(2e-5, "--lr", min=0.0, help="Peak learning rate (linear warm-up over 10%, then decay).")
EvalEveryOption = typer.Option(100, "--eval-every", min=1, help="Evaluate (or save, without --eval) every N steps.")
PoolingOption = typer.Option(None, "--pooling", help="Override the base's pooling: mean, cls, max, mean_sqrt_len.")
MaxSeqLengthOption = typer.Option(64, "--max-seq-length", min=8, help="Truncate training texts to this many tokens.")
QuietOption = typer.Option(False, "--quiet", "-q", help="No progress bar.")


def _settings(steps: int, lr: float, eval_every: int, seed: int, quiet: bool):  # noqa: ANN202 (lazy import)
    from searchengine.training.loop import TrainingSettings

    return TrainingSettings(steps=steps, learning_rate=lr, eval_every=eval_every, seed=seed, progress=not quiet)


def _summary(report, out: Path) -> None:  # noqa: ANN001
    """One closing line: steps, time, the kept checkpoint's score, where it is."""
    rate = report.texts / report.seconds if report.seconds else 0.0
    line = f"{report.method}: {report.steps} steps in {report.seconds:.0f} s ({rate:.0f} texts/s), final loss {report.final_loss:.4f}"
    if report.best_score is not None:
        base = f" (base {report.base_score:.2f})" if report.base_score is not None else ""
        line += f"; best dev {report.best_score:.2f} at step {report.best_step}{base}"
    typer.echo(line)
    if report.saved:
        typer.echo(f"Saved to {out}")
    elif report.interrupted:
        raise typer.Exit(130)


@train_app.command("sbert-nli")
def sbert_nli(
    data: Path = typer.Option(..., "--data", help="NLI pairs: premise<TAB>hypothesis<TAB>label (.tsv or .tsv.gz)."),
    out: Path = OutOption,
    base: str = BaseOption,
    eval_file: Optional[Path] = EvalOption,
    steps: int = StepsOption,
    batch_size: int = typer.Option(16, "--batch-size", min=2),
    lr: float = LearningRateOption,
    eval_every: int = EvalEveryOption,
    seed: int = SeedOption,
    pooling: Optional[str] = PoolingOption,
    max_seq_length: int = MaxSeqLengthOption,
    quiet: bool = QuietOption,
) -> None:
    """SBERT classification: softmax over (u, v, |u - v|) with the 3 NLI labels.

    Example: searchengine train sbert-nli --data ../shared/data/nli/train.tsv.gz --eval ../shared/data/stsb/dev.tsv --out nli-model
    """
    with user_errors():
        from searchengine.training.methods.sbert_classification import train_sbert_classification

        settings = _settings(steps, lr, eval_every, seed, quiet)
        _summary(train_sbert_classification(base, data, out, settings, batch_size, eval_file, pooling, max_seq_length), out)


@train_app.command("sbert-sts")
def sbert_sts(
    data: Path = typer.Option(..., "--data", help="Scored pairs: score<TAB>sentence1<TAB>sentence2."),
    out: Path = OutOption,
    base: str = BaseOption,
    eval_file: Optional[Path] = EvalOption,
    steps: int = StepsOption,
    batch_size: int = typer.Option(16, "--batch-size", min=2),
    lr: float = LearningRateOption,
    eval_every: int = EvalEveryOption,
    seed: int = SeedOption,
    pooling: Optional[str] = PoolingOption,
    max_seq_length: int = MaxSeqLengthOption,
    max_score: float = typer.Option(5.0, "--max-score", help="The largest score of the data's scale (STS-B: 5)."),
    quiet: bool = QuietOption,
) -> None:
    """SBERT regression: mean squared error between cos(u, v) and the score scaled to [0, 1].

    Example: searchengine train sbert-sts --data ../shared/data/stsb/train.tsv --eval ../shared/data/stsb/dev.tsv --out sts-model
    """
    with user_errors():
        from searchengine.training.methods.sbert_regression import train_sbert_regression

        settings = _settings(steps, lr, eval_every, seed, quiet)
        _summary(
            train_sbert_regression(base, data, out, settings, batch_size, eval_file, pooling, max_seq_length, max_score),
            out,
        )


@train_app.command("sbert-triplet")
def sbert_triplet(
    data: Path = typer.Option(..., "--data", help="Triplets: anchor<TAB>positive<TAB>negative."),
    out: Path = OutOption,
    base: str = BaseOption,
    eval_file: Optional[Path] = EvalOption,
    steps: int = StepsOption,
    batch_size: int = typer.Option(16, "--batch-size", min=2),
    lr: float = LearningRateOption,
    eval_every: int = EvalEveryOption,
    seed: int = SeedOption,
    pooling: Optional[str] = PoolingOption,
    max_seq_length: int = MaxSeqLengthOption,
    margin: float = typer.Option(1.0, "--margin", min=0.0, help="Euclidean margin epsilon."),
    quiet: bool = QuietOption,
) -> None:
    """SBERT triplet objective: max(||a - p|| - ||a - n|| + margin, 0).

    Example: searchengine train sbert-triplet --data ../shared/data/nli/triplets.tsv.gz --eval ../shared/data/stsb/dev.tsv --out triplet-model
    """
    with user_errors():
        from searchengine.training.methods.sbert_triplet import train_sbert_triplet

        settings = _settings(steps, lr, eval_every, seed, quiet)
        _summary(
            train_sbert_triplet(base, data, out, settings, batch_size, eval_file, pooling, max_seq_length, margin), out
        )


@train_app.command("simcse")
def simcse(
    data: Path = typer.Option(..., "--data", help="Unlabelled sentences: .txt (one per line), .jsonl or .gz."),
    out: Path = OutOption,
    base: str = BaseOption,
    eval_file: Optional[Path] = EvalOption,
    steps: int = StepsOption,
    batch_size: int = typer.Option(64, "--batch-size", min=2, help="Sentences per batch (in-batch negatives)."),
    lr: float = LearningRateOption,
    eval_every: int = EvalEveryOption,
    seed: int = SeedOption,
    pooling: Optional[str] = PoolingOption,
    max_seq_length: int = typer.Option(32, "--max-seq-length", min=8, help="Truncate training texts to this many tokens."),
    temperature: float = typer.Option(0.05, "--temperature", min=1e-4),
    limit: Optional[int] = typer.Option(None, "--limit", min=2, help="Use only the first N sentences."),
    quiet: bool = QuietOption,
) -> None:
    """Unsupervised SimCSE: the same sentence twice through dropout, InfoNCE with in-batch negatives.

    Example: searchengine train simcse --data ../shared/data/unsup/wiki_sentences.txt.gz --eval ../shared/data/stsb/dev.tsv --out simcse-model
    """
    with user_errors():
        from searchengine.training.methods.simcse import train_simcse

        settings = _settings(steps, lr, eval_every, seed, quiet)
        _summary(
            train_simcse(base, data, out, settings, batch_size, eval_file, pooling, max_seq_length, temperature, limit),
            out,
        )


@train_app.command("supervised-contrastive")
def supervised_contrastive(
    data: Path = typer.Option(..., "--data", help="NLI triplets: anchor<TAB>positive<TAB>negative (premise, entailment, contradiction)."),
    out: Path = OutOption,
    base: str = BaseOption,
    eval_file: Optional[Path] = EvalOption,
    steps: int = StepsOption,
    batch_size: int = typer.Option(32, "--batch-size", min=2),
    lr: float = LearningRateOption,
    eval_every: int = EvalEveryOption,
    seed: int = SeedOption,
    pooling: Optional[str] = PoolingOption,
    max_seq_length: int = MaxSeqLengthOption,
    temperature: float = typer.Option(0.05, "--temperature", min=1e-4),
    quiet: bool = QuietOption,
) -> None:
    """Supervised contrastive learning with hard negatives (supervised SimCSE) on NLI triplets.

    Example: searchengine train supervised-contrastive --data ../shared/data/nli/triplets.tsv.gz --eval ../shared/data/stsb/dev.tsv --out supcon-model
    """
    with user_errors():
        from searchengine.training.methods.supervised_contrastive import train_supervised_contrastive

        settings = _settings(steps, lr, eval_every, seed, quiet)
        _summary(
            train_supervised_contrastive(
                base, data, out, settings, batch_size, eval_file, pooling, max_seq_length, temperature
            ),
            out,
        )


@train_app.command("consert")
def consert(
    out: Path = OutOption,
    data: Optional[Path] = typer.Option(None, "--data", help="Unlabelled sentences for the contrastive phase."),
    nli: Optional[Path] = typer.Option(None, "--nli", help="NLI pairs for the supervised objective (joint, sup-unsup, joint-unsup)."),
    schedule: str = typer.Option("unsup", "--schedule", help="unsup, joint, sup-unsup or joint-unsup."),
    views: str = typer.Option(
        "shuffle,feature_cutoff:0.2",
        "--views",
        help="Two augmentations (name or name:rate): none, shuffle, token_cutoff, feature_cutoff, dropout.",
    ),
    adversarial: Optional[float] = typer.Option(
        None, "--adversarial", min=0.0, help="FGV epsilon: the second view becomes an adversarial one (joint schedules only)."
    ),
    temperature: float = typer.Option(0.1, "--temperature", min=1e-4),
    alpha: float = typer.Option(0.1, "--alpha", min=0.0, help="Weight of the contrastive loss in the joint objective."),
    base: str = BaseOption,
    eval_file: Optional[Path] = EvalOption,
    steps: int = StepsOption,
    supervised_steps: Optional[int] = typer.Option(None, "--supervised-steps", min=1, help="Steps of the NLI phase of sup-unsup / joint-unsup [default: --steps]."),
    batch_size: int = typer.Option(32, "--batch-size", min=2, help="Sentences per contrastive batch."),
    supervised_batch_size: int = typer.Option(16, "--supervised-batch-size", min=2, help="NLI pairs per batch."),
    lr: float = LearningRateOption,
    eval_every: int = EvalEveryOption,
    seed: int = SeedOption,
    pooling: Optional[str] = PoolingOption,
    max_seq_length: int = MaxSeqLengthOption,
    limit: Optional[int] = typer.Option(None, "--limit", min=2, help="Use only the first N unlabelled sentences."),
    quiet: bool = QuietOption,
) -> None:
    """ConSERT: NT-Xent between two augmented views, alone or with the NLI objective in a schedule.

    Examples:
      searchengine train consert --data sentences.txt --views shuffle,feature_cutoff:0.2 --out consert-model
      searchengine train consert --schedule joint --nli ../shared/data/nli/train.tsv.gz --adversarial 0.1 --out m
    """
    with user_errors():
        from dataclasses import replace

        from searchengine.training.augmentations import Augmentation
        from searchengine.training.methods.consert import train_consert

        parsed = tuple(Augmentation.parse(view) for view in views.split(",") if view.strip())
        settings = _settings(steps, lr, eval_every, seed, quiet)
        first = replace(settings, steps=supervised_steps) if supervised_steps else None
        report = train_consert(
            base, out, settings, schedule, data, nli, parsed, temperature, alpha, adversarial, first,
            batch_size, supervised_batch_size, eval_file, pooling, max_seq_length, limit,
        )  # fmt: skip
        _summary(report, out)


@train_app.command("promptbert")
def promptbert(
    data: Path = typer.Option(..., "--data", help="Unlabelled sentences: .txt (one per line), .jsonl or .gz."),
    out: Path = OutOption,
    base: str = BaseOption,
    eval_file: Optional[Path] = EvalOption,
    steps: int = StepsOption,
    batch_size: int = typer.Option(64, "--batch-size", min=2, help="Sentences per batch (in-batch negatives)."),
    lr: float = LearningRateOption,
    eval_every: int = EvalEveryOption,
    seed: int = SeedOption,
    template1: str = typer.Option(
        'This sentence of "[X]" means [MASK] .', "--template1", help="First view's template; also the saved model's."
    ),
    template2: str = typer.Option('This sentence : "[X]" means [MASK] .', "--template2", help="Second view's template."),
    max_seq_length: int = typer.Option(
        32, "--max-seq-length", min=8, help="Truncate each prompted input (template included) to this many tokens."
    ),
    temperature: float = typer.Option(0.05, "--temperature", min=1e-4),
    denoise: bool = typer.Option(True, "--denoise/--no-denoise", help="Template denoising of both training views."),
    inference_denoise: bool = typer.Option(
        False, "--inference-denoise", help="Save the model with template denoising at encode time too."
    ),
    limit: Optional[int] = typer.Option(None, "--limit", min=2, help="Use only the first N sentences."),
    quiet: bool = QuietOption,
) -> None:
    """PromptBERT: each sentence through two templates, the [MASK] states (minus each template's bias) are the
    two views of InfoNCE with in-batch negatives. The model is saved with prompt pooling and --template1, which
    `searchengine index --model OUT` applies by itself.

    Example: searchengine train promptbert --data ../shared/data/unsup/wiki_sentences.txt.gz --eval ../shared/data/stsb/dev.tsv --out promptbert-model
    """
    with user_errors():
        from searchengine.training.methods.promptbert import train_promptbert

        settings = _settings(steps, lr, eval_every, seed, quiet)
        report = train_promptbert(
            base, data, out, settings, batch_size, eval_file, template1, template2, max_seq_length, temperature,
            denoise, inference_denoise, limit,
        )  # fmt: skip
        _summary(report, out)


@train_app.command("cross-encoder")
def cross_encoder(
    data: Path = typer.Option(..., "--data", help="Scored pairs: score<TAB>sentence1<TAB>sentence2."),
    out: Path = OutOption,
    base: str = BaseOption,
    eval_file: Optional[Path] = EvalOption,
    steps: int = StepsOption,
    batch_size: int = typer.Option(16, "--batch-size", min=1, help="Pairs per batch."),
    lr: float = LearningRateOption,
    eval_every: int = EvalEveryOption,
    seed: int = SeedOption,
    max_seq_length: int = typer.Option(
        256, "--max-seq-length", min=8, help="Truncate each pair (both sentences together) to this many tokens."
    ),
    max_score: float = typer.Option(5.0, "--max-score", help="The largest score of the data's scale (STS-B: 5)."),
    both_orders: bool = typer.Option(
        True, "--both-orders/--one-order", help="Train on (a, b) and (b, a), so the score ignores the order."
    ),
    quiet: bool = QuietOption,
) -> None:
    """Cross-encoder: both sentences in one pass, a new one-output head on the base's transformer, trained with
    binary cross-entropy against the score scaled to [0, 1]; scores are sigmoid(logit). --eval reports Spearman
    x 100 of its scores. The model loads in `searchengine query --rerank`, transformers and sentence-transformers.

    Example: searchengine train cross-encoder --data ../shared/data/stsb/train.tsv --eval ../shared/data/stsb/dev.tsv --out ce-model
    """
    with user_errors():
        from searchengine.training.methods.cross_encoder import train_cross_encoder

        settings = _settings(steps, lr, eval_every, seed, quiet)
        report = train_cross_encoder(
            base, data, out, settings, eval_file, batch_size, max_seq_length, max_score, both_orders
        )
        _summary(report, out)
