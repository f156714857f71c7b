"""Every method of `searchengine train`, by name, in the order `searchengine train --help` lists them.

A method is one class in one module of training/methods/ (its options, how it reads its data, its loss); adding
one is that module and one line here. The method modules import no torch until a method runs, so listing the
methods and their options loads no training code."""

from __future__ import annotations

from searchengine.training.method import Method
from searchengine.training.methods.consert import ConSERT
from searchengine.training.methods.cross_encoder import CrossEncoderTraining
from searchengine.training.methods.flow import FlowFit
from searchengine.training.methods.natsv import NATSVFit
from searchengine.training.methods.promptbert import PromptBERT
from searchengine.training.methods.pseudo_queries import PseudoQueries
from searchengine.training.methods.sbert_classification import SBERTClassification
from searchengine.training.methods.sbert_regression import SBERTRegression
from searchengine.training.methods.sbert_triplet import SBERTTriplet
from searchengine.training.methods.simcse import SimCSE
from searchengine.training.methods.sn import SNFit
from searchengine.training.methods.supervised_contrastive import SupervisedContrastive
from searchengine.training.methods.whitening import WhiteningFit

METHODS: dict[str, type[Method]] = {
    "whitening": WhiteningFit,
    "flow": FlowFit,
    "sn": SNFit,
    "natsv": NATSVFit,
    "sbert-nli": SBERTClassification,
    "sbert-sts": SBERTRegression,
    "sbert-triplet": SBERTTriplet,
    "simcse": SimCSE,
    "supervised-contrastive": SupervisedContrastive,
    "consert": ConSERT,
    "promptbert": PromptBERT,
    "pseudo-queries": PseudoQueries,
    "cross-encoder": CrossEncoderTraining,
}
