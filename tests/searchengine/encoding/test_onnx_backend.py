"""The ONNX Runtime backend on the tiny model: same vectors as torch, cached exports, clear errors."""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from searchengine.encoding.backend import resolve_backend
from searchengine.encoding.encoder import Encoder
from searchengine.encoding.onnx_backend import OnnxTransformer
from searchengine.encoding.openvino_backend import openvino_installed
from searchengine.encoding.precision import resolve_precision
from searchengine.errors import SearchEngineError


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEARCHENGINE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "onnx"


@pytest.fixture(scope="module")
def torch_encoder(tiny_model: Path) -> Encoder:
    return Encoder(tiny_model, backend="torch", precision="fp32")


def test_fp32_gives_the_torch_vectors(tiny_model: Path, torch_encoder: Encoder, sentences: list[str]) -> None:
    onnx = Encoder(tiny_model, backend="onnx", precision="fp32")
    assert isinstance(onnx.model, OnnxTransformer) and not isinstance(torch_encoder.model, OnnxTransformer)
    np.testing.assert_allclose(onnx.encode(sentences), torch_encoder.encode(sentences), atol=1e-5)
    assert onnx.precision == "fp32"


def test_a_pass_runs_while_another_thread_is_inside_one(tiny_model: Path, sentences: list[str]) -> None:
    """A server's query is not held behind the batch of a write: ONNX Runtime passes run side by side."""
    onnx = Encoder(tiny_model, backend="onnx", precision="fp32")
    expected = onnx.encode(sentences[:2])
    session, inside, release = onnx.model.session, threading.Event(), threading.Event()

    class HeldSession:  # the real session; the first pass waits inside until the second one has finished
        def run(self, *args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            if not inside.is_set():
                inside.set()
                assert release.wait(30), "the second pass could not run while the first was inside its own"
            return session.run(*args, **kwargs)

    onnx.model.session = HeldSession()
    first: list[np.ndarray] = []
    thread = threading.Thread(target=lambda: first.append(onnx.encode(sentences[:2])))
    thread.start()
    assert inside.wait(30)
    second = onnx.encode(sentences[:2])
    release.set()
    thread.join(30)
    np.testing.assert_allclose(first[0], expected, atol=1e-6)
    np.testing.assert_allclose(second, expected, atol=1e-6)


def test_auto_picks_onnx_where_it_can_run(tiny_model: Path) -> None:
    """On the CPU (on a GPU machine too, where the default device is the GPU and auto is torch)."""
    assert Encoder(tiny_model, precision="fp32", device="cpu").backend == "onnx"
    assert resolve_backend("auto", "cpu", "mean", "int8") == ("openvino" if openvino_installed() else "onnx")
    assert Encoder(tiny_model, precision="fp32", pooling="first_last_avg", device="cpu").backend == "torch"
    assert Encoder(tiny_model, precision="bf16", device="cpu").backend == "torch"
    with pytest.raises(SearchEngineError, match="runs fp32 or int8"):
        Encoder(tiny_model, backend="onnx", precision="bf16")


def test_auto_precision_follows_the_backend_on_this_cpu(tiny_model: Path) -> None:
    """Whatever this CPU is: --backend onnx alone runs fp32, and "auto" asks resolve_precision with the backends
    that can run the model (its decision table is tested in test_precision.py)."""
    assert Encoder(tiny_model, backend="onnx").precision == "fp32"
    either = Encoder(tiny_model, device="cpu")
    assert either.precision == resolve_precision("auto", "cpu", ["onnx", "torch"])
    assert either.backend == ("onnx" if either.precision == "fp32" else "torch")
    for torch_only in (Encoder(tiny_model, backend="torch", device="cpu"), Encoder(tiny_model, "prompt", "cpu")):
        assert (torch_only.backend, torch_only.precision) == ("torch", resolve_precision("auto", "cpu", ["torch"]))


def test_auto_falls_back_to_torch_without_onnxruntime(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    assert Encoder(tiny_model, precision="fp32", device="cpu").backend == "torch"
    assert Encoder(tiny_model, device="cpu").precision == resolve_precision("auto", "cpu", ["torch"])  # torch's best


def test_int8_is_close_but_quantized(tiny_model: Path, torch_encoder: Encoder, sentences: list[str]) -> None:
    vectors = Encoder(tiny_model, backend="onnx", precision="int8").encode(sentences)
    reference = torch_encoder.encode(sentences)
    assert (vectors * reference).sum(1).min() > 0.9
    assert not np.allclose(vectors, reference, atol=1e-6)


def test_the_export_is_made_once_and_reused(tiny_model: Path, cache: Path, sentences: list[str]) -> None:
    first = Encoder(tiny_model, backend="onnx", precision="fp32")
    (exported,) = cache.glob("*-fp32.onnx")
    stamp = exported.stat().st_mtime_ns
    second = Encoder(tiny_model, backend="onnx", precision="fp32", threads=1)
    assert exported.stat().st_mtime_ns == stamp
    assert sorted(cache.iterdir()) == [exported.with_suffix(".json"), exported, cache / "split"]  # and its split copy
    np.testing.assert_allclose(first.encode(sentences), second.encode(sentences), atol=1e-6)


def test_a_cached_export_with_flipped_bytes_is_exported_again(
    tiny_model: Path, cache: Path, sentences: list[str]
) -> None:
    first = Encoder(tiny_model, backend="onnx", precision="fp32")
    (exported,) = cache.glob("*-fp32.onnx")
    good = exported.read_bytes()
    damaged = bytearray(good)
    damaged[len(damaged) // 2] ^= 0xFF  # same size, other bytes
    exported.write_bytes(bytes(damaged))
    second = Encoder(tiny_model, backend="onnx", precision="fp32")
    assert exported.read_bytes() == good
    np.testing.assert_allclose(first.encode(sentences), second.encode(sentences), atol=1e-6)


def test_a_cached_export_claiming_another_model_is_exported_again(tiny_model: Path, cache: Path) -> None:
    Encoder(tiny_model, backend="onnx", precision="fp32")
    (exported,) = cache.glob("*-fp32.onnx")
    record = exported.with_suffix(".json")
    claims = json.loads(record.read_text(encoding="utf-8"))
    claims["identity"]["fingerprint"] = "0" * 64
    record.write_text(json.dumps(claims), encoding="utf-8")
    stamp = exported.stat().st_mtime_ns
    Encoder(tiny_model, backend="onnx", precision="fp32")
    assert exported.stat().st_mtime_ns != stamp
    assert json.loads(record.read_text(encoding="utf-8"))["identity"]["fingerprint"] != "0" * 64


def test_a_corrupt_cached_export_names_the_file_and_the_fix(tiny_model: Path, cache: Path) -> None:
    """An export that matches its record but cannot load (written so by hand, or a bad exporter) is an error."""
    Encoder(tiny_model, backend="onnx", precision="fp32")
    (exported,) = cache.glob("*-fp32.onnx")
    exported.write_bytes(b"not an onnx model")
    record = exported.with_suffix(".json")
    claims = json.loads(record.read_text(encoding="utf-8"))
    record.write_text(
        json.dumps(
            {**claims, "size": exported.stat().st_size, "sha256": hashlib.sha256(exported.read_bytes()).hexdigest()}
        ),
        encoding="utf-8",
    )
    with pytest.raises(SearchEngineError, match="delete it to re-export") as error:
        Encoder(tiny_model, backend="onnx", precision="fp32")
    assert str(exported) in str(error.value)


@pytest.mark.parametrize("linked", ["export", "record"])
def test_a_cached_file_linked_to_an_endless_device_is_exported_again(
    tiny_model: Path, cache: Path, sentences: list[str], linked: str
) -> None:
    """A link to /dev/zero made every query hang (reading it never ends): a link is never followed, and the size
    is checked before the export is read."""
    first = Encoder(tiny_model, backend="onnx", precision="fp32")
    (exported,) = cache.glob("*-fp32.onnx")
    target = exported if linked == "export" else exported.with_suffix(".json")
    target.unlink()
    target.symlink_to("/dev/zero")
    second = Encoder(tiny_model, backend="onnx", precision="fp32")  # would hang before the fix
    assert not exported.is_symlink() and not exported.with_suffix(".json").is_symlink()
    np.testing.assert_allclose(first.encode(sentences), second.encode(sentences), atol=1e-6)


def test_missing_onnxruntime_says_how_to_install_it(tiny_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # what an environment without the extra looks like
    with pytest.raises(SearchEngineError, match=r"searchengine\[onnx\]"):
        Encoder(tiny_model, backend="onnx")


@pytest.mark.parametrize("pooling", ["last2avg", "first_last_avg"])
def test_poolings_that_need_every_layer_are_refused(tiny_model: Path, pooling: str) -> None:
    with pytest.raises(SearchEngineError, match="last layer only"):
        Encoder(tiny_model, pooling=pooling, backend="onnx")


def test_unknown_backend_and_bad_threads(tiny_model: Path) -> None:
    with pytest.raises(SearchEngineError, match="unknown backend"):
        Encoder(tiny_model, backend="tensorrt")
    with pytest.raises(SearchEngineError, match="at least 1"):
        Encoder(tiny_model, threads=0)


def test_an_unwritable_cache_is_a_clear_error(
    tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be", encoding="utf-8")
    monkeypatch.setenv("SEARCHENGINE_CACHE", str(blocker))
    with pytest.raises(SearchEngineError, match="SEARCHENGINE_CACHE to a writable folder"):
        Encoder(tiny_model, backend="onnx")
