"""The training registry: every method's train function takes exactly its options' arguments, as keywords, and
the shared groups turn the command-line options into the functions' arguments."""

from __future__ import annotations

import inspect
from dataclasses import MISSING, fields
from pathlib import Path

import pytest
from searchengine.training.augmentations import Augmentation
from searchengine.training.loop import TrainingSettings
from searchengine.training.method_options import ConSERTOptions, FlowOptions, SimCSEOptions
from searchengine.training.registry import METHODS

from searchengine.errors import SearchEngineError


def with_required(options: type, **values: object):  # noqa: ANN201
    """An options instance with a placeholder path for every required field."""
    required = {item.name: Path("placeholder") for item in fields(options) if item.default is MISSING}
    return options(**{**required, **values})


@pytest.mark.parametrize("name", list(METHODS))
def test_each_train_function_takes_its_options_as_keywords(name: str) -> None:
    method = METHODS[name]
    signature = inspect.signature(method.train_function())
    assert all(parameter.kind is inspect.Parameter.KEYWORD_ONLY for parameter in signature.parameters.values())
    signature.bind(**with_required(method.options).arguments())  # raises on a missing or unknown argument


def test_training_options_become_settings() -> None:
    options = with_required(SimCSEOptions, steps=7, learning_rate=0.1, eval_every=3, seed=5, quiet=True, limit=9)
    arguments = options.arguments()
    assert arguments["settings"] == TrainingSettings(steps=7, learning_rate=0.1, eval_every=3, seed=5, progress=False)
    assert arguments["limit"] == 9 and not {"steps", "learning_rate", "eval_every", "seed", "quiet"} & set(arguments)


def test_fit_options_become_a_progress_flag() -> None:
    arguments = with_required(FlowOptions, quiet=True, learning_rate=0.01).arguments()
    assert arguments["progress"] is False and arguments["learning_rate"] == 0.01 and "quiet" not in arguments


def test_consert_options_parse_the_views_and_the_supervised_phase() -> None:
    arguments = with_required(ConSERTOptions, views="token_cutoff:0.3, dropout", steps=50).arguments()
    assert arguments["views"] == (Augmentation("token_cutoff", 0.3), Augmentation("dropout", 0.1))
    assert arguments["supervised_settings"] is None
    arguments = with_required(ConSERTOptions, steps=50, supervised_steps=20).arguments()
    assert arguments["supervised_settings"].steps == 20 and arguments["settings"].steps == 50
    with pytest.raises(SearchEngineError, match="unknown augmentation"):
        with_required(ConSERTOptions, views="shuffle,synonyms").arguments()
