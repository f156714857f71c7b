"""benchmarks/scale/scale_model.py's arithmetic on small made-up results files: every figure is read from the file
named for it and marked measured, every output is marked extrapolated, and the outputs are what the model says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.scale.scale_model import INPUTS, main

MIB = 2**20


def made_up(folder: Path) -> dict[str, Path]:
    """Results files with round numbers, in the shapes the real ones have."""
    stages = {"storing": 10.0, "vector index": 10.0}
    records = {
        "memory_large": {"index_type": "IVF8,PQ4", "index_resident_mb": 2.0, "mapped_cache_mb": 3.0,
                         "baseline_mb": 1.0, "p50_ms": 2.0, "p99_ms": 4.0,
                         "build": {"vectors": 1000, "build_stages_s": {"storing": 99.0}}},
        "build_large": {"build": {"vectors": 1000, "build_stages_s": stages}},
        "memory_small": {"index_type": "IVF8,PQ4", "index_resident_mb": 1.5, "mapped_cache_mb": 2.0,
                         "baseline_mb": 1.0, "p50_ms": 9.0, "p99_ms": 9.0, "build": {"vectors": 500}},
        "store": {"steps": [{"rows": 1000, "size": {"bytes_per_row": 200.0}},
                            {"rows": 10, "size": {"bytes_per_row": 100.0}}]},
        "encode": {"encode-10": {"documents": 10, "documents_per_second": 1.0, "machine": {"cores": 2}},
                   "encode-1000": {"documents": 1000, "documents_per_second": 20.0, "machine": {"cores": 2}},
                   "stages-5000": {"documents": 5000, "machine": {"cores": 2}}},
        "query_encoding": {"groups": [{"end_to_end": [{"1_thread_encode_ms_p50": 3.0}]}]},
        "fan_out": {"shards": 4, "p50_ms": {"cluster": 30.0, "one_index": 10.0}},
        "fan_out_loaded": {"shards": 4, "p50_ms": {"cluster": 50.0, "one_index": 10.0}},
    }  # fmt: skip
    assert set(records) == set(INPUTS)
    for key, record in records.items():
        (folder / f"{key}.json").write_text(json.dumps(record), encoding="utf-8")
    return {key: folder / f"{key}.json" for key in records}


def test_the_model_on_made_up_measurements(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = made_up(tmp_path)
    arguments = [f"--{key.replace('_', '-')}={path}" for key, path in files.items()]
    plan = ["--documents=10000", "--shard-documents=2000", "--copies=2", "--node-cores=4", "--node-memory-gb=0.01"]
    main([*arguments, *plan, "--memory-share=0.5", f"--out={tmp_path / 'out.json'}"])
    record = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert capsys.readouterr().out.splitlines()[0].split()[-3:] == ["5", "x", "2"]
    assert record["inputs"]["resident_mib_small"] == str(files["memory_small"])
    assert {entry["kind"] for entry in record["measured"].values()} == {"measured"}
    assert {entry["kind"] for entry in record["extrapolated"].values()} == {"extrapolated"}
    got = {key: entry["value"] for key, entry in record["extrapolated"].items()}
    assert (got["shards"], got["documents_per_shard"], got["copies_per_shard"]) == (5, 2000, 2)
    # a line through (500, 1.5 MiB) and (1000, 2 MiB): 1 MiB fixed, 1/1000 MiB a document
    assert got["resident_bytes_per_document"] == pytest.approx(MIB / 1000, abs=1e-3)
    assert got["vector_file_bytes_per_document"] == pytest.approx(2 * MIB / 1000, abs=1e-3)
    # a copy: 1 MiB fixed + 2000 documents (2 MiB) + 1 MiB baseline = 4 MiB; 10 copies in 5 MB a node: 9 nodes
    assert got["memory_per_copy_gb"] == pytest.approx(4 * MIB / 1e9, abs=1e-3)
    assert got["nodes"] == 9 and got["copies_per_node"] == 2
    assert got["memory_per_node_gb"] == pytest.approx(8 * MIB / 1e9, abs=1e-3)
    # disk a copy: 1 MiB + 2000 x 2/1000 MiB of vector files, + 2000 rows x 200 bytes (the largest step's)
    assert got["disk_per_node_gb"] == pytest.approx(2 * (5 * MIB + 400_000) / 1e9, abs=1e-3)
    # encode: 20 documents/s on 2 cores = 10 a core, x 4 cores x 9 nodes; each copy: 20 s per 1,000 documents
    assert got["encode_hours"] == pytest.approx(10_000 / 360 / 3600, abs=1e-3)
    assert got["build_hours"] == pytest.approx((10_000 / 360 + 40) / 3600, abs=1e-3)
    # query: 3 ms encoding + 2 ms x (2000 / 1000) + 20 ms fan-out; pessimistic: the p99 and the loaded fan-out
    assert got["shard_p50_ms"] == pytest.approx(4.0)
    assert got["query_p50_ms"] == pytest.approx(27.0)
    assert got["query_p50_pessimistic_ms"] == pytest.approx(3 + 8 + 40)


def test_nodes_follow_the_cores_when_memory_is_plenty(tmp_path: Path) -> None:
    arguments = [f"--{key.replace('_', '-')}={path}" for key, path in made_up(tmp_path).items()]
    main([*arguments, "--documents=10000", "--shard-documents=1000", "--node-cores=4", f"--out={tmp_path / 'o.json'}"])
    got = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))["extrapolated"]
    assert (got["shards"]["value"], got["nodes"]["value"], got["copies_per_node"]["value"]) == (10, 5, 4)
