"""`searchengine train METHOD`: one subcommand per method of the training registry (training/registry.py),
generated from the method's dataclass. Each field becomes an option: `--field-name` (or the flag in its
metadata), its type and default, and the help, bounds and short flag of its metadata; the class's docstring
is the command's help.

The registry and the method modules import no torch: a method's training code is imported only when its command runs.
The commands themselves are made from the registry at the first look at the `train` group's commands (its help, or
one of them run), so that no other command imports the registry and the methods' options (about 18 ms a start)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import MISSING, Field, fields
from typing import TYPE_CHECKING, Any, get_type_hints

import typer
from typer.core import TyperGroup

from searchengine.cli.errors import user_errors

if TYPE_CHECKING:
    from searchengine.training.method import Method

Command = Any
"""A command of typer's click (typer.main.get_command's kind of object)."""


class _MethodCommands(MutableMapping[str, Command]):
    """The `train` group's commands, one per method of the registry, made at the first look at them."""

    def __init__(self) -> None:
        self._made: dict[str, Command] | None = None

    def _commands(self) -> dict[str, Command]:
        if self._made is None:
            self._made = dict(_method_commands())
        return self._made

    def __getitem__(self, name: str) -> Command:
        return self._commands()[name]

    def __setitem__(self, name: str, command: Command) -> None:
        self._commands()[name] = command

    def __delitem__(self, name: str) -> None:
        del self._commands()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._commands())

    def __len__(self) -> int:
        return len(self._commands())


class MethodGroup(TyperGroup):
    """The `train` group, whose commands are made from the training registry only when it is used."""

    def __init__(self, **attributes: Any) -> None:  # noqa: ANN401 (typer's own keyword arguments)
        super().__init__(**attributes)
        self.commands = _MethodCommands()


train_app = typer.Typer(
    help="Train or calibrate a sentence encoder; writes a sentence-transformers model directory (--out).",
    no_args_is_help=True,
    cls=MethodGroup,
)


def _display_order(options: type) -> list[Field]:
    """Required options first; then --base, the method's own options, and those of the groups it builds on, the
    most specific group first (so --quiet comes last)."""
    from searchengine.training.method import Method

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
        from searchengine.training.method import TrainingMethod
        from searchengine.training.threads import use_passive_openmp_waits

        use_passive_openmp_waits()  # before anything imports torch
        with user_errors(kept="the output directory holds the last whole model written there, if any"):
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


def _method_commands() -> dict[str, Command]:
    """A command for each method of the training registry, by name, in its order, its help the method's docstring
    made flowing text as every other command's is (`flowing`, in searchengine/cli/__init__.py)."""
    from searchengine.cli import flowing
    from searchengine.training.registry import METHODS

    methods = typer.Typer()
    for name, method in METHODS.items():
        methods.command(name, help=flowing(inspect.getdoc(method) or ""))(_command(method))
    return typer.main.get_group(methods).commands
