"""Queries without torch: an opened index whose model's ONNX export is cached encodes queries through
searchengine.encoding.onnx_query_encoder, with the torch path's results, and still checks the model's fingerprint."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from searchengine.encoding.encoder import Encoder
from searchengine.encoding.onnx_query_encoder import OnnxQueryEncoder
from searchengine.encoding.speed import EncoderSpeed
from searchengine.engine.search_engine import SearchEngine
from searchengine.errors import SearchEngineError

NOT_FOR_A_QUERY = (
    "torch", "transformers", "bs4", "markdown_it", "pypdf", "fastapi", "uvicorn", "ray", "sqlite_utils", "pandas",
    "searchengine.engine.index_writer", "searchengine.engine.indexing", "searchengine.indexer.commit.live_write",
    "searchengine.indexer.commit.merge_policy", "searchengine.analysis.clustering",
    "searchengine.analysis.paraphrase_mining", "searchengine.training.registry", "searchengine.training.method",
)  # fmt: skip
"""What a query never needs: the torch encoder (the ONNX export encodes queries), the file readers (a query reads
no file), the server, Ray, sqlite-utils with the pandas it imports (a reader's store reads through the standard
library's sqlite3: indexer/tables/store_connection.py), and the write and analysis code (SearchEngine makes its
IndexWriter at the first write), and the training registry and its methods (the `train` group makes its commands
at the first look at them: searchengine/cli/train.py)."""

CLI_REPORTING_MODULES = f"""
import json, sys
from searchengine.cli import app
try:
    app(sys.argv[1:])
except SystemExit as exit:
    assert not exit.code, exit.code
print(json.dumps(sorted(set({NOT_FOR_A_QUERY!r}) & set(sys.modules))), file=sys.stderr)
"""
"""Runs the command line, then says on stderr which modules of NOT_FOR_A_QUERY it imported."""

QUERIES = ["how do i reset my password", "a storm with snow", "bake bread"]


@pytest.fixture
def index(tmp_path: Path, tiny_model: Path, sentences: list[str]) -> Path:
    encoder = Encoder(tiny_model, backend="onnx", precision="fp32")  # caches the export
    SearchEngine.build(sentences, tmp_path / "index", encoder=encoder)
    return tmp_path / "index"


def _torch_results(index: Path, query: str, k: int) -> list[tuple[int, float]]:
    engine = SearchEngine.open(index, speed=EncoderSpeed(backend="torch", precision="fp32"))
    return [(hit.id, hit.score) for hit in engine.search(query, k)]


def test_cli_query_imports_only_what_a_query_needs(index: Path) -> None:
    for query in QUERIES:
        completed = subprocess.run(
            [
                sys.executable,
                "-c",
                CLI_REPORTING_MODULES,
                "query",
                query,
                "-k",
                "5",
                "--json",
                "--precision",
                "fp32",
                "--index-dir",
                index,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        assert json.loads(completed.stderr.strip().splitlines()[-1]) == []
        hits = [(hit["id"], hit["score"]) for hit in json.loads(completed.stdout)["hits"]]
        expected = _torch_results(index, query, 5)
        assert [id_ for id_, _ in hits] == [id_ for id_, _ in expected]
        assert max(abs(score - want) for (_, score), (_, want) in zip(hits, expected)) < 1e-4


def test_opened_index_queries_through_the_onnx_export(index: Path) -> None:
    engine = SearchEngine.open(index, speed=EncoderSpeed(precision="fp32"))  # auto: torch bf16 on a CPU with AMX
    batch = engine.search_batch(QUERIES, 4)
    assert isinstance(engine.reader.encoders.for_queries(), OnnxQueryEncoder) and engine.reader.encoders.loaded is None
    for query, hits in zip(QUERIES, batch):
        assert [(hit.id, pytest.approx(hit.score, abs=1e-4)) for hit in hits] == _torch_results(index, query, 4)


def test_a_loaded_encoder_is_used_as_it_is(index: Path, tiny_model: Path) -> None:
    engine = SearchEngine.open(index)
    assert engine.encoder is engine.reader.encoders.for_queries()  # adding documents loaded it: queries reuse it


def test_the_fingerprint_is_still_checked(tmp_path: Path, tiny_model: Path, other_tiny_model: Path) -> None:
    model = tmp_path / "model"
    shutil.copytree(tiny_model, model)
    encoder = Encoder(model, precision="fp32")
    SearchEngine.build(["the cat sat on the mat", "stocks fell"], tmp_path / "index", encoder=encoder)
    shutil.copy(other_tiny_model / "model.safetensors", model / "model.safetensors")  # the model changed on disk
    with pytest.raises(SearchEngineError, match="was built with model"):
        SearchEngine.open(tmp_path / "index").search("cat", k=1)
