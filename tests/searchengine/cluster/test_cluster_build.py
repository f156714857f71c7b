"""A cluster build that fails (searchengine.cluster.cluster_build) on the simulated cluster of conftest: the copies
it started are asked to remove their folders all at once and waited for together, and a copy that does not answer
is killed, its folder removed on its node only once its process has ended."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from searchengine.cluster import ActorCalls, ClusterBuildSettings, build_cluster, cluster_build
from searchengine.cluster.copy_actors import start_copy_actor
from searchengine.cluster.copy_calls import CALL_TIMEOUT
from searchengine.cluster.manifest import CopyPlace
from searchengine.cluster.node_folders import remove_on_their_nodes
from tests.searchengine.cluster.conftest import corpus

ray = pytest.importorskip("ray")


class RecordedCalls(ActorCalls):
    """Ray actor calls that record, in order, each `remove` asked of a copy and each wait for one."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self._removes: set[Any] = set()

    def start(self, handle: Any, method: str, *args: Any) -> Any:  # noqa: ANN401
        pending = super().start(handle, method, *args)
        if method == "remove":
            self.events.append("asked")
            self._removes.add(pending)
        return pending

    def finish(self, pending: Any, timeout: float = CALL_TIMEOUT) -> Any:  # noqa: ANN401
        if pending in self._removes:
            self.events.append("waited")
        return super().finish(pending, timeout)

    def waitable(self, pending: Any) -> Any:  # noqa: ANN401
        if pending in self._removes:
            self.events.append("waited")
        return super().waitable(pending)


def _exists(process: int) -> bool:
    try:
        os.kill(process, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_manifest_path_a_build_cannot_write_is_refused_before_any_copy_starts(tmp_path: Path) -> None:
    """No Ray cluster runs for this test: the refusal comes first. Before, the build ran whole, then failed at its
    commit with the operating system's error (IsADirectoryError, FileExistsError), its copies' folders left."""
    from searchengine.cluster import ClusterError

    settings = ClusterBuildSettings(shards=2, model="model", local_root=str(tmp_path / "nodes"))
    (tmp_path / "file").write_text("not a folder")
    for target, said in [(tmp_path, "is a folder"), (tmp_path / "file" / "cluster.json", "is a file, so the manifest")]:
        with pytest.raises(ClusterError, match=said):
            build_cluster(target, corpus(3), settings)
    assert not (tmp_path / "nodes").exists()


def test_a_build_of_no_documents_is_refused_before_any_copy_starts(tmp_path: Path) -> None:
    """No Ray cluster runs for this test: the refusal comes first. Before, `build_cluster` of no documents (from
    Python, or the command reading an empty standard input) started every copy and committed an empty cluster."""
    from searchengine.cluster import ClusterError

    settings = ClusterBuildSettings(shards=2, model="model", local_root=str(tmp_path / "nodes"))
    for nothing in ([], iter(()), (document for document in corpus(0))):
        with pytest.raises(ClusterError, match="no documents to build from: give at least one"):
            build_cluster(tmp_path / "cluster.json", nothing, settings)
    assert not (tmp_path / "nodes").exists() and not (tmp_path / "cluster.json").exists()


def test_a_failed_build_waits_for_its_hung_copies_together_and_kills_them_before_their_folders_go(
    ray_cluster: Any,  # noqa: ANN401
    tiny_model: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two of the three copies stop (SIGSTOP: alive to Ray, answering nothing) and the corpus fails. The build asks
    every copy to remove its folder before it waits for any (it waited 30 s for each hung copy in turn), kills the
    two that did not answer, and their folders go once their processes have ended: no folder is left."""
    monkeypatch.setattr(cluster_build, "REMOVE_TIMEOUT_S", 3.0)
    # Batches of 16: the build reads the first 16 documents before it starts the copies, and no shard gets 16 of
    # the 30, so no copy is sent a batch before the corpus fails (as with 64, when the copies started first).
    settings = ClusterBuildSettings(
        shards=3, copies=1, model=str(tiny_model), local_root=str(tmp_path / "nodes"),
        encoder_options={"precision": "fp32"}, batch_size=16,
    )  # fmt: skip
    started: dict[str, Any] = {}
    stopped: list[int] = []

    def starter(place: CopyPlace, shard: int, local_root: str) -> Any:  # noqa: ANN401
        started[place.folder] = start_copy_actor(place, shard, local_root)
        return started[place.folder]

    def documents() -> Any:  # noqa: ANN401
        yield from corpus(30)  # read once every copy began its build, in its folder
        for handle in list(started.values())[:2]:
            stopped.append(ray.get(handle.__ray_call__.remote(lambda copy: os.getpid()), timeout=60))
            os.kill(stopped[-1], signal.SIGSTOP)
        raise OSError("the corpus's disk went away")

    calls = RecordedCalls()
    try:
        with pytest.raises(OSError, match="went away") as failed:
            build_cluster(tmp_path / "cluster.json", documents(), settings, calls=calls, starter=starter)
    finally:
        for process in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process, signal.SIGCONT)
    assert len(stopped) == 2 and len(started) == 3
    assert calls.events == ["asked"] * 3 + ["waited"] * 3, "every copy asked before any was waited for"
    assert not any(_exists(process) for process in stopped), "the hung copies were killed"
    assert not getattr(failed.value, "__notes__", None), "no folder is said to be left"
    assert not any(Path(folder).exists() for folder in started)
    assert not list(Path(settings.local_root).glob("*/index/*")), "the build's folder on each node went too"
    assert not (tmp_path / "cluster.json").exists()


def test_a_folder_is_removed_only_once_its_copys_process_has_ended(ray_cluster: Any, tmp_path: Path) -> None:  # noqa: ANN401
    """A process standing for a killed copy that still writes (it ends in 2 s, checking its folder is still there as
    it ends): node a's task waits for it before it removes the folder (ray.kill returns before the process ends:
    one stopped by SIGSTOP ends about 5 s later)."""
    folder = tmp_path / "a" / "index" / "some-build" / "shard-0"
    folder.mkdir(parents=True)
    writer = subprocess.Popen(["sh", "-c", f"sleep 2; test -d '{folder}'"])
    reaper = threading.Thread(target=writer.wait)  # reaped as it ends, as a node's raylet reaps its workers
    reaper.start()
    try:
        left = remove_on_their_nodes([CopyPlace("a", str(folder))], str(tmp_path), {str(folder): writer.pid})
    finally:
        reaper.join(timeout=60)
    assert left == [] and not folder.exists()
    assert writer.returncode == 0, "the folder was removed while its writer still ran"
