"""Options shared by several commands, defined once so their names and help agree everywhere."""

from __future__ import annotations

import typer

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
    help="Model directory or Hugging Face id.",
    show_default="bundled all-MiniLM-L6-v2",
)
PrecisionOption = typer.Option(
    "auto",
    "--precision",
    help="Encoder precision: auto (fp16 on a GPU; bf16 on CPUs with AMX; on CPUs with AVX512-BF16, bf16 in torch for "
    "calls of 64 texts or more (1.5-1.6x faster there) and fp32 in ONNX Runtime for queries; else fp32), fp32, bf16, "
    "fp16 (GPU) or int8 "
    "(faster on CPU, about 1 point of STS-B lower; docs/benchmarks.md).",
)
BackendOption = typer.Option(
    "auto",
    "--backend",
    help="Run the encoder in torch or onnx (ONNX Runtime, the 'onnx' extra; 4x faster per query on CPU, same "
    "vectors); auto: onnx where installed and able to run the model, else torch.",
)
ThreadsOption = typer.Option(
    None,
    "--threads",
    min=1,
    help="CPU threads while encoding.",
    show_default="torch's or ONNX Runtime's own choice",
)
