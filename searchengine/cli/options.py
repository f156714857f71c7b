"""Options shared by several commands, defined once so their names and help agree everywhere."""

from __future__ import annotations

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
    help=f"Run the encoder in torch, onnx (ONNX Runtime, the 'onnx' extra; {ONNX_QUERY_SPEEDUP} faster per query "
    "on CPU, same vectors) or openvino (the 'openvino' extra; its int8 is calibrated); auto: openvino for int8 "
    "where installed, else onnx where installed and able to run the model, else torch.",
)
ThreadsOption = typer.Option(
    None,
    "--threads",
    min=1,
    help="CPU threads while encoding.",
    show_default="torch's or ONNX Runtime's own choice",
)
