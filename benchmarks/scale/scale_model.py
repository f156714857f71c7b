"""The on-paper row of issue 41: a scale model of a cluster index of --documents documents (1 billion) on nodes of
--node-cores cores and --node-memory-gb GB, computed from results already measured in this repository (nothing is
run). It prints a table and writes one JSON record naming every input file and figure, each output marked
`measured` (read from a results file as it is) or `extrapolated` (computed from measured figures by the model below).

The model, per piece:
  shards, copies   --shard-documents per shard (default 10 million: the largest index measured, memory_check at 10M),
                   --copies of each (R = 2); one copy per core of a node, so a query's shard scans run side by side
                   and nodes = copies / cores, more where the copies' resident memory would pass --memory-share of a
                   node's memory.
  memory           the vectors compressed as issue 42's `auto` does at 10M (IVF8192,PQ96x4fs: codes and lists in
                   memory, float16 originals on disk for the rescoring): resident bytes of a query process as a line
                   through memory_check's two sizes (1M and 10M: a fixed part, the IVF centroids, plus bytes per
                   document), plus the process's own baseline (interpreter and libraries, no model) per copy.
  disk             the vector files (codes plus float16 originals: the page cache they held, memory_check's
                   mapped_cache_mb, the same line through two sizes) plus the store (store_scale's bytes a row at its
                   largest step), per copy.
  build            the cluster's encode rate: the per-core rate of the one-process 1M build (index_scale.json,
                   documents_per_second / cores), times every core of every node (linear in cores: assumed, not
                   measured past 2 cores), then each copy's own storing, training and vector-index stages for its
                   shard at the 10M build's per-document rate (memory_check_10m, quiet; the copies work side by
                   side); the two are added, an upper
                   bound, as the build streams batches to the copies while it embeds.
  query p50        one shard's dense search at its size: the 10M index's p50 with the engine's defaults (a fifth
                   of its lists probed, 1,000 candidates rescored, rows read; one thread, warm page cache), times the
                   shard's documents over the measured ones (1 at the default shard size);
                   plus encoding the query once (search_speed_1m_e2e, one thread), plus the fan-out cost measured by
                   cluster_check (a query through the cluster's ingress less the same query from one index, same run,
                   4 shards); with each shard's p99 in place of its p50 as the pessimistic figure (a query waits for
                   the slowest of its shards).

Usage:
  .venv/bin/python benchmarks/scale/scale_model.py --out benchmarks/scale/results/scale_model_1b.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`

from benchmarks.harness.machine import command_line
from benchmarks.harness.results import write_results

ROOT = Path(__file__).resolve().parents[2]
MIB = 2**20
GB = 10**9
MEASURED, EXTRAPOLATED = "measured", "extrapolated"
INPUTS = {
    "memory_large": "benchmarks/storage/results/memory_check_10m_default.json",
    "memory_small": "benchmarks/storage/results/memory_check_1m.json",
    "build_large": "benchmarks/storage/results/memory_check_10m.json",
    "store": "benchmarks/storage/results/store_scale.json",
    "encode": "benchmarks/scale/results/index_scale.json",
    "query_encoding": "benchmarks/scale/results/search_speed_1m_e2e.json",
    "fan_out": "benchmarks/scale/results/cluster_check_1k_quiet.json",
    "fan_out_loaded": "benchmarks/scale/results/cluster_check.json",
}
OUT = ROOT / "benchmarks" / "scale" / "results" / "scale_model_1b.json"


def figure(value: float, kind: str, source: str, unit: str = "") -> dict[str, Any]:
    """One figure of the model: its value, whether it was measured or extrapolated, and where it comes from."""
    return {"value": round(value, 3), "unit": unit, "kind": kind, "from": source}


def two_point_line(small: tuple[float, float], large: tuple[float, float]) -> tuple[float, float]:
    """(fixed, per unit) of the line through two (documents, size) points."""
    per = (large[1] - small[1]) / (large[0] - small[0])
    return large[1] - per * large[0], per


def measured_inputs(files: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """The figures the model uses, each read from its file and marked measured."""
    read = {name: json.loads(path.read_text(encoding="utf-8")) for name, path in files.items()}
    name = {key: str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path) for key, path in files.items()}
    memory_large, memory_small = read["memory_large"], read["memory_small"]
    largest = max(read["store"]["steps"], key=lambda step: step["rows"])
    encode = max(
        (run for run in read["encode"].values() if "documents_per_second" in run), key=lambda r: r["documents"]
    )
    end_to_end = read["query_encoding"]["groups"][0]["end_to_end"][0]
    build = read["build_large"]["build"]
    stages = build["build_stages_s"]
    figures = {
        "index_type": {"value": memory_large["index_type"], "kind": MEASURED, "from": name["memory_large"]},
        "measured_documents": figure(memory_large["build"]["vectors"], MEASURED, name["memory_large"]),
        "small_documents": figure(memory_small["build"]["vectors"], MEASURED, name["memory_small"]),
        "resident_mib": figure(memory_large["index_resident_mb"], MEASURED, name["memory_large"], "MiB"),
        "resident_mib_small": figure(memory_small["index_resident_mb"], MEASURED, name["memory_small"], "MiB"),
        "vector_files_mib": figure(memory_large["mapped_cache_mb"], MEASURED, name["memory_large"], "MiB"),
        "vector_files_mib_small": figure(memory_small["mapped_cache_mb"], MEASURED, name["memory_small"], "MiB"),
        "process_baseline_mib": figure(memory_large["baseline_mb"], MEASURED, name["memory_large"], "MiB"),
        "store_bytes_per_row": figure(largest["size"]["bytes_per_row"], MEASURED, name["store"], "bytes"),
        "store_rows_measured": figure(largest["rows"], MEASURED, name["store"]),
        "encode_documents_per_s": figure(encode["documents_per_second"], MEASURED, name["encode"], "documents/s"),
        "encode_cores": figure(encode["machine"]["cores"], MEASURED, name["encode"]),
        "copy_store_and_index_s_per_1m": figure(
            (stages["storing"] + stages.get("training", 0.0) + stages["vector index"])
            * 1e6
            / build["vectors"],
            MEASURED,
            name["build_large"],
            "s",
        ),  # fmt: skip
        "shard_p50_ms": figure(memory_large["p50_ms"], MEASURED, name["memory_large"], "ms"),
        "shard_p99_ms": figure(memory_large["p99_ms"], MEASURED, name["memory_large"], "ms"),
        "query_encode_ms": figure(end_to_end["1_thread_encode_ms_p50"], MEASURED, name["query_encoding"], "ms"),
    }
    for key in ("fan_out", "fan_out_loaded"):
        p50 = read[key]["p50_ms"]
        figures[f"{key}_ms"] = figure(p50["cluster"] - p50["one_index"], MEASURED, name[key], "ms")
        figures[f"{key}_shards"] = figure(read[key]["shards"], MEASURED, name[key])
    return figures


def scale_model(measured: dict[str, dict[str, Any]], plan: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """The cluster's figures for `plan` (documents, shard_documents, copies, node_cores, node_memory_gb,
    memory_share), each marked extrapolated, with the model's name in `from`."""
    value = {key: entry["value"] for key, entry in measured.items()}
    fixed_resident, resident_per_doc = two_point_line(
        (value["small_documents"], value["resident_mib_small"] * MIB),
        (value["measured_documents"], value["resident_mib"] * MIB),
    )
    fixed_files, files_per_doc = two_point_line(
        (value["small_documents"], value["vector_files_mib_small"] * MIB),
        (value["measured_documents"], value["vector_files_mib"] * MIB),
    )
    shards = math.ceil(plan.documents / plan.shard_documents)
    per_shard = plan.documents / shards
    copies = shards * plan.copies
    copy_resident = fixed_resident + resident_per_doc * per_shard + value["process_baseline_mib"] * MIB
    by_cores = math.ceil(copies / plan.node_cores)
    by_memory = math.ceil(copies * copy_resident / (plan.node_memory_gb * GB * plan.memory_share))
    nodes = max(by_cores, by_memory, plan.copies)
    copies_per_node = math.ceil(copies / nodes)
    copy_disk = fixed_files + files_per_doc * per_shard + value["store_bytes_per_row"] * per_shard
    per_core_rate = value["encode_documents_per_s"] / value["encode_cores"]
    encode_s = plan.documents / (per_core_rate * plan.node_cores * nodes)
    copy_s = value["copy_store_and_index_s_per_1m"] * per_shard / 1e6
    growth = per_shard / value["measured_documents"]
    shard_p50 = value["shard_p50_ms"] * growth
    shard_p99 = value["shard_p99_ms"] * growth
    model = "the line through memory_check's two sizes"
    return {
        "shards": figure(shards, EXTRAPOLATED, "documents / shard_documents"),
        "copies_per_shard": figure(plan.copies, EXTRAPOLATED, "the plan (R)"),
        "documents_per_shard": figure(per_shard, EXTRAPOLATED, "documents / shards"),
        "nodes": figure(nodes, EXTRAPOLATED, f"max(copies / cores = {by_cores}, resident memory = {by_memory}, R)"),
        "copies_per_node": figure(copies_per_node, EXTRAPOLATED, "shards x R / nodes, rounded up"),
        "resident_bytes_per_document": figure(resident_per_doc, EXTRAPOLATED, model, "bytes"),
        "vector_file_bytes_per_document": figure(files_per_doc, EXTRAPOLATED, model, "bytes"),
        "memory_per_copy_gb": figure(copy_resident / GB, EXTRAPOLATED, f"{model}, plus the process baseline", "GB"),
        "memory_per_node_gb": figure(copies_per_node * copy_resident / GB, EXTRAPOLATED, "copies per node", "GB"),
        "page_cache_left_per_node_gb": figure(
            plan.node_memory_gb - copies_per_node * copy_resident / GB, EXTRAPOLATED, "node memory less resident", "GB"
        ),
        "originals_per_node_gb": figure(
            copies_per_node * (fixed_files + files_per_doc * per_shard) / GB,
            EXTRAPOLATED,
            f"{model} (codes and float16 originals)",
            "GB",
        ),  # fmt: skip
        "disk_per_node_gb": figure(copies_per_node * copy_disk / GB, EXTRAPOLATED, "vector files plus store", "GB"),
        "encode_hours": figure(encode_s / 3600, EXTRAPOLATED, "per-core rate x every core (linear in cores)", "h"),
        "copy_build_hours": figure(copy_s / 3600, EXTRAPOLATED, "per-document storing + vector index", "h"),
        "build_hours": figure((encode_s + copy_s) / 3600, EXTRAPOLATED, "encode + copy build (added)", "h"),
        "shard_p50_ms": figure(shard_p50, EXTRAPOLATED, "measured p50 x shard size / measured size", "ms"),
        "query_p50_ms": figure(
            value["query_encode_ms"] + shard_p50 + value["fan_out_ms"],
            EXTRAPOLATED,
            "encode + shard p50 + fan-out",
            "ms",
        ),  # fmt: skip
        "query_p50_pessimistic_ms": figure(
            value["query_encode_ms"] + shard_p99 + value["fan_out_loaded_ms"],
            EXTRAPOLATED,
            "encode + shard p99 + loaded fan-out",
            "ms",
        ),  # fmt: skip
    }


ROWS = [
    ("shards x copies", lambda o: f"{o['shards']['value']:,.0f} x {o['copies_per_shard']['value']:.0f}"),
    ("documents per shard", lambda o: f"{o['documents_per_shard']['value'] / 1e6:,.1f} M"),
    ("nodes (copies per node)", lambda o: f"{o['nodes']['value']:.0f} ({o['copies_per_node']['value']:.0f})"),
    ("memory per node, resident", lambda o: f"{o['memory_per_node_gb']['value']:,.1f} GB"),
    ("vector files per node (page cache wanted)", lambda o: f"{o['originals_per_node_gb']['value']:,.0f} GB"),
    ("disk per node", lambda o: f"{o['disk_per_node_gb']['value']:,.0f} GB"),
    ("build", lambda o: f"{o['build_hours']['value']:,.1f} h (encode {o['encode_hours']['value']:,.1f} h)"),
    (
        "query p50 (pessimistic)",
        lambda o: f"{o['query_p50_ms']['value']:,.0f} ms ({o['query_p50_pessimistic_ms']['value']:,.0f} ms)",
    ),  # fmt: skip
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=1_000_000_000)
    parser.add_argument("--shard-documents", type=int, default=10_000_000)
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--node-cores", type=int, default=16)
    parser.add_argument("--node-memory-gb", type=float, default=64.0)
    parser.add_argument("--memory-share", type=float, default=0.5, help="Of a node's memory, the copies' resident.")
    for key, path in INPUTS.items():
        parser.add_argument(f"--{key.replace('_', '-')}", type=Path, default=ROOT / path, help=f"default: {path}")
    parser.add_argument("--out", type=Path, default=OUT, help="Where the JSON record goes ('-': nowhere).")
    args = parser.parse_args(argv)
    files = {key: getattr(args, key) for key in INPUTS}
    measured = measured_inputs(files)
    outputs = scale_model(measured, args)
    plan = {key: getattr(args, key) for key in ("documents", "shard_documents", "copies", "node_cores",
                                                "node_memory_gb", "memory_share")}  # fmt: skip
    for label, show in ROWS:
        print(f"{label:<44} {show(outputs)}")
    record = {"command": command_line(), "plan": plan, "inputs": {key: measured[key]["from"] for key in measured},
              "measured": measured, "extrapolated": outputs}  # fmt: skip
    if str(args.out) != "-":
        write_results(args.out, record)
    print(json.dumps(record))


if __name__ == "__main__":
    main()
