"""ConSERT (Yan et al. 2021): contrastive learning between two augmented views of each sentence (NT-Xent),
alone or combined with SBERT's NLI classification objective in the paper's three schedules:

- unsup: NT-Xent on unlabelled sentences (`data`).
- joint: L_ce + alpha * L_con, both on the NLI pairs (`nli`).
- sup-unsup: L_ce on NLI first, then NT-Xent on the unlabelled sentences.
- joint-unsup: the joint objective on NLI first, then NT-Xent on the unlabelled sentences.

The two views are any two augmentations of training.augmentations. With `adversarial` (an epsilon), the joint
objective's second view is instead the FGV adversarial perturbation of the supervised loss (training.adversarial),
which needs that supervised loss: so it is refused for the unsup and sup-unsup schedules."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from searchengine.training.method import BiEncoderMethod
from searchengine.training.methods.sbert_classification import SBERTClassification
from searchengine.training.options import option

from searchengine.errors import SearchEngineError

if TYPE_CHECKING:
    import torch
    from searchengine.training.augmentations import Augmentation
    from searchengine.training.loop import LossFunction, TrainingReport
    from searchengine.training.sentence_model import SentenceModel
    from searchengine.training.settings import TrainingSettings

    from searchengine.evaluation.labelled_data import LabelledPair

Schedule = Literal["unsup", "joint", "sup-unsup", "joint-unsup"]
SCHEDULES = get_args(Schedule)


@dataclass(kw_only=True)
class ConSERT(BiEncoderMethod):
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

    def augmentations(self) -> tuple[Augmentation, ...]:
        """`views` parsed: the two augmentations whose outputs are contrasted."""
        from searchengine.training.augmentations import Augmentation  # imports torch: only when the method runs

        return tuple(Augmentation.parse(view) for view in self.views.split(",") if view.strip())

    def run(self) -> TrainingReport:
        """The schedule with the options' settings; --supervised-steps sets the NLI phase's steps."""
        settings = self.settings()
        return self.train(settings, replace(settings, steps=self.supervised_steps) if self.supervised_steps else None)

    def train(self, settings: TrainingSettings, supervised_settings: TrainingSettings | None = None) -> TrainingReport:
        """Run one ConSERT schedule. `settings` drive the last phase (the one saved to `out`);
        `supervised_settings` the NLI phase of sup-unsup and joint-unsup (default: the same)."""
        from searchengine.training.loop import seed_everything
        from searchengine.training.sentences import read_sentences

        from searchengine.evaluation.labelled_data import read_labelled_pairs

        views = self.augmentations()
        self.check(views)
        sentences = read_sentences(self.data, self.limit) if self.data is not None else []
        pairs = read_labelled_pairs(self.nli) if self.nli is not None else []
        seed_everything(settings.seed)
        model = self.load_model()
        details = {
            "schedule": self.schedule,
            "views": [f"{view.name}:{view.rate:g}" for view in views],
            "temperature": self.temperature,
            "data": str(self.data) if self.data else None,
            "nli": str(self.nli) if self.nli else None,
        }
        if self.schedule in ("joint", "joint-unsup"):
            details.update(alpha=self.alpha, adversarial_epsilon=self.adversarial)
        first_settings = supervised_settings or settings

        if self.schedule == "joint":
            return self._train_joint(model, pairs, self.out, settings, views, details)
        if self.schedule == "sup-unsup":
            nli = SBERTClassification(base=self.base, data=self.nli, out=None, batch_size=self.supervised_batch_size)
            first = nli.train(first_settings, model)
        elif self.schedule == "joint-unsup":
            first = self._train_joint(model, pairs, None, first_settings, views, {})
        else:
            first = None
        if first is not None:
            details["first_phase"] = {
                "steps": first.steps,
                "seconds": round(first.seconds, 1),
                "final_loss": first.final_loss,
            }
            if first.interrupted:
                raise KeyboardInterrupt
        return self._train_loop(
            f"consert-{self.schedule}",
            model,
            self._contrastive(model, views),
            sentences,
            self.batch_size,
            settings,
            self.out,
            texts_per_example=2,
            details={**details, "sentences": len(sentences), "batch_size": self.batch_size},
        )

    def check(self, views: tuple[Augmentation, ...]) -> None:
        """Refuse a schedule without the data it trains on, and adversarial views without a supervised loss."""
        schedule = self.schedule
        if schedule not in SCHEDULES:
            raise SearchEngineError(f"unknown schedule {schedule!r}; choose one of {', '.join(SCHEDULES)}")
        if schedule != "joint" and self.data is None:
            raise SearchEngineError(
                f"the {schedule} schedule trains on unlabelled sentences: give a file of them as data"
            )
        if schedule != "unsup" and self.nli is None:
            raise SearchEngineError(
                f"the {schedule} schedule needs NLI pairs (premise, hypothesis, label): give a file of them as nli"
            )
        if self.adversarial is not None and schedule not in ("joint", "joint-unsup"):
            raise SearchEngineError(
                "adversarial augmentation perturbs along the gradient of a supervised loss, so it needs one: "
                "use the joint or joint-unsup schedule with a file of NLI pairs as nli"
            )
        if len(views) != 2:
            raise SearchEngineError(f"ConSERT contrasts exactly two views, got {len(views)}")

    def _contrastive(self, model: SentenceModel, views: tuple[Augmentation, ...]) -> LossFunction:
        """NT-Xent between the two views of each sentence."""
        from searchengine.training.augmentations import embed_view
        from searchengine.training.objectives.contrastive import nt_xent

        def contrastive(batch: list[str]) -> torch.Tensor:
            features = model.tokenize(batch)
            first, second = embed_view(model, features, views[0]), embed_view(model, features, views[1])
            return nt_xent(first, second, self.temperature)

        return contrastive

    def _train_joint(
        self,
        model: SentenceModel,
        pairs: list[LabelledPair],
        out: Path | None,
        settings: TrainingSettings,
        views: tuple[Augmentation, ...],
        details: dict,
    ) -> TrainingReport:
        """L_ce + alpha * L_con on NLI pairs; L_con contrasts two views of every premise and hypothesis."""
        import torch
        from searchengine.training.adversarial import embed_perturbed, embed_recording_embeddings, fgv_perturbation
        from searchengine.training.augmentations import embed_view
        from searchengine.training.objectives.contrastive import nt_xent
        from searchengine.training.objectives.softmax_classification import (
            SoftmaxClassifier,
            softmax_classification_loss,
        )

        classifier = SoftmaxClassifier(model.dimension)
        adversarial, alpha, temperature = self.adversarial, self.alpha, self.temperature

        def joint(batch: list[LabelledPair]) -> torch.Tensor:
            premises = model.tokenize([pair.premise for pair in batch])
            hypotheses = model.tokenize([pair.hypothesis for pair in batch])
            labels = torch.tensor([pair.label for pair in batch], device=model.device)
            if adversarial is None:
                supervised = softmax_classification_loss(classifier, model(premises), model(hypotheses), labels)
                both = model.tokenize([pair.premise for pair in batch] + [pair.hypothesis for pair in batch])
                first, second = embed_view(model, both, views[0]), embed_view(model, both, views[1])
            else:
                u, u_embeddings = embed_recording_embeddings(model, premises)
                v, v_embeddings = embed_recording_embeddings(model, hypotheses)
                supervised = softmax_classification_loss(classifier, u, v, labels)
                first = torch.cat([u, v])
                second = torch.cat(
                    [
                        embed_perturbed(model, premises, fgv_perturbation(supervised, u_embeddings, adversarial)),
                        embed_perturbed(model, hypotheses, fgv_perturbation(supervised, v_embeddings, adversarial)),
                    ]
                )
            return supervised + alpha * nt_xent(first, second, temperature)

        return self._train_loop(
            "consert-joint",
            model,
            joint,
            pairs,
            self.supervised_batch_size,
            settings,
            out,
            texts_per_example=6 if adversarial is None else 4,  # forward passes per pair
            extra_parameters=list(classifier.parameters()),
            details={**details, "pairs": len(pairs), "supervised_batch_size": self.supervised_batch_size},
        )

    def _train_loop(
        self,
        name: str,
        model: SentenceModel,
        loss: LossFunction,
        examples: list,
        batch_size: int,
        settings: TrainingSettings,
        out: Path | None,
        texts_per_example: int,
        details: dict[str, Any],
        extra_parameters: list | None = None,
    ) -> TrainingReport:
        """One phase of the schedule through the shared loop, evaluated on the eval file when it saves."""
        from searchengine.training.loop import cycle, train

        return train(
            name,
            model,
            loss,
            cycle(examples, batch_size, settings.seed),
            settings,
            out,
            evaluate=self.evaluator(model) if out is not None else None,
            texts_per_batch=lambda batch: texts_per_example * len(batch),
            extra_parameters=extra_parameters,
            details={**self.model_details(model), **details},
        )
