"""Measured numbers that the help quotes, each written once here. They come from docs/benchmarks.md's encoding
table (`benchmarks/encoding_speed.py`, bundled all-MiniLM-L6-v2, one CPU); the README quotes the same strings, and
tests/searchengine/cli/test_conventions.py checks that help and README agree."""

from __future__ import annotations

ONNX_QUERY_SPEEDUP = "3×"
"""One query in ONNX Runtime fp32 against torch fp32: a median 5.0 ms against 14.2 ms."""
INT8_STSB_CHANGE = "−0.26"
"""STS-B test Spearman × 100 of `--precision int8` (ONNX Runtime, the default backend) against fp32."""
INT8_SPEEDUP = "1.9×"
"""Throughput of `--precision int8` (ONNX Runtime) against sentence-transformers fp32."""
BF16_BULK_SPEEDUP = "1.5–1.6×"
"""torch bf16 against ONNX Runtime fp32 on 64 texts or more, on a CPU with AVX512-BF16 and no AMX (Zen 4)."""
AMX_BF16_BULK_SPEEDUP = "2.1–2.7×"
"""torch bf16 against ONNX Runtime fp32 in batches of 64, on a CPU with AMX (2 vCPUs of a Xeon, model 207)."""
