"""int8 against lossless: quality and speed of each encoder runtime, bundled all-MiniLM-L6-v2 (issue 25, part 3).

Runtimes (--variants; each an Encoder as users get it, except onnx-static-int8, which is measured only here):
- torch-fp32, onnx-fp32, openvino-fp32: lossless;
- onnx-int8: `--precision int8` today, ONNX Runtime dynamic int8 (activations quantized at run time);
- onnx-static-int8: ONNX Runtime static int8 (QDQ, onnxruntime.quantization.quantize_static, per-channel int8
  weights, uint8 activations, MinMax ranges) calibrated on the bundled calibration texts;
- openvino-int8: `--backend openvino --precision int8`, OpenVINO with NNCF's static int8, calibrated on the same
  texts (searchengine/encoding/calibration_text.txt: Wikipedia, never evaluation text).
- sentence-transformers-fp32 (speed only): the baseline that the help's speed-ups are quoted against.

Quality (skipped with --speed-only): STS-B Spearman x 100 on each --sts split (test, dev, train: the STS sets the
shared data holds; SICK there has NLI labels, not relatedness scores), nDCG@10 on each --beir set over all judged
test queries (no setting is chosen on them, so no tune half is needed), dense (exact cosine) and hybrid (the
engine's default fusion over the dense side and the engine's BM25 store, as searchengine.engine.hybrid fuses
them), and each variant's cosine to the first variant's vectors of the same texts (smallest and median), over
every text it embedded.

Speed: --speed-texts Wikipedia sentences (lines after 60,000 of the file; the calibration texts are its first
lines), encoded in bulk, --rounds rounds, the variants in a rotating order each round; texts/s is the median over
rounds, and each variant's ratio to torch-fp32 and to sentence-transformers-fp32 is the median of the per-round
ratios. About 5 minutes on a quiet 2-core machine:

    .venv/bin/python benchmarks/encoding/int8_quality.py --speed-only --rounds 5
    .venv/bin/python benchmarks/encoding/int8_quality.py --variants onnx-fp32 onnx-int8 openvino-int8 \\
        --out benchmarks/encoding/results/int8_quality.json            # quality and speed; BEIR takes long

The first openvino-int8 or onnx-static-int8 run calibrates (minutes; openvino-int8 caches it). Needs the `onnx`
and `openvino` extras.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from searchengine.indexer.tables.store import Document, DocumentStore

from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from benchmarks.harness.rounds import rotation
from searchengine.encoding.encoder import Encoder
from searchengine.encoding.openvino_backend import calibration_texts
from searchengine.engine.fusion import fuse
from searchengine.engine.modes import DEFAULT_FUSION
from searchengine.evaluation.labelled_data import read_scored_pairs
from searchengine.evaluation.retrieval import (
    exact_search,
    read_retrieval_set,
    score_rankings,
)
from searchengine.evaluation.sts import sts_spearman

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
VARIANTS = (
    "torch-fp32",
    "onnx-fp32",
    "openvino-fp32",
    "onnx-int8",
    "onnx-static-int8",
    "openvino-int8",
    "sentence-transformers-fp32",
)
RUNTIMES = {
    "torch-fp32": ("torch", "fp32"),
    "onnx-fp32": ("onnx", "fp32"),
    "openvino-fp32": ("openvino", "fp32"),
    "onnx-int8": ("onnx", "int8"),
    "openvino-int8": ("openvino", "int8"),
}
SPEED_OFFSET = 60_000
K = 10


def onnx_static_int8(threads: int | None) -> Encoder:
    """An ONNX Runtime fp32 encoder whose session runs the export quantized statically (QDQ) on the calibration
    texts, one text a sample."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    from searchengine.encoding.onnx_cache import open_session

    encoder = Encoder(backend="onnx", precision="fp32", threads=threads)
    names = encoder.model.input_names

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.texts = iter(calibration_texts())

        def get_next(self) -> dict | None:
            text = next(self.texts, None)
            if text is None:
                return None
            tokens = encoder.tokenizer([text], truncation=True, max_length=encoder.max_seq_length, return_tensors="np")
            return {name: tokens[name].astype(np.int64) for name in names}

    path = Path(tempfile.mkdtemp(prefix="static-int8-")) / "static.onnx"
    quantize_static(
        str(encoder.model.path),
        str(path),
        Reader(),
        quant_format=QuantFormat.QDQ,
        per_channel=True,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        extra_options={"DefaultTensorType": 1},  # float: the fused ops have no shape inference
    )
    encoder.model.session = open_session(path, threads)
    return encoder


def make_encoder(name: str, threads: int | None) -> Callable:
    """The variant's bulk embedding function."""
    if name == "onnx-static-int8":
        return onnx_static_int8(threads).encode
    if name == "sentence-transformers-fp32":
        from sentence_transformers import SentenceTransformer

        from searchengine.encoding.model_source import locate_model

        model = SentenceTransformer(str(locate_model(None, None, None, None).path), device="cpu")
        return lambda texts: model.encode(list(texts), batch_size=64, normalize_embeddings=True)
    backend, precision = RUNTIMES[name]
    return Encoder(backend=backend, precision=precision, threads=threads).encode


def store_ids(store: DocumentStore, corpus_ids: list[str]) -> list[int]:
    """Each corpus row's id in the store."""
    by_external = dict(zip(store.external_ids(), store.ids().tolist()))
    return [by_external[doc] for doc in corpus_ids]


def beir_scores(vectors: dict, data: Path, name: str, embed: Callable, scratch: Path) -> dict:
    """Dense and hybrid nDCG@10 of one BEIR set, and the vectors embedded (for the cosine comparison)."""
    dataset = read_retrieval_set(
        data / name / "corpus.jsonl", data / name / "queries.jsonl", data / name / "qrels_test.tsv"
    )
    judged = [i for i, query in enumerate(dataset.query_ids) if query in dataset.qrels]
    query_ids = [dataset.query_ids[i] for i in judged]
    query_texts = [dataset.query_texts[i] for i in judged]
    documents = embed(dataset.corpus_texts)
    queries = embed(query_texts)
    vectors[f"{name} documents"], vectors[f"{name} queries"] = documents, queries
    row_of = {doc: row for row, doc in enumerate(dataset.corpus_ids)}
    excluded = [row_of.get(query, -1) for query in query_ids]
    dense_rows = exact_search(queries, documents, 100 + 1)
    dense = {
        query: [dataset.corpus_ids[row] for row in rows if row != own][:100]
        for query, rows, own in zip(query_ids, dense_rows, excluded)
    }
    store_dir = scratch / name
    if not (store_dir / "documents.db").exists():
        store_dir.mkdir(parents=True, exist_ok=True)
        writable = DocumentStore(store_dir / "documents.db", writable=True)
        writable.add(
            [Document(text=text, external_id=doc) for doc, text in zip(dataset.corpus_ids, dataset.corpus_texts)]
        )
        writable.db.conn.close()
    store = DocumentStore(store_dir / "documents.db")
    row_ids = store_ids(store, dataset.corpus_ids)
    corpus_of = {store_id: row for row, store_id in enumerate(row_ids)}
    hybrid = {}
    for query, text, vector, rows in zip(query_ids, query_texts, queries, dense_rows):
        dense_side = [(row_ids[row], float(documents[row] @ vector)) for row in rows[:100]]
        keyword_side = store.keyword_search(text, 100)
        bound = store.keyword_bound(text) if keyword_side else 0.0
        fused = fuse(dense_side, keyword_side, DEFAULT_FUSION, bound)
        ranked = [dataset.corpus_ids[corpus_of[doc]] for doc, _ in fused]
        hybrid[query] = [doc for doc in ranked if doc != query][:100]
    count = len(dataset.corpus_ids)
    return {
        "dense_ndcg@10": round(score_rankings(dense, dataset.qrels, count).ndcg_at_10, 4),
        "hybrid_ndcg@10": round(score_rankings(hybrid, dataset.qrels, count).ndcg_at_10, 4),
        "queries": len(query_ids),
    }


def quality(name: str, embed: Callable, args: argparse.Namespace, scratch: Path) -> tuple[dict, dict]:
    """STS Spearman and BEIR nDCG@10 of one variant, and every vector it embedded, by text set."""
    result: dict = {}
    vectors: dict = {}
    for split in args.sts:
        pairs = read_scored_pairs(args.data / "stsb" / f"{split}.tsv")

        def keep(texts: list[str], split: str = split) -> np.ndarray:
            vectors[f"stsb {split}"] = embed(texts)
            return vectors[f"stsb {split}"]

        result[f"stsb {split} spearman"] = round(sts_spearman(keep, pairs), 2)
    for beir in args.beir:
        result[beir] = beir_scores(vectors, args.data / "retrieval", beir, embed, scratch)
    print(name, json.dumps(result), flush=True)
    return result, vectors


def cosines(vectors: dict, reference: dict) -> dict:
    """Smallest and median cosine of each vector to the reference's vector of the same text, over every set."""
    values = np.concatenate([(vectors[key] * reference[key]).sum(axis=1) for key in reference])
    return {"min": round(float(values.min()), 5), "median": round(float(np.median(values)), 5), "texts": len(values)}


def speed(embeds: dict[str, Callable], texts: list[str], rounds: int) -> dict:
    """texts/s per variant (median over rounds, variants rotating) and the per-round ratios' medians."""
    for embed in embeds.values():
        embed(texts[:128])  # warm up
    names = list(embeds)
    rates: dict[str, list[float]] = {name: [] for name in names}
    for number in range(rounds):
        for name in rotation(names, number):
            started = time.perf_counter()
            embeds[name](texts)
            rates[name].append(len(texts) / (time.perf_counter() - started))
        print(f"round {number + 1}:", {name: round(values[-1], 1) for name, values in rates.items()}, flush=True)
    result = {}
    for name in names:
        entry = {"texts_per_s": round(statistics.median(rates[name]), 1), "rounds": [round(r, 1) for r in rates[name]]}
        for base in ("torch-fp32", "sentence-transformers-fp32"):
            if base in rates and base != name:
                ratios = [mine / theirs for mine, theirs in zip(rates[name], rates[base])]
                entry[f"x {base}"] = round(statistics.median(ratios), 2)
        result[name] = entry
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--sts", nargs="*", default=["test", "dev", "train"], choices=["test", "dev", "train"])
    parser.add_argument("--beir", nargs="*", default=["nfcorpus", "arguana"], choices=["nfcorpus", "arguana"])
    parser.add_argument("--speed-only", action="store_true", help="skip the quality part")
    parser.add_argument("--no-speed", action="store_true", help="skip the speed part")
    parser.add_argument("--speed-texts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="intra-op threads (default: each runtime's own)")
    parser.add_argument("--vectors", type=Path, help="save each variant's vectors to DIR/<variant>.npz")
    parser.add_argument("--reference", type=Path, help="cosines to these saved vectors, not the first variant's")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "encoding" / "results" / "int8_quality.json")
    args = parser.parse_args()
    load = os.getloadavg()
    embeds = {name: make_encoder(name, args.threads) for name in args.variants}
    report: dict = {
        "model": "all-MiniLM-L6-v2 (bundled)",
        "versions": {name: version(name) for name in ("torch", "onnxruntime", "openvino", "nncf")},
    }
    if not args.speed_only:
        measured = [name for name in args.variants if name != "sentence-transformers-fp32"]
        results, reference = {}, None
        with tempfile.TemporaryDirectory(prefix="int8-quality-") as scratch:
            for name in measured:
                results[name], vectors = quality(name, embeds[name], args, Path(scratch))
                if args.vectors:  # for cosines across runs (variants run as separate processes)
                    args.vectors.mkdir(parents=True, exist_ok=True)
                    np.savez(args.vectors / f"{name}.npz", **vectors)
                if args.reference:
                    with np.load(args.reference) as stored:
                        reference = {key: stored[key] for key in stored.files}
                reference = reference or vectors
                results[name]["cosine to " + str(args.reference or measured[0])] = cosines(vectors, reference)
        report["quality"] = results
    if not args.no_speed:
        with gzip.open(args.data / "unsup" / "wiki_sentences.txt.gz", "rt", encoding="utf-8") as handle:
            lines = [line.strip() for line in handle]
        texts = [line for line in lines[SPEED_OFFSET:] if line][: args.speed_texts]
        report["speed"] = {"texts": len(texts), "rounds": args.rounds, "by_variant": speed(embeds, texts, args.rounds)}
    report.update(run_record(load))
    write_results(args.out, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    sys.exit(main())
