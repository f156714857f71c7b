"""Encoding at the machine's limit (issue 25): the CPU's own matmul peak, the default encoder's achieved GFLOP/s as
a fraction of it, where the encoder's time goes, and lossless variants that might close the gap, in one process.

- Peak: a square --matmul matmul (default 2048) in torch bf16, fp32 and, where the CPU has VNNI or AMX int8, int8
  (torch._int_mm: int8 inputs, int32 accumulation), each timed for about --peak-seconds, the precisions taking turns
  over --rounds rounds; the best round per precision (a peak is what the machine can do, not its median), medians
  beside it. torch's own intra-op threads (all cores).
- FLOPs of the encoder, from the model's config and each text's real token count (padding does not count): per
  layer and token 2·(4·h² + 2·h·ffn) for the linear layers (Q, K, V, output, the two feed-forward ones), plus
  4·n²·h per layer for a text of n tokens for attention (Q·Kᵀ and the weights times V). all-MiniLM-L6-v2:
  h=384, ffn=1536, 6 layers.
- Throughput: the default Encoder() and the lossless variants (below) embed the same texts in one call per round,
  taking turns in an order that rotates each round, after a warm-up; sentences/s per round, median, achieved
  GFLOP/s and its fraction of every measured peak, and the smallest cosine to torch fp32's vectors on the same
  texts (lossless: at least 0.9999). Texts: --texts distinct STS-B test sentences (short), --texts Wikipedia
  sentences (../shared/data/unsup, medium) and --long NFCorpus documents, title + abstract (long).
- Stages, for the default encoder on each text set: wall time of the Encoder's own steps, measured by wrapping
  them (tokenize: Encoder._tokenize; batch and pad: from the batch's start to the model call; the model; pool:
  the pooling function; copy out: the rest of the batch, normalising and the copy into numpy; other: sorting and
  the rest of `encode`), and the model's time split by operator (linear, attention, norm, activation, embedding,
  other) from ONNX Runtime's profiler (per-node kernel times) where ONNX Runtime runs the model, from
  torch.profiler (self CPU time per aten op) where torch does; torch fp32's split beside it. ONNX Runtime's fused
  Attention node includes the Q, K and V projections, so its "attention" holds a quarter of the linear FLOPs.
- Variants (TRIED; all fp32, so lossless by construction, checked by the cosine): ONNX Runtime in batches of 32 and
  128 (the default is 64), on 1 thread, and with its threads sleeping instead of spinning between kernels; torch
  fp32 through torch.compile (inductor, dynamic shapes); torch fp32 traced and frozen by TorchScript with oneDNN
  Graph fusion. Also on request (--variants), on CPUs with bf16: torch bf16 through torch.compile, and torch bf16
  with transformers' eager attention in place of the fused kernel; OpenVINO fp32 and the int8 runtimes, ONNX Runtime's dynamic int8 and
  OpenVINO's calibrated static int8 (lossy: their GFLOP/s set against the int8 peak; the cosine says how far).
- Single-query latency: one short STS-B sentence per call, --queries calls per encoder, p50 and p99.
- A plot (--plot, default docs/encoding_limit.png): for each text length, the default's sentences/s next to the
  sentences/s the bf16 and fp32 matmul peaks would allow at the same FLOPs.
- The user's bar (--index N): `searchengine index` of N Wikipedia sentences end to end, in a fresh process, against
  sentence-transformers fp32 merely encoding them, taking turns over --index-rounds rounds; --searchengine names
  the executables to compare (e.g. main's and a branch's).

Usage: .venv/bin/python benchmarks/encoding/encoding_limit.py [--texts 1000] [--long 100] [--rounds 3] [--queries 200]
       [--variants "onnx fp32 batch 128,torch fp32 compiled"]
       [--index 10000 --searchengine PATH] [--out benchmarks/encoding/results/encoding_limit.json] [--plot docs/encoding_limit.png]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from transformers import AutoConfig

import searchengine.encoding.encoder as encoder_module
from benchmarks.datasets.data_folder import DATA
from benchmarks.encoding.bulk_precision import long_texts, query_latency
from benchmarks.encoding.encoding_speed import machine, min_cosine, timing_texts
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from benchmarks.harness.rounds import rotation
from searchengine.encoding.encoder import Encoder
from searchengine.encoding.precision import cpu_flags

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = "torch fp32"

# ---------------------------------------------------------------------------------------------------- the peak


def int8_matmul_available() -> bool:
    """Whether the CPU has int8 dot-product instructions (VNNI or AMX int8) that make an int8 peak meaningful."""
    return bool({"avx512_vnni", "avx_vnni", "amx_int8"} & cpu_flags())


def matmul_peaks(size: int, seconds: float, rounds: int) -> dict:
    """GFLOP/s of a size×size matmul per precision, the precisions taking turns each round."""
    generator = torch.Generator().manual_seed(0)
    operands: dict[str, tuple[Callable, torch.Tensor, torch.Tensor]] = {}
    for name, dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        a, b = (torch.randn(size, size, generator=generator).to(dtype) for _ in range(2))
        operands[name] = (torch.matmul, a, b)
    if int8_matmul_available():
        a, b = (torch.randint(-128, 128, (size, size), generator=generator, dtype=torch.int8) for _ in range(2))
        operands["int8"] = (torch._int_mm, a, b)  # noqa: SLF001 (torch's int8 GEMM with int32 accumulation)
    per_round: dict[str, list[float]] = defaultdict(list)
    for function, a, b in operands.values():
        function(a, b)  # warm-up: oneDNN picks its kernel on the first call
    with torch.inference_mode():
        for _ in range(rounds):
            for name, (function, a, b) in operands.items():
                calls, started = 0, time.perf_counter()
                while time.perf_counter() - started < seconds:
                    function(a, b)
                    calls += 1
                per_round[name].append(2 * size**3 * calls / (time.perf_counter() - started) / 1e9)
    return {
        name: {
            "gflops_best": round(max(values), 1),
            "gflops_median": round(statistics.median(values), 1),
            "gflops_per_round": [round(value, 1) for value in values],
        }
        for name, values in per_round.items()
    } | {"int8_kernel": "torch._int_mm" if "int8" in operands else None, "size": size}


# ---------------------------------------------------------------------------------------------------- FLOPs


def encoder_flops(encoder: Encoder, texts: list[str]) -> dict:
    """The useful FLOPs of encoding `texts` (real tokens, no padding), split into linear layers and attention."""
    config = AutoConfig.from_pretrained(encoder.source.transformer_path)
    hidden, ffn, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    lengths = np.array(
        [len(ids) for ids in encoder.tokenizer(texts, truncation=True, max_length=encoder.max_seq_length)["input_ids"]]
    )
    linear = float(layers * 2 * (4 * hidden * hidden + 2 * hidden * ffn) * lengths.sum())
    attention = float(layers * 4 * hidden * (lengths.astype(np.float64) ** 2).sum())
    return {
        "texts": len(texts),
        "mean_tokens": round(float(lengths.mean()), 1),
        "gflop_linear": round(linear / 1e9, 2),
        "gflop_attention": round(attention / 1e9, 2),
        "gflop_per_text": round((linear + attention) / len(texts) / 1e9, 4),
        "padding_overhead": padding_overhead(lengths, encoder.batch_size),
    }


def padding_overhead(lengths: np.ndarray, batch_size: int) -> dict:
    """Padded tokens over real tokens with the encoder's smart batching (sorted by length) and without."""

    def padded(ordered: np.ndarray) -> int:
        return sum(
            int(ordered[i : i + batch_size].max()) * len(ordered[i : i + batch_size])
            for i in range(0, len(ordered), batch_size)
        )

    return {
        "sorted": round(padded(np.sort(lengths)[::-1]) / lengths.sum(), 3),
        "input_order": round(padded(lengths) / lengths.sum(), 3),
    }


# ---------------------------------------------------------------------------------------------------- variants


def lossless_variants(names: list[str]) -> dict[str, Callable[[], Encoder]]:
    """Name -> how to build it (all lossless but the int8 ones asked for by name). The default first, torch fp32 (the reference vectors) second."""
    available: dict[str, Callable[[], Encoder]] = {
        "default": Encoder,
        REFERENCE: lambda: Encoder(backend="torch", precision="fp32"),
        "onnx fp32 batch 32": lambda: Encoder(backend="onnx", precision="fp32", batch_size=32),
        "onnx fp32 batch 128": lambda: Encoder(backend="onnx", precision="fp32", batch_size=128),
        "onnx fp32 batch 256": lambda: Encoder(backend="onnx", precision="fp32", batch_size=256),
        "onnx fp32 1 thread": lambda: Encoder(backend="onnx", precision="fp32", threads=1),
        "onnx fp32": lambda: Encoder(backend="onnx", precision="fp32"),
        "torch bf16": lambda: Encoder(backend="torch", precision="bf16"),
        "openvino fp32": lambda: Encoder(backend="openvino", precision="fp32"),
        "openvino bf16": lambda: Encoder(backend="openvino", precision="bf16"),
        "onnx int8": lambda: Encoder(backend="onnx", precision="int8"),
        "openvino int8": lambda: Encoder(backend="openvino", precision="int8"),
        "onnx fp32 spinning": onnx_fp32_with_spinning,
        "torch fp32 compiled": lambda: compiled_torch("fp32"),
        "torch fp32 oneDNN graph": traced_torch_fp32,
        "torch bf16 compiled": lambda: compiled_torch("bf16"),
        "torch bf16 eager attention": torch_bf16_eager_attention,
    }
    unknown = [name for name in names if name not in available]
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; choose from {list(available)}")
    return {
        name: available[name] for name in ["default", REFERENCE, *[n for n in names if n not in ("default", REFERENCE)]]
    }


TRIED = (
    "onnx fp32 batch 32",
    "onnx fp32 batch 128",
    "onnx fp32 1 thread",
    "onnx fp32 spinning",
    "torch fp32 compiled",
    "torch fp32 oneDNN graph",
)
"""The variants a full run times (lossless_variants lists every one it knows)."""


def onnx_fp32_with_spinning() -> Encoder:
    """ONNX Runtime fp32 whose worker threads spin between kernels, ONNX Runtime's own default (the encoder's
    sessions let them sleep instead: searchengine.encoding.onnx_cache.open_session)."""
    from searchengine.encoding.onnx_cache import open_session

    encoder = Encoder(backend="onnx", precision="fp32")
    session = open_session(encoder.model.path, encoder.threads)
    options = session.get_session_options()
    options.add_session_config_entry("session.intra_op.allow_spinning", "1")
    encoder.model.session = type(session)(str(encoder.model.path), options, providers=["CPUExecutionProvider"])
    return encoder


def compiled_torch(precision: str) -> Encoder:
    """torch in `precision` with the transformer through torch.compile (inductor, dynamic shapes: batches vary in
    width). Inductor's compiled kernels are cached on disk, so the build time differs between a first run and the next."""
    encoder = Encoder(backend="torch", precision=precision)
    encoder.model = torch.compile(encoder.model, dynamic=True)
    return encoder


def torch_bf16_eager_attention() -> Encoder:
    """torch bf16 with the attention written out as matmul, softmax, matmul (transformers' "eager" attention) instead
    of torch's fused scaled_dot_product_attention, whose CPU kernel takes over a quarter of the bf16 model's time
    on short texts for about 1% of its FLOPs."""
    encoder = Encoder(backend="torch", precision="bf16")
    encoder.model.set_attn_implementation("eager")
    return encoder


def traced_torch_fp32() -> Encoder:
    """torch fp32 with the transformer traced and frozen by TorchScript with oneDNN Graph fusion on: the fused
    linear + GELU, linear + add + layer norm and attention partitions oneDNN offers on x86 CPUs."""
    encoder = Encoder(backend="torch", precision="fp32")
    encoder.model = TracedTransformer(encoder.model)
    return encoder


class TracedTransformer(torch.nn.Module):
    """The transformer traced once and frozen, with oneDNN Graph on (a process-wide switch that only TorchScript
    graphs read; the cosine check catches a trace that does not generalise to other batch shapes)."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model
        self.config = model.config
        self.traced: torch.jit.ScriptModule | None = None
        torch.jit.enable_onednn_fusion(True)

    def forward(self, output_hidden_states: bool = False, **inputs: torch.Tensor) -> SimpleNamespace:  # noqa: ARG002
        names = sorted(inputs)
        if self.traced is None:
            wrapper = _Positional(self.model, names).eval()
            with torch.no_grad():
                self.traced = torch.jit.freeze(torch.jit.trace(wrapper, tuple(inputs[n] for n in names), strict=False))
        return SimpleNamespace(last_hidden_state=self.traced(*(inputs[n] for n in names)), hidden_states=None)


class _Positional(torch.nn.Module):
    """The Hugging Face model with positional inputs and one output, as torch.jit.trace wants it."""

    def __init__(self, model: torch.nn.Module, names: list[str]) -> None:
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(self.names, inputs))).last_hidden_state


# ---------------------------------------------------------------------------------------------------- stages


class StageClock:
    """Wall time of the Encoder's steps, by wrapping them on one encoder (see the module docstring)."""

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self.seconds: dict[str, float] = defaultdict(float)
        self._batch_started = 0.0

    @contextlib.contextmanager
    def attached(self) -> Iterator[None]:
        encoder = self.encoder
        tokenize, encode_batch, pool = encoder._tokenize, encoder._encode_batch, encoder_module.pool  # noqa: SLF001
        models = {"model": encoder.model, "_bulk_model": encoder._bulk_model}  # noqa: SLF001
        clock = self

        def timed_tokenize(texts: list[str]) -> list[list[int]]:
            started = time.perf_counter()
            try:
                return tokenize(texts)
            finally:
                clock.seconds["tokenize"] += time.perf_counter() - started

        def timed_batch(*args: object) -> np.ndarray:
            clock._batch_started = started = time.perf_counter()
            try:
                return encode_batch(*args)
            finally:
                clock.seconds["batch"] += time.perf_counter() - started

        def timed_pool(*args: object) -> torch.Tensor:
            started = time.perf_counter()
            try:
                return pool(*args)
            finally:
                clock.seconds["pool"] += time.perf_counter() - started

        def timed_model(model: Callable) -> Callable:
            def call(**kwargs: object) -> object:
                started = time.perf_counter()
                clock.seconds["batch and pad"] += started - clock._batch_started
                try:
                    return model(**kwargs)
                finally:
                    clock.seconds["model"] += time.perf_counter() - started

            return call

        encoder._tokenize, encoder._encode_batch, encoder_module.pool = timed_tokenize, timed_batch, timed_pool  # noqa: SLF001
        for attribute, model in models.items():
            if model is not None:
                setattr(encoder, attribute, timed_model(model))
        try:
            yield
        finally:
            encoder_module.pool = pool
            del encoder._tokenize, encoder._encode_batch  # noqa: SLF001 (back to the class's methods)
            for attribute, model in models.items():
                setattr(encoder, attribute, model)

    def stages(self, total: float) -> dict[str, float]:
        """Seconds per stage; the parts sum to `total`."""
        s = self.seconds
        copy_out = s["batch"] - s["batch and pad"] - s["model"] - s["pool"]
        other = total - s["tokenize"] - s["batch"]
        return {
            "tokenize": s["tokenize"],
            "batch and pad": s["batch and pad"],
            "model": s["model"],
            "pool": s["pool"],
            "normalise and copy out": copy_out,
            "other (sort, scatter, Python)": other,
        }


OPERATOR_KINDS = {
    "linear": (
        "MatMul",
        "Gemm",
        "FusedMatMul",
        "aten::addmm",
        "aten::mm",
        "aten::linear",
        "aten::matmul",
        "aten::bmm@linear",
    ),
    "attention": (
        "Attention",
        "MultiHeadAttention",
        "Softmax",
        "aten::_scaled_dot_product",
        "aten::softmax",
        "aten::_softmax",
        "aten::bmm",
        "aten::baddbmm",
    ),
    "norm": (
        "LayerNormalization",
        "SkipLayerNormalization",
        "EmbedLayerNormalization",
        "aten::layer_norm",
        "aten::native_layer_norm",
    ),
    "activation": ("Gelu", "BiasGelu", "FastGelu", "aten::gelu"),
    "embedding": ("Gather", "aten::embedding", "aten::index_select"),
}


def operator_kind(name: str) -> str:
    for kind, prefixes in OPERATOR_KINDS.items():
        if any(name == p or name.startswith(p) for p in prefixes):
            return kind
    return "other"


def model_operators(encoder: Encoder, texts: list[str]) -> dict:
    """The model's time by operator kind while `encoder` encodes `texts` (fractions of the profiled kernel time)."""
    seconds: dict[str, float] = defaultdict(float)
    if encoder.backend == "onnx" and encoder._bulk_model is None:  # noqa: SLF001
        import onnxruntime

        session = encoder.model.session
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.inter_op_num_threads = 1
        with tempfile.TemporaryDirectory() as folder:
            options.enable_profiling = True
            options.profile_file_prefix = str(Path(folder) / "ort")
            encoder.model.session = onnxruntime.InferenceSession(
                str(encoder.model.path), options, providers=["CPUExecutionProvider"]
            )
            try:
                encoder.encode(texts)
                trace = json.loads(Path(encoder.model.session.end_profiling()).read_text(encoding="utf-8"))
            finally:
                encoder.model.session = session
        for event in trace:
            if event.get("cat") == "Node" and event.get("name", "").endswith("_kernel_time"):
                seconds[operator_kind(event["args"]["op_name"])] += event["dur"] / 1e6
        profiler = "onnxruntime (per-node kernel time)"
    else:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
            encoder.encode(texts)
        for row in profile.key_averages():
            if row.key.startswith("aten::"):
                seconds[operator_kind(row.key)] += row.self_cpu_time_total / 1e6
        profiler = "torch.profiler (self CPU time per aten op)"
    total = sum(seconds.values())
    return {
        "profiler": profiler,
        "fractions": {kind: round(value / total, 3) for kind, value in sorted(seconds.items())},
    }


def stage_breakdown(encoder: Encoder, texts: list[str], rounds: int) -> dict:
    clock = StageClock(encoder)
    total = 0.0
    with clock.attached():
        for _ in range(rounds):
            started = time.perf_counter()
            encoder.encode(texts)
            total += time.perf_counter() - started
    stages = clock.stages(total)
    return {
        "method": "wall time of the Encoder's wrapped steps",
        "fractions": {name: round(value / total, 3) for name, value in stages.items()},
        "model_operators": model_operators(encoder, texts),
    }


# ---------------------------------------------------------------------------------------------------- throughput


def throughput(encoders: dict[str, Encoder], texts: list[str], rounds: int, flops: dict, peaks: dict) -> dict:
    names = list(encoders)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    vectors: dict[str, np.ndarray] = {}
    for round_number in range(rounds):
        for name in rotation(names, round_number):
            started = time.perf_counter()
            vectors[name] = encoders[name].encode(texts)
            seconds[name].append(time.perf_counter() - started)
    gflop = flops["gflop_per_text"] * len(texts)
    rows = {}
    for name in names:
        median = statistics.median(seconds[name])
        rows[name] = {
            "sentences_per_s": round(len(texts) / median, 1),
            "sentences_per_s_per_round": [round(len(texts) / s, 1) for s in seconds[name]],
            "speed_vs_default": round(statistics.median(d / s for d, s in zip(seconds["default"], seconds[name])), 3),
            "gflops": round(gflop / median, 1),
            "fraction_of_peak": {
                precision: round(gflop / median / peaks[precision]["gflops_best"], 3)
                for precision in ("bf16", "fp32", "int8")
                if precision in peaks
            },
            "min_cosine_vs_torch_fp32": round(min_cosine(vectors[name], vectors[REFERENCE]), 6),
        }
    return rows


def user_bar(data: Path, count: int, rounds: int, executables: list[Path]) -> dict:
    """The bar a user sees: wall time of `searchengine index` on `count` Wikipedia sentences (a fresh process each
    time: start-up, model load, encoding, whitening, FAISS, SQLite) against sentence-transformers fp32 merely
    encoding them in this process (model already loaded), the runs taking turns over `rounds` rounds."""
    import subprocess

    from sentence_transformers import SentenceTransformer

    from searchengine.encoding.model_source import bundled_model_path

    texts = timing_texts(data, "wiki", count)
    model = SentenceTransformer(str(bundled_model_path()), device="cpu")
    model.encode(texts[:64], show_progress_bar=False)
    seconds: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as folder:
        corpus = Path(folder) / "sentences.txt"
        corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
        for _ in range(rounds):
            started = time.perf_counter()
            model.encode(texts, show_progress_bar=False)
            seconds["sentence-transformers fp32, encode only"].append(time.perf_counter() - started)
            for executable in executables:
                command = [
                    str(executable.absolute()),
                    "index",
                    str(corpus),
                    "--index-dir",
                    str(Path(folder) / "index"),
                    "--replace",
                ]
                started = time.perf_counter()
                subprocess.run(command, check=True, capture_output=True, cwd=folder)
                seconds[f"searchengine index ({executable})"].append(time.perf_counter() - started)
    reference = seconds["sentence-transformers fp32, encode only"]
    return {
        "sentences": len(texts),
        "rounds": rounds,
        "seconds": {name: [round(value, 2) for value in values] for name, values in seconds.items()},
        "speed_vs_sentence_transformers_fp32": {
            name: round(statistics.median(r / v for r, v in zip(reference, values)), 2)
            for name, values in seconds.items()
        },
    }


def plot(results: dict, path: Path) -> None:
    """Per text length: the default's sentences/s beside what the bf16 and fp32 matmul peaks would allow."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(results["texts"])
    peaks = results["peak"]
    series = {"default encoder": [results["texts"][t]["variants"]["default"]["sentences_per_s"] for t in labels]}
    for precision in ("fp32", "bf16"):
        series[f"{precision} matmul peak ({peaks[precision]['gflops_best']:.0f} GFLOP/s)"] = [
            peaks[precision]["gflops_best"] / results["texts"][t]["flops"]["gflop_per_text"] for t in labels
        ]
    figure, axes = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(series)
    for i, (name, values) in enumerate(series.items()):
        axes.bar([x + i * width for x in range(len(labels))], values, width, label=name)
    axes.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(labels))])
    axes.set_xticklabels([f"{t}\n({results['texts'][t]['flops']['mean_tokens']:.0f} tokens)" for t in labels])
    axes.set_yscale("log")
    axes.set_ylabel("sentences/s (log)")
    load = (results["machine"]["load_before"][0], results["machine"]["load_after"][0])
    axes.set_title(
        f"all-MiniLM-L6-v2 on {results['machine_details']['cpu']}, {results['machine']['cores']} cores, "
        f"load {min(load):.0f}–{max(load):.0f}",
        fontsize=9,
    )
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--texts", type=int, default=1000, help="short and Wikipedia texts timed per call")
    parser.add_argument("--long", type=int, default=100, help="NFCorpus documents timed per call")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200, help="single-text calls for query latency")
    parser.add_argument("--matmul", type=int, default=2048, help="side of the square matmul the peak is taken on")
    parser.add_argument("--peak-seconds", type=float, default=1.0, help="seconds per precision per round")
    parser.add_argument(
        "--variants",
        default=",".join(TRIED),
        help="comma-separated lossless variants timed besides the default and torch fp32 ('' for none)",
    )
    parser.add_argument("--index", type=int, default=0, help="Wikipedia sentences for the user's bar (0: skip it)")
    parser.add_argument("--index-rounds", type=int, default=2)
    parser.add_argument(
        "--searchengine",
        type=Path,
        action="append",
        help="searchengine executable(s) the user's bar runs, e.g. main's beside this branch's (default: this one)",
    )
    parser.add_argument("--skip-encoders", action="store_true", help="only the peak and the user's bar")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "encoding" / "results" / "encoding_limit.json")
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "encoding_limit.png")
    parser.add_argument("--tables", type=Path, help="print the markdown tables of this results file and stop")
    args = parser.parse_args()
    if args.tables:
        print(markdown(json.loads(args.tables.read_text(encoding="utf-8"))))
        return
    load_before = os.getloadavg()
    peaks = matmul_peaks(args.matmul, args.peak_seconds, args.rounds)
    print("peak", json.dumps(peaks), flush=True)
    results = {
        **run_record(load_before),
        "machine_details": machine() | {"flags": sorted(FLAGS_OF_NOTE & cpu_flags())},
        "peak": peaks,
    }
    if not args.skip_encoders:
        results |= encoder_results(args, peaks)
    if args.index:
        executables = args.searchengine or [Path(sys.executable).parent / "searchengine"]
        results["user_bar"] = user_bar(args.data, args.index, args.index_rounds, executables)
        print("user bar", json.dumps(results["user_bar"]), flush=True)
    results["machine"]["load_after"] = os.getloadavg()
    write_results(args.out, results)
    if not args.skip_encoders:
        plot(results, args.plot)
        print(json.dumps(results["checks"]))


def markdown(results: dict) -> str:
    """The results as the tables docs/benchmarks.md shows: peaks, then per text length the variants and stages."""
    peaks = results["peak"]
    lines = ["| matmul " + str(peaks["size"]) + "² | best GFLOP/s | median |", "|---|---:|---:|"]
    lines += [
        f"| {name} | {peaks[name]['gflops_best']:,.1f} | {peaks[name]['gflops_median']:,.1f} |"
        for name in ("bf16", "fp32", "int8")
        if name in peaks
    ]
    if "texts" not in results:
        return "\n".join(lines)
    labels = list(results["texts"])
    lines += ["", "| variant | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    for name in results["texts"][labels[0]]["variants"]:
        cells = []
        for label in labels:
            row = results["texts"][label]["variants"][name]
            cells.append(
                f"{row['sentences_per_s']:,.1f}/s, {row['speed_vs_default']:.2f}×, {row['gflops']:.0f} GFLOP/s "
                f"(cos ≥ {row['min_cosine_vs_torch_fp32']:.5f})"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "| default's time | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    stages = results["texts"][labels[0]]["stages"]
    for stage in stages["fractions"]:
        cells = [f"{results['texts'][label]['stages']['fractions'][stage]:.1%}" for label in labels]
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    for key in (key for key in ("model_operators", "torch_fp32_operators") if key in stages):
        for kind in stages[key]["fractions"]:
            cells = [f"{results['texts'][label]['stages'][key]['fractions'].get(kind, 0):.1%}" for label in labels]
            lines.append(f"| {key.replace('_', ' ')}: {kind} | " + " | ".join(cells) + " |")
    lines += ["", "| one short query | p50 | p99 |", "|---|---:|---:|"]
    lines += [
        f"| {name} | {row['p50_ms']:.1f} ms | {row['p99_ms']:.1f} ms |" for name, row in results["one_query"].items()
    ]
    return "\n".join(lines)


FLAGS_OF_NOTE = frozenset({"avx512_bf16", "amx_bf16", "amx_int8", "avx512_vnni", "avx_vnni"})


def encoder_results(args: argparse.Namespace, peaks: dict) -> dict:
    """Throughput, stages and query latency of the default and the lossless variants on the three text lengths."""
    built, build_seconds = {}, {}
    for name, build in lossless_variants([name for name in args.variants.split(",") if name]).items():
        started = time.perf_counter()
        built[name] = build()
        built[name].encode(["warm up"] * 2)  # a compiled variant's first compile happens here
        build_seconds[name] = round(time.perf_counter() - started, 2)
        print(f"{name}: built in {build_seconds[name]:.1f} s", flush=True)
    default = built["default"]
    sets = {
        "short (STS-B)": timing_texts(args.data, "stsb", args.texts),
        "medium (Wikipedia)": timing_texts(args.data, "wiki", args.texts),
        "long (NFCorpus)": long_texts(args.data, args.long),
    }
    warm_up_seconds = {}
    for name, encoder in built.items():  # warm-up on every text length (compiled variants compile here)
        started = time.perf_counter()
        for texts in sets.values():
            encoder.encode(texts[:128])
        warm_up_seconds[name] = round(time.perf_counter() - started, 2)
        print(f"{name}: warmed up in {warm_up_seconds[name]:.1f} s", flush=True)
    results: dict = {
        "default": {
            "precision": default.precision,
            "backend": default.backend,
            "bulk_precision": default.bulk_precision,
            "batch_size": default.batch_size,
        },
        "build_seconds": build_seconds,
        "warm_up_seconds": warm_up_seconds,
        "texts": {},
    }
    for label, texts in sets.items():
        flops = encoder_flops(default, texts)
        row = {"flops": flops, "variants": throughput(built, texts, args.rounds, flops, peaks)}
        row["stages"] = stage_breakdown(default, texts, 1)
        row["stages"]["torch_fp32_operators"] = model_operators(built[REFERENCE], texts)
        results["texts"][label] = row
        print(label, json.dumps(row), flush=True)
    queries = timing_texts(args.data, "stsb", args.queries)
    results["one_query"] = query_latency(built, queries)
    print("one query", json.dumps(results["one_query"]), flush=True)
    results["checks"] = {
        "lossless": {
            name: all(row["variants"][name]["min_cosine_vs_torch_fp32"] >= 0.9999 for row in results["texts"].values())
            for name in built
        }
    }
    return results


if __name__ == "__main__":
    main()
