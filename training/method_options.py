"""The options of each `searchengine train` method, declared once: a dataclass per method, built on the shared
groups of training/options.py, whose docstring is the command's help (with an example) and whose fields are the
method's own options. Like those groups, this module imports no torch."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from searchengine.training.options import (
    SEED_HELP,
    TRUNCATE_HELP,
    BiEncoderOptions,
    FitOptions,
    TrainingOptions,
    option,
)

SENTENCES_HELP = "Unlabelled sentences: .txt (one per line), .jsonl or .gz."
SCORED_PAIRS_HELP = "Scored pairs: score<TAB>sentence1<TAB>sentence2."
MAX_SCORE_HELP = "The largest score of the data's scale (STS-B: 5)."
IN_BATCH_HELP = "Sentences per batch (in-batch negatives)."

Schedule = Literal["unsup", "joint", "sup-unsup", "joint-unsup"]


# --- post-processing transforms: fitted on a corpus, saved as a module of the model (index and queries apply it) ---


@dataclass(kw_only=True)
class WhiteningOptions(FitOptions):
    """BERT-whitening(-k), the same fit as `index --whiten-k`, saved as a Dense module of the model."""

    k: int | None = option(
        None, help="Dimensions to keep (whitening-k) [default: every direction the embeddings span]."
    )


@dataclass(kw_only=True)
class FlowOptions(FitOptions):
    """BERT-flow: an invertible flow trained by maximum likelihood on the frozen encoder's embeddings, which
    are then mapped to its Gaussian latent."""

    epochs: int = option(10, help="Passes over the corpus embeddings.")
    learning_rate: float = option(1e-3, flag="--lr", help="Adam learning rate.")
    blocks: int = option(8, help="Flow blocks (actnorm, permutation, additive coupling).")
    hidden: int = option(256, help="Hidden units of each coupling layer's network.")
    batch_size: int = option(256, help="Embeddings per optimisation step.")
    seed: int = option(0, help=SEED_HELP)


@dataclass(kw_only=True)
class SNOptions(FitOptions):
    """Standard normalisation (x - mean) / std per dimension, saved as a Dense module of the model."""


@dataclass(kw_only=True)
class NATSVOptions(FitOptions):
    """NATSV: null the top-k singular directions of the corpus embeddings, saved as a Dense module of the model."""

    k: int = option(1, help="Top singular directions to null.")
    centre: bool = option(False, help="Subtract the corpus mean first (all-but-the-top).")


# --- training methods: the shared loop (training/loop.py) with a method's objective ---


@dataclass(kw_only=True)
class SBERTNLIOptions(BiEncoderOptions):
    """SBERT classification: softmax over (u, v, |u - v|) with the 3 NLI labels.

    Example: searchengine train sbert-nli --data data/nli/train.tsv.gz --eval data/stsb/dev.tsv --out nli-model
    """

    data: Path = option(help="NLI pairs: premise<TAB>hypothesis<TAB>label (.tsv or .tsv.gz).")
    batch_size: int = option(16, min=2)


@dataclass(kw_only=True)
class SBERTSTSOptions(BiEncoderOptions):
    """SBERT regression: mean squared error between cos(u, v) and the score scaled to [0, 1].

    Example: searchengine train sbert-sts --data data/stsb/train.tsv --eval data/stsb/dev.tsv --out sts-model
    """

    data: Path = option(help=SCORED_PAIRS_HELP)
    batch_size: int = option(16, min=2)
    max_score: float = option(5.0, help=MAX_SCORE_HELP)


@dataclass(kw_only=True)
class SBERTTripletOptions(BiEncoderOptions):
    """SBERT triplet objective: max(||a - p|| - ||a - n|| + margin, 0).

    Example: searchengine train sbert-triplet --data data/nli/triplets.tsv.gz --eval data/stsb/dev.tsv --out triplet-model
    """

    data: Path = option(help="Triplets: anchor<TAB>positive<TAB>negative.")
    batch_size: int = option(16, min=2)
    margin: float = option(1.0, min=0.0, help="Euclidean margin epsilon.")


@dataclass(kw_only=True)
class SimCSEOptions(BiEncoderOptions):
    """Unsupervised SimCSE: the same sentence twice through dropout, InfoNCE with in-batch negatives.

    Example: searchengine train simcse --data data/unsup/wiki_sentences.txt.gz --eval data/stsb/dev.tsv --out simcse-model
    """

    data: Path = option(help=SENTENCES_HELP)
    batch_size: int = option(64, min=2, help=IN_BATCH_HELP)
    max_seq_length: int = option(32, min=8, help=TRUNCATE_HELP)
    temperature: float = option(0.05, min=1e-4)
    limit: int | None = option(None, min=2, help="Use only the first N sentences.")


@dataclass(kw_only=True)
class PseudoQueriesOptions(BiEncoderOptions):
    """Pseudo-queries: each document's title (--query-field) or first sentence is a query for the rest of it;
    InfoNCE with in-batch negatives (MultipleNegativesRankingLoss). Adapts a model to a corpus without queries.

    Example: searchengine train pseudo-queries --data data/retrieval/nfcorpus/corpus.jsonl --query-field title --out pq-model
    """

    data: Path = option(help='Documents: .txt (one per line) or .jsonl (a "text" field, the rest metadata), or .gz.')
    query_field: str | None = option(
        None, help="A .jsonl field holding each document's title, the query (without it: the first sentence)."
    )
    batch_size: int = option(16, min=2, help="Pairs per batch (in-batch negatives).")
    max_seq_length: int = option(128, min=8, help=TRUNCATE_HELP)
    temperature: float = option(0.05, min=1e-4)
    limit: int | None = option(None, min=2, help="Use only the first N documents that give a pair.")


@dataclass(kw_only=True)
class SupervisedContrastiveOptions(BiEncoderOptions):
    """Supervised contrastive learning with hard negatives (supervised SimCSE) on NLI triplets.

    Example: searchengine train supervised-contrastive --data data/nli/triplets.tsv.gz --eval data/stsb/dev.tsv --out supcon-model
    """

    data: Path = option(help="NLI triplets: anchor<TAB>positive<TAB>negative (premise, entailment, contradiction).")
    batch_size: int = option(32, min=2)
    temperature: float = option(0.05, min=1e-4)


@dataclass(kw_only=True)
class ConSERTOptions(BiEncoderOptions):
    """ConSERT: NT-Xent between two augmented views, alone or with the NLI objective in a schedule.

    Examples:

      searchengine train consert --data sentences.txt --views shuffle,feature_cutoff:0.2 --out consert-model

      searchengine train consert --schedule joint --nli data/nli/train.tsv.gz --adversarial 0.1 --out m
    """

    data: Path | None = option(None, help="Unlabelled sentences for the contrastive phase.")
    nli: Path | None = option(None, help="NLI pairs for the supervised objective (joint, sup-unsup, joint-unsup).")
    schedule: Schedule = option("unsup", help="unsup, joint, sup-unsup or joint-unsup.")
    views: str = option(
        "shuffle,feature_cutoff:0.2",
        help="Two augmentations (name or name:rate): none, shuffle, token_cutoff, feature_cutoff, dropout.",
    )
    adversarial: float | None = option(
        None, min=0.0, help="FGV epsilon: the second view becomes an adversarial one (joint schedules only)."
    )
    temperature: float = option(0.1, min=1e-4)
    alpha: float = option(0.1, min=0.0, help="Weight of the contrastive loss in the joint objective.")
    supervised_steps: int | None = option(
        None, min=1, help="Steps of the NLI phase of sup-unsup / joint-unsup [default: --steps]."
    )
    batch_size: int = option(32, min=2, help="Sentences per contrastive batch.")
    supervised_batch_size: int = option(16, min=2, help="NLI pairs per batch.")
    limit: int | None = option(None, min=2, help="Use only the first N unlabelled sentences.")

    def arguments(self) -> dict[str, Any]:
        """`views` parsed into augmentations; `supervised_steps` as the NLI phase's settings."""
        from searchengine.training.augmentations import Augmentation  # imports torch: only when the method runs

        arguments = super().arguments()
        arguments["views"] = tuple(Augmentation.parse(view) for view in self.views.split(",") if view.strip())
        steps = arguments.pop("supervised_steps")
        arguments["supervised_settings"] = replace(arguments["settings"], steps=steps) if steps else None
        return arguments


@dataclass(kw_only=True)
class PromptBERTOptions(TrainingOptions):
    """PromptBERT: each sentence through two templates, the [MASK] states (minus each template's bias) are the
    two views of InfoNCE with in-batch negatives. The model is saved with prompt pooling and --template1, which
    `searchengine index --model OUT` applies by itself.

    Example: searchengine train promptbert --data data/unsup/wiki_sentences.txt.gz --eval data/stsb/dev.tsv --out promptbert-model
    """

    data: Path = option(help=SENTENCES_HELP)
    batch_size: int = option(64, min=2, help=IN_BATCH_HELP)
    template1: str = option(
        'This sentence of "[X]" means [MASK] .', help="First view's template; also the saved model's."
    )
    template2: str = option('This sentence : "[X]" means [MASK] .', help="Second view's template.")
    max_seq_length: int = option(
        32, min=8, help="Truncate each prompted input (template included) to this many tokens."
    )
    temperature: float = option(0.05, min=1e-4)
    denoise: bool = option(True, help="Template denoising of both training views.")
    inference_denoise: bool = option(False, help="Save the model with template denoising at encode time too.")
    limit: int | None = option(None, min=2, help="Use only the first N sentences.")


@dataclass(kw_only=True)
class CrossEncoderOptions(TrainingOptions):
    """Cross-encoder: both sentences in one pass, a new one-output head on the base's transformer, trained with
    binary cross-entropy against the score scaled to [0, 1]; scores are sigmoid(logit). --eval reports Spearman
    x 100 of its scores. The model loads in `searchengine query --rerank`, transformers and sentence-transformers.

    Example: searchengine train cross-encoder --data data/stsb/train.tsv --eval data/stsb/dev.tsv --out ce-model
    """

    data: Path = option(help=SCORED_PAIRS_HELP)
    batch_size: int = option(16, min=1, help="Pairs per batch.")
    max_seq_length: int = option(256, min=8, help="Truncate each pair (both sentences together) to this many tokens.")
    max_score: float = option(5.0, help=MAX_SCORE_HELP)
    both_orders: bool = option(
        True, flag="--both-orders/--one-order", help="Train on (a, b) and (b, a), so the score ignores the order."
    )
