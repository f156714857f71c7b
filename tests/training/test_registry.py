"""The training registry: every method is one class whose fields are its options, and the shared groups turn the
command-line options into the loop's settings or the fit's arguments."""

from __future__ import annotations

import inspect
from dataclasses import MISSING, fields
from pathlib import Path

import pytest
from searchengine.training.augmentations import Augmentation
from searchengine.training.loop import TrainingSettings
from searchengine.training.method import FitMethod, Method, TrainingMethod
from searchengine.training.methods.consert import ConSERT
from searchengine.training.methods.flow import FlowFit
from searchengine.training.methods.simcse import SimCSE
from searchengine.training.registry import METHODS

from searchengine.errors import SearchEngineError


def with_required(method: type, **values: object):  # noqa: ANN201
    """A method instance with a placeholder path for every required field."""
    required = {item.name: Path("placeholder") for item in fields(method) if item.default is MISSING}
    return method(**{**required, **values})


@pytest.mark.parametrize("name", list(METHODS))
def test_each_method_is_one_class_with_its_help_and_its_run(name: str) -> None:
    method = METHODS[name]
    assert issubclass(method, FitMethod | TrainingMethod) and inspect.getdoc(method)
    assert method.run is not Method.run
    if issubclass(method, TrainingMethod):
        assert method.train is not TrainingMethod.train or method.loss is not TrainingMethod.loss
    else:
        signature = inspect.signature(method.run)
        assert list(signature.parameters) == ["self"]


def test_training_options_become_settings() -> None:
    method = with_required(SimCSE, steps=7, learning_rate=0.1, eval_every=3, seed=5, quiet=True, limit=9)
    assert method.settings() == TrainingSettings(steps=7, learning_rate=0.1, eval_every=3, seed=5, progress=False)


def test_fit_options_become_a_progress_flag() -> None:
    arguments = with_required(FlowFit, quiet=True, learning_rate=0.01).arguments()
    assert arguments["progress"] is False and arguments["learning_rate"] == 0.01 and "quiet" not in arguments


def test_consert_parses_its_views() -> None:
    method = with_required(ConSERT, views="token_cutoff:0.3, dropout", steps=50)
    assert method.augmentations() == (Augmentation("token_cutoff", 0.3), Augmentation("dropout", 0.1))
    with pytest.raises(SearchEngineError, match="unknown augmentation"):
        with_required(ConSERT, views="shuffle,synonyms").augmentations()
