"""Every method of `searchengine train`, by name: its options (a dataclass of training/method_options.py, whose
fields the command line turns into options) and the function that runs it.

Adding a method: a module with its train function (keyword-only arguments named like the options' fields, see
MethodOptions.arguments), its options dataclass, and one line in METHODS. The train function is named here, not
imported, so listing the methods and their options loads no torch."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any

from searchengine.training.method_options import (
    ConSERTOptions,
    CrossEncoderOptions,
    FlowOptions,
    NATSVOptions,
    PromptBERTOptions,
    PseudoQueriesOptions,
    SBERTNLIOptions,
    SBERTSTSOptions,
    SBERTTripletOptions,
    SimCSEOptions,
    SNOptions,
    SupervisedContrastiveOptions,
    WhiteningOptions,
)
from searchengine.training.options import MethodOptions


@dataclass(frozen=True)
class Method:
    options: type[MethodOptions]
    train: str
    """"module:function", called with the options' arguments() as keywords; it returns a report with summary()."""

    def train_function(self) -> Any:
        """The train function, imported now (with the training code it needs)."""
        module, _, name = self.train.partition(":")
        return getattr(import_module(module), name)

    def run(self, options: MethodOptions) -> Any:
        """Train (or fit) with `options`; returns the function's report."""
        return self.train_function()(**options.arguments())


METHODS: dict[str, Method] = {
    "whitening": Method(WhiteningOptions, "searchengine.training.fit_whitening:fit_whitening"),
    "flow": Method(FlowOptions, "searchengine.training.fit_flow:fit_flow"),
    "sn": Method(SNOptions, "searchengine.training.fit_normalisation:fit_sn"),
    "natsv": Method(NATSVOptions, "searchengine.training.fit_normalisation:fit_natsv"),
    "sbert-nli": Method(
        SBERTNLIOptions, "searchengine.training.methods.sbert_classification:train_sbert_classification"
    ),
    "sbert-sts": Method(SBERTSTSOptions, "searchengine.training.methods.sbert_regression:train_sbert_regression"),
    "sbert-triplet": Method(SBERTTripletOptions, "searchengine.training.methods.sbert_triplet:train_sbert_triplet"),
    "simcse": Method(SimCSEOptions, "searchengine.training.methods.simcse:train_simcse"),
    "supervised-contrastive": Method(
        SupervisedContrastiveOptions,
        "searchengine.training.methods.supervised_contrastive:train_supervised_contrastive",
    ),
    "consert": Method(ConSERTOptions, "searchengine.training.methods.consert:train_consert"),
    "promptbert": Method(PromptBERTOptions, "searchengine.training.methods.promptbert:train_promptbert"),
    "pseudo-queries": Method(PseudoQueriesOptions, "searchengine.training.methods.pseudo_queries:train_pseudo_queries"),
    "cross-encoder": Method(CrossEncoderOptions, "searchengine.training.methods.cross_encoder:train_cross_encoder"),
}
