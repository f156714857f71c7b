"""`searchengine train METHOD`: one subcommand per method of the training registry (training/registry.py),
generated from the method's dataclass. Each field becomes an option: `--field-name` (or the flag in its
metadata), its type and default, and the help, bounds and short flag of its metadata; the class's docstring
is the command's help.

The registry and the method modules import no torch: a method's training code is imported only when its command runs,
so `searchengine --help` and queries stay fast."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import MISSING, Field, fields
from typing import Any, get_type_hints

import typer

from searchengine.cli.errors import user_errors
from searchengine.training.method import Method, TrainingMethod
from searchengine.training.registry import METHODS
from searchengine.training.threads import use_passive_openmp_waits

train_app = typer.Typer(
    help="Train or calibrate a sentence encoder; writes a sentence-transformers model directory (--out).",
    no_args_is_help=True,
)


def _display_order(options: type) -> list[Field]:
    """Required options first; then --base, the method's own options, and those of the groups it builds on, the
    most specific group first (so --quiet comes last)."""
    place = {}
    for depth, cls in enumerate((Method, *options.__mro__)):
        for position, name in enumerate(inspect.get_annotations(cls)):
            place.setdefault(name, (depth, position))
    return sorted(fields(options), key=lambda item: (item.default is not MISSING, place[item.name]))


def _parameter(item: Field, annotation: Any) -> inspect.Parameter:
    """The typer option of one options field."""
    metadata = item.metadata
    flag = metadata.get("flag", "--" + item.name.replace("_", "-"))
    if item.default is True and "/" not in flag:
        flag += f"/--no-{flag[2:]}"
    declarations = (flag, metadata["short"]) if "short" in metadata else (flag,)
    default = ... if item.default is MISSING else item.default
    typer_option = typer.Option(
        default, *declarations, help=metadata.get("help"), min=metadata.get("min"), max=metadata.get("max")
    )
    return inspect.Parameter(item.name, inspect.Parameter.KEYWORD_ONLY, default=typer_option, annotation=annotation)


def _command(method: type[Method]) -> Callable[..., None]:
    """A command taking the options of `method`, running it, and printing its report."""

    def command(**values: Any) -> None:
        use_passive_openmp_waits()  # before anything imports torch
        with user_errors():
            options = method(**values)
            report = options.run()
        typer.echo(report.summary())
        if isinstance(options, TrainingMethod):
            if report.saved:
                typer.echo(f"Saved to {options.out}")
            elif report.interrupted:
                raise typer.Exit(130)

    types = get_type_hints(method)
    command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [_parameter(item, types[item.name]) for item in _display_order(method)]
    )
    return command


for _name, _method in METHODS.items():
    train_app.command(_name, help=inspect.getdoc(_method))(_command(_method))
