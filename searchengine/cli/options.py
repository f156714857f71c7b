"""Options shared by several commands, defined once so their names and help agree everywhere."""

from __future__ import annotations

from typing import Any

import typer

from searchengine.cli.measured import BF16_BULK_SPEEDUP, INT8_SPEEDUP, INT8_STSB_CHANGE, ONNX_QUERY_SPEEDUP

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
ModelOption = typer.Option(
    None,
    "--model",
    "-m",
    help="Model directory or Hugging Face id; all-MiniLM-L6-v2 (or sentence-transformers/all-MiniLM-L6-v2) is the "
    "bundled one, loaded offline.",
    show_default="bundled all-MiniLM-L6-v2",
)
PrecisionOption = typer.Option(
    "auto",
    "--precision",
    help="Encoder precision: auto (fp16 on a GPU; bf16 on CPUs with AMX; on CPUs with AVX512-BF16, bf16 in torch for "
    f"calls of 64 texts or more ({BF16_BULK_SPEEDUP} faster there) and fp32 in ONNX Runtime for queries; else fp32), "
    f"fp32, bf16, fp16 (GPU) or int8 ({INT8_SPEEDUP} sentence-transformers' speed on CPU, {INT8_STSB_CHANGE} STS-B "
    "points; docs/benchmarks.md).",
)
BackendOption = typer.Option(
    "auto",
    "--backend",
    help=f"Run the encoder in torch or onnx (ONNX Runtime, the 'onnx' extra; {ONNX_QUERY_SPEEDUP} faster per query "
    "on CPU, same vectors); auto: onnx where installed and able to run the model, else torch.",
)
ThreadsOption = typer.Option(
    None,
    "--threads",
    min=1,
    help="CPU threads while encoding.",
    show_default="torch's or ONNX Runtime's own choice",
)


def registered_mode(name: str) -> str:
    """`name` when a retrieval mode of that name is registered, read when the option is parsed (so a mode registered
    after this module was imported is accepted too); else the error a choice of the names would give."""
    from searchengine.engine.mode_registry import mode_names

    if name not in mode_names():
        raise ValueError(f"{name!r} is not one of {', '.join(map(repr, mode_names()))}.")
    return name


def mode_option(help_text: str, show_default: str) -> Any:  # noqa: ANN401 (a typer OptionInfo)
    """The --mode option: the name of a registered retrieval mode (searchengine.engine.mode_registry)."""
    from searchengine.engine.modes import MODES

    return typer.Option(
        None,
        "--mode",
        parser=registered_mode,
        metavar="<" + "|".join(MODES) + ">",
        help=help_text,
        show_default=show_default,
    )
