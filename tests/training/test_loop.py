"""The shared training loop: best checkpoint kept, Ctrl-C leaves the last good one, nothing half-written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from searchengine.training.loop import TrainingSettings, cycle, train
from searchengine.training.model_directory import writing_model_directory
from searchengine.training.threads import default_threads
from torch import nn

from searchengine.errors import SearchEngineError


class Line(nn.Module):
    """y = w x, fitted to y = 3x; save() writes w so a test can tell checkpoints apart."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.zeros(1))

    def save(self, directory: Path) -> None:
        (directory / "w.txt").write_text(f"{self.w.item():.6f}")


def _line_loss(model: Line):
    xs = torch.linspace(-1, 1, 8)
    return lambda batch: ((model.w * xs - 3 * xs) ** 2).mean()


def test_the_best_scoring_checkpoint_is_kept(tmp_path: Path) -> None:
    model = Line()
    scores = iter([0.0, 5.0, 9.0, 7.0])  # base, step 2, step 4, step 6
    settings = TrainingSettings(steps=6, eval_every=2, learning_rate=0.1, progress=False)
    report = train(
        "line",
        model,
        _line_loss(model),
        cycle([1, 2, 3], 1, 0),
        settings,
        tmp_path / "out",
        evaluate=lambda: next(scores),
    )
    assert report.base_score == 0.0 and report.best_step == 4 and report.best_score == 9.0
    log = json.loads((tmp_path / "out" / "training_log.json").read_text())
    assert log["best_step"] == 4 and [e["score"] for e in log["evaluations"]] == [5.0, 9.0], "saved at the best step"
    assert report.losses[-1] < report.losses[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"], "no partial or old directories left behind"


def test_ctrl_c_keeps_the_last_good_checkpoint(tmp_path: Path) -> None:
    model = Line()
    inner = _line_loss(model)
    calls = {"n": 0}

    def interrupted_at_step_5(batch: object) -> torch.Tensor:
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return inner(batch)

    settings = TrainingSettings(steps=10, eval_every=2, learning_rate=0.1, progress=False)
    report = train("line", model, interrupted_at_step_5, cycle([1], 1, 0), settings, tmp_path / "out")
    assert report.interrupted and report.steps == 4 and report.saved
    log = json.loads((tmp_path / "out" / "training_log.json").read_text())
    assert log["steps"] == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_failed_write_leaves_the_old_model_untouched(tmp_path: Path) -> None:
    out = tmp_path / "model"
    out.mkdir()
    (out / "config.json").write_text("{}")
    (out / "weights").write_text("good")
    with pytest.raises(KeyboardInterrupt):
        with writing_model_directory(out) as partial:
            (partial / "weights").write_text("half")
            raise KeyboardInterrupt
    assert (out / "weights").read_text() == "good"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]
    with writing_model_directory(out) as partial:
        (partial / "weights").write_text("new")
    assert (out / "weights").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


@pytest.mark.parametrize(
    ("learning_rate", "eval_every", "what"),
    [(float("inf"), 1, "the weights are not finite"), (1e30, 10, "the loss is inf")],
)
def test_a_run_that_diverges_stops_with_one_error_and_keeps_the_last_good_model(
    tmp_path: Path, learning_rate: float, eval_every: int, what: str
) -> None:
    """`train simcse --lr inf` (or 1e30) saved a model whose weights were NaN, and said it had trained."""
    out = tmp_path / "out"
    train("line", Line(), _line_loss(Line()), cycle([1], 1, 0), TrainingSettings(steps=1, progress=False), out)
    model = Line()
    settings = TrainingSettings(steps=20, eval_every=eval_every, learning_rate=learning_rate, progress=False)
    message = "diverged at step [12] " + re.escape(
        f"({what}): lower the learning rate (now {learning_rate:g}); {out} is as"
    )
    with pytest.raises(SearchEngineError, match=message):
        train("line", model, _line_loss(model), cycle([1], 1, 0), settings, out)
    assert (out / "w.txt").read_text() == "0.000000"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_cycle_is_seeded_and_keeps_batches_full() -> None:
    first = cycle(list(range(10)), 4, seed=3)
    second = cycle(list(range(10)), 4, seed=3)
    batches = [next(first) for _ in range(5)]
    assert batches == [next(second) for _ in range(5)]
    assert all(len(batch) == 4 for batch in batches)
    assert len(set(batches[0] + batches[1])) == 8, "no repeats within an epoch"


@pytest.mark.parametrize(
    ("precision", "threads", "autocast"), [("bf16", 1, True), ("fp32", 1, False), ("fp32", None, False)]
)
def test_steps_run_in_the_chosen_precision_and_threads(precision: str, threads: int | None, autocast: bool) -> None:
    model = Line()
    inner = _line_loss(model)
    seen = []

    def recording(batch: object) -> torch.Tensor:
        seen.append((torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"), torch.get_num_threads()))
        return inner(batch)

    torch.set_num_threads(2)
    settings = TrainingSettings(steps=3, learning_rate=0.1, progress=False, precision=precision, threads=threads)
    report = train("line", model, recording, cycle([1], 1, 0), settings, None)
    used = threads or default_threads()
    assert seen == [(autocast, torch.bfloat16, used)] * 3
    assert report.settings["precision"] == precision and report.settings["threads"] == used
    assert torch.get_num_threads() == 2, "the process's thread count is restored"


def test_the_summary_shows_a_small_final_loss_in_significant_digits() -> None:
    """A strong base's in-batch loss can be 3e-05 (SimCSE on the bundled MiniLM over examples/corpus.txt): the
    summary used to print it as 'final loss 0.0000', which reads as a broken loss."""
    model = Line()
    with torch.no_grad():
        model.w.fill_(2.995)  # near y = 3x: a loss of about 1e-05
    settings = TrainingSettings(steps=2, learning_rate=1e-9, progress=False, precision="fp32")
    report = train("line", model, _line_loss(model), cycle([1], 1, 0), settings, None)
    assert 0 < report.final_loss < 1e-4
    printed = float(report.summary().split("final loss ")[1].split(";")[0])
    assert printed == pytest.approx(report.final_loss, rel=1e-3)
