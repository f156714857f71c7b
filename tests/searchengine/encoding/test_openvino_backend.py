"""The OpenVINO backend on the tiny model: torch's vectors in fp32, bf16 and calibrated int8 close to them, conversions
cached and checked like the ONNX exports, no telemetry. Skipped where the `openvino` extra is not installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("openvino")
pytest.importorskip("nncf")

from searchengine.encoding import precision as precision_module  # noqa: E402 (after the skip)
from searchengine.encoding.backend import resolve_backend  # noqa: E402
from searchengine.encoding.encoder import Encoder  # noqa: E402
from searchengine.encoding.openvino_backend import OpenVinoTransformer  # noqa: E402
from searchengine.encoding.precision import cpu_has_native_bf16  # noqa: E402
from searchengine.errors import SearchEngineError  # noqa: E402


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEARCHENGINE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "openvino"


@pytest.fixture(scope="module")
def torch_encoder(tiny_model: Path) -> Encoder:
    return Encoder(tiny_model, backend="torch", precision="fp32")


@pytest.fixture(scope="module")
def converted_fp32(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Path:
    """The tiny model's fp32 conversion, made once in a cache of its own: the damage tests damage copies of it."""
    folder = tmp_path_factory.mktemp("openvino-converted")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SEARCHENGINE_CACHE", str(folder))
        Encoder(tiny_model, backend="openvino")
    return folder / "openvino"


def test_fp32_gives_the_torch_vectors(tiny_model: Path, torch_encoder: Encoder, sentences: list[str]) -> None:
    encoder = Encoder(tiny_model, backend="openvino")
    assert isinstance(encoder.model, OpenVinoTransformer)
    assert (encoder.backend, encoder.precision) == ("openvino", "fp32")
    np.testing.assert_allclose(encoder.encode(sentences), torch_encoder.encode(sentences), atol=1e-5)


def test_int8_is_calibrated_once_close_and_quantized(
    tiny_model: Path, torch_encoder: Encoder, sentences: list[str], cache: Path, short_calibration: Path
) -> None:
    first = Encoder(tiny_model, backend="openvino", precision="int8")
    vectors, reference = first.encode(sentences), torch_encoder.encode(sentences)
    assert (vectors * reference).sum(1).min() > 0.9
    assert not np.allclose(vectors, reference, atol=1e-6)
    files = sorted(path.name for path in cache.iterdir())
    assert [name.rsplit("-", 1)[1] for name in files] == ["int8.bin", "int8.json", "int8.xml"]
    stamps = {path: path.stat().st_mtime_ns for path in cache.iterdir()}
    second = Encoder(tiny_model, backend="openvino", precision="int8", threads=1)
    assert {path: path.stat().st_mtime_ns for path in cache.iterdir()} == stamps  # not calibrated again
    np.testing.assert_allclose(second.encode(sentences), vectors, atol=1e-6)
    short_calibration.write_text("other texts\n" + "\n".join(sentences), encoding="utf-8")
    Encoder(tiny_model, backend="openvino", precision="int8")  # other calibration text: calibrated again
    assert {path: path.stat().st_mtime_ns for path in cache.iterdir()} != stamps


def damage_flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, other bytes
    path.write_bytes(bytes(data))


def damage_claim(path: Path) -> None:
    record = path.with_suffix(".json")
    claims = json.loads(record.read_text(encoding="utf-8"))
    claims["identity"]["fingerprint"] = "0" * 64
    record.write_text(json.dumps(claims), encoding="utf-8")


def damage_link(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")  # reading it never ends: must not be followed


@pytest.mark.parametrize(
    ("damage", "suffix"),
    [(damage_flip, ".bin"), (damage_claim, ".xml"), (damage_link, ".bin"), (damage_link, ".json")],
)
def test_a_damaged_or_foreign_cache_entry_is_converted_again(
    tiny_model: Path,
    torch_encoder: Encoder,
    sentences: list[str],
    cache: Path,
    converted_fp32: Path,
    damage,
    suffix: str,  # noqa: ANN001
) -> None:
    shutil.copytree(converted_fp32, cache)
    (graph,) = cache.glob("*-fp32.xml")
    damage(graph.with_suffix(suffix))
    encoder = Encoder(tiny_model, backend="openvino")
    assert not any(path.is_symlink() for path in cache.iterdir())
    assert json.loads(graph.with_suffix(".json").read_text(encoding="utf-8"))["identity"]["fingerprint"] != "0" * 64
    np.testing.assert_allclose(encoder.encode(sentences), torch_encoder.encode(sentences), atol=1e-5)


@pytest.mark.skipif(not cpu_has_native_bf16(), reason="OpenVINO runs bf16 only on a CPU with AVX512-BF16 or AMX")
def test_bf16_runs_the_fp32_graph_close_to_fp32(
    tiny_model: Path, torch_encoder: Encoder, sentences: list[str], cache: Path
) -> None:
    encoder = Encoder(tiny_model, backend="openvino", precision="bf16")
    assert (encoder.backend, encoder.precision) == ("openvino", "bf16")
    vectors, reference = encoder.encode(sentences), torch_encoder.encode(sentences)
    assert not np.allclose(vectors, reference, atol=1e-6), "bf16, not fp32"
    assert (vectors * reference).sum(1).min() > 0.999
    assert sorted(path.suffix for path in cache.iterdir()) == [".bin", ".json", ".xml"]  # the fp32 graph
    assert list(cache.glob("*-fp32.xml"))


def test_bf16_is_refused_where_the_cpu_lacks_it(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(precision_module, "cpu_flags", lambda cpuinfo=None: frozenset({"avx512f", "avx512_vnni"}))
    with pytest.raises(SearchEngineError, match="OpenVINO runs bf16 only on a CPU with AVX512-BF16 or AMX"):
        Encoder(tiny_model, backend="openvino", precision="bf16")


def test_what_it_cannot_run_is_a_clear_error(tiny_model: Path) -> None:
    with pytest.raises(SearchEngineError, match="openvino backend runs fp32 or bf16 or int8, not fp16"):
        resolve_backend("openvino", "cpu", "mean", "fp16")
    with pytest.raises(SearchEngineError, match="openvino backend pools the last layer only"):
        Encoder(tiny_model, backend="openvino", pooling="first_last_avg")
    assert resolve_backend("auto", "cpu", "mean", "fp32") != "openvino"  # auto: for int8 only (docs/benchmarks.md)
    assert resolve_backend("auto", "cpu", "mean", "int8") == "openvino"
    assert resolve_backend("auto", "cpu", "first_last_avg", "int8") != "openvino"  # needs every layer


def test_openvino_sends_no_telemetry(tmp_path: Path, tiny_model: Path, short_calibration: Path) -> None:
    """Converting and calibrating through the backend, OpenVINO and NNCF find no telemetry package, so they write
    no client id (their first step before sending anything) in the home folder. Without the block, importing
    openvino and opening its runtime alone wrote one. Calibrated on the few test texts, as the int8 test is."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from searchengine.encoding import openvino_backend\n"
        "from searchengine.encoding.encoder import Encoder\n"
        "openvino_backend.CALIBRATION_TEXT = Path(sys.argv[2])\n"
        "Encoder(sys.argv[1], backend='openvino', precision='int8').encode(['a test sentence'])\n"
    )
    environment = {**os.environ, "HOME": str(tmp_path), "SEARCHENGINE_CACHE": str(tmp_path / "cache")}
    environment.pop("PYTEST_CURRENT_TEST", None)
    command = [sys.executable, "-c", code, str(tiny_model), str(short_calibration)]
    subprocess.run(command, check=True, env=environment, timeout=300)
    assert (tmp_path / "cache" / "openvino").is_dir()
    assert not (tmp_path / "intel").exists()
