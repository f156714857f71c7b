#!/usr/bin/env bash
# Set up searchengine in ./.venv: PyTorch first (the CPU build where there is no NVIDIA GPU, so pip never pulls
# gigabytes of CUDA), then the project with ONNX Runtime (the encoder's fastest lossless CPU backend, measured in
# docs/benchmarks.md). `./setup.sh --dev` adds the test dependencies.
set -euo pipefail
cd "$(dirname "$0")"
TORCH_VERSION=2.13.0
PYTHON=${PYTHON:-python3}

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
pip() { .venv/bin/python -m pip --disable-pip-version-check -q "$@"; }

gpu=
command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && gpu=1

if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  if [ -n "$gpu" ]; then
    echo "setup: NVIDIA GPU found; installing PyTorch $TORCH_VERSION with CUDA" >&2
    pip install "torch==$TORCH_VERSION"
  else
    echo "setup: no GPU; installing the CPU build of PyTorch $TORCH_VERSION" >&2
    # "+cpu" builds are found where pip already knows one (a local wheel through find-links, or a configured
    # index); PyPI has none, so elsewhere this fails at once and PyTorch's own CPU index is used.
    pip install "torch==$TORCH_VERSION+cpu" 2>/dev/null ||
      pip install "torch==$TORCH_VERSION" --index-url https://download.pytorch.org/whl/cpu
  fi
fi

if [ "${1:-}" = "--dev" ]; then
  pip install -e ".[dev]"
else
  pip install -e ".[onnx]"
fi

# FAISS's GPU build (PyPI's faiss-gpu-cu12 wheels, CUDA 12) replaces the CPU build where a GPU is present: the
# vector index then moves to the GPU for the index types FAISS runs there (indexer/vectors/vector_index.py).
if [ -n "$gpu" ] && ! .venv/bin/python -c "import faiss, sys; sys.exit(not hasattr(faiss, 'GpuIndexFlat'))" 2>/dev/null; then
  echo "setup: NVIDIA GPU found; installing FAISS's GPU build (faiss-gpu-cu12) in place of faiss-cpu" >&2
  pip uninstall -y faiss-cpu && pip install "faiss-gpu-cu12" || {
    echo "setup: warning: faiss-gpu-cu12 could not be installed; keeping FAISS on the CPU" >&2
    pip install "faiss-cpu>=1.8"
  }
fi
echo "setup: ready; run .venv/bin/searchengine --help" >&2
