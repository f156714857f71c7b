"""Options shared by several commands, defined once so their names and help agree everywhere."""

from __future__ import annotations

from typing import Any

import typer

from searchengine.encoding.backend import backend_choices
from searchengine.engine.mode_registry import mode_names
from searchengine.engine.modes import MODES

IndexDirOption = typer.Option(
    None,
    "--index-dir",
    "-d",
    help="Index directory.",
    show_default="$SEARCHENGINE_INDEX or ./searchengine-index",
)
IdFieldOption = typer.Option(
    None, "--id-field", help="A .jsonl field holding each document's own id: adding that id again replaces it."
)
TextFieldOption = typer.Option("text", "--text-field", help="The .jsonl field holding each document's text.")
TitleFieldOption = typer.Option(
    None,
    "--title-field",
    help='A .jsonl field holding a title, embedded before the text ("title text", as BEIR does) and kept as metadata.',
)
MODEL_HELP = (
    "Model directory or Hugging Face id; all-MiniLM-L6-v2 (or sentence-transformers/all-MiniLM-L6-v2) is the bundled "
    "one, loaded offline."
)


def model_option(help_text: str = MODEL_HELP, show_default: str | bool = "bundled all-MiniLM-L6-v2") -> Any:  # noqa: ANN401 (a typer OptionInfo)
    """--model/-m: the sentence encoder a command loads (None: the bundled one), or, with another help, the one
    it expects."""
    return typer.Option(None, "--model", "-m", help=help_text, show_default=show_default)


ModelOption = model_option()
PoolingOption = typer.Option(None, "--pooling", help="Override the model's pooling.")
TemplateOption = typer.Option(
    None,
    "--template",
    help="Prompt pooling (PromptBERT) with this template: one [X] for the text, one [MASK] whose state is the "
    "vector, e.g. 'This sentence : \"[X]\" means [MASK] .'",
    show_default="the model's own prompt",
)
DenoiseOption = typer.Option(
    None, "--denoise/--no-denoise", help="Prompt pooling: subtract the bare template's [MASK] state."
)
BatchSizeOption = typer.Option(
    None, "--batch-size", min=1, help="Texts per forward pass.", show_default="64 on a CPU, 1024 on a GPU"
)
JsonlOption = typer.Option(False, "--jsonl", help="Read JSON lines whatever the name (e.g. from stdin).")
PrecisionOption = typer.Option(
    "auto",
    "--precision",
    help="Encoder precision: auto (fp16 on a GPU; on CPUs with AVX512-BF16 or AMX, bf16 in torch for calls of 64 "
    "texts or more, where it is faster, and fp32 in ONNX Runtime for "
    "queries and smaller calls (with --backend auto; bf16 throughout where ONNX Runtime cannot run the model); else "
    "fp32), "
    "fp32, bf16, fp16 (GPU) or int8 (faster on a CPU, for a small loss of quality). Speed and quality of each are "
    "measured in docs/benchmarks.md#encoding-speed.",
)
BACKEND_HELP = (
    "Run the encoder in torch, onnx (ONNX Runtime, the 'onnx' extra; faster per query "
    "on CPU, same vectors) or openvino (the 'openvino' extra; its int8 is calibrated, its bf16 needs AVX512-BF16 or "
    "AMX); auto: openvino for int8 where installed, else onnx where installed and able to run the model, else torch. "
    "Measured in docs/benchmarks.md#encoding-speed."
)
BackendOption = typer.Option("auto", "--backend", help=BACKEND_HELP)
"""--backend as a string the encoder checks (the server's and the MCP server's)."""


def registered_backend(name: str) -> str:
    """`name` when it is "auto" or a registered encoder backend's name, read when the option is parsed (so a backend
    registered after this module was imported is accepted too); else the error a choice of the names would give."""
    if name not in backend_choices():
        raise ValueError(f"{name!r} is not one of {', '.join(map(repr, backend_choices()))}.")
    return name


BackendChoiceOption = typer.Option(
    "auto",
    "--backend",
    parser=registered_backend,
    metavar="<" + "|".join(backend_choices()) + ">",
    help=BACKEND_HELP,
)
"""--backend as a choice of "auto" and the registered encoder backends (searchengine.encoding.backend)."""


def threads_option(
    default: int | None = None,
    help_text: str = "CPU threads while encoding.",
) -> Any:  # noqa: ANN401 (a typer OptionInfo)
    """--threads: CPU threads of the encoder (None: torch's or ONNX Runtime's own choice)."""
    shown = "torch's or ONNX Runtime's own choice" if default is None else True
    return typer.Option(default, "--threads", min=1, help=help_text, show_default=shown)


ThreadsOption = threads_option()


def quiet_option(help_text: str = "No progress bar or summary.") -> Any:  # noqa: ANN401 (a typer OptionInfo)
    """-q/--quiet: no progress output."""
    return typer.Option(False, "--quiet", "-q", help=help_text)


QuietOption = quiet_option()


def json_option(help_text: str) -> Any:  # noqa: ANN401 (a typer OptionInfo)
    """--json: print the command's result as JSON (what it holds, `help_text` says)."""
    return typer.Option(False, "--json", help=help_text)


def seed_option(help_text: str) -> Any:  # noqa: ANN401 (a typer OptionInfo)
    """--seed: the random seed (0 unless given), so that a run can be repeated."""
    return typer.Option(0, "--seed", help=help_text)


def host_option(help_text: str) -> Any:  # noqa: ANN401 (a typer OptionInfo)
    """--host: the address a server listens on (127.0.0.1: this machine only)."""
    return typer.Option("127.0.0.1", "--host", help=help_text)


def port_option(default: int, help_text: str) -> Any:  # noqa: ANN401 (a typer OptionInfo)
    """-p/--port: the port a server listens on (0: any free one)."""
    return typer.Option(default, "--port", "-p", min=0, max=65535, help=help_text)


def api_key_option(help_text: str) -> Any:  # noqa: ANN401 (a typer OptionInfo)
    """--api-key, or $SEARCHENGINE_API_KEY: the key a server requires as 'Authorization: Bearer KEY'."""
    return typer.Option(None, "--api-key", envvar="SEARCHENGINE_API_KEY", show_envvar=True, help=help_text)


def registered_mode(name: str) -> str:
    """`name` when a retrieval mode of that name is registered, read when the option is parsed (so a mode registered
    after this module was imported is accepted too); else the error a choice of the names would give."""
    if name not in mode_names():
        raise ValueError(f"{name!r} is not one of {', '.join(map(repr, mode_names()))}.")
    return name


def mode_option(help_text: str, show_default: str) -> Any:  # noqa: ANN401 (a typer OptionInfo)
    """The --mode option: the name of a registered retrieval mode (searchengine.engine.mode_registry)."""
    return typer.Option(
        None,
        "--mode",
        parser=registered_mode,
        metavar="<" + "|".join(MODES) + ">",
        help=help_text,
        show_default=show_default,
    )
