"""A shard copy's folder on its own node's disk: the rule that a process opens only folders of the node it runs on
(nothing assumes a shared file system), and the removal of copies' folders by Ray tasks pinned to their nodes, which
reach a folder whose copy's actor is dead (a build that failed because a copy died, or whose copy it killed), once
that copy's process is gone."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterable
from pathlib import Path

from searchengine.cluster.errors import ClusterError, CopyFolderError
from searchengine.cluster.manifest import CopyPlace, node_root
from searchengine.cluster.placement import live_nodes, node_name
from searchengine.processes import process_running

REMOVAL_TIMEOUT_S = 60.0
"""How long the removal of the folders waits for its tasks (each removes one folder)."""
PROCESS_EXIT_S = 30.0
"""How long a removal task waits for the process of the folder's killed copy to end (Ray ends a copy stopped by
SIGSTOP about 5 s after ray.kill, one that runs at once) before it leaves the folder."""


def current_node() -> str:
    """The name of the Ray node this process runs on (searchengine.cluster.placement)."""
    import ray

    return node_name(ray.get_runtime_context().get_node_id())


def own_folder(folder: str, local_root: str, node: str) -> Path:
    """`folder`, resolved, where it is under `node`'s subfolder of `local_root`; refused (CopyFolderError) where it
    belongs to another node: a process on `node` opens only its own node's disk."""
    own = node_root(local_root, node).resolve()
    path = Path(folder).resolve()
    if own not in path.parents:
        raise CopyFolderError(
            f"shard copy folder {folder} is not under {own}, the folder of node {node} it runs on: a copy opens only "
            "its own node's disk; place the copy on the node whose folder it is"
        )
    return path


def remove_folder(folder: Path) -> None:
    """Delete a copy's folder, and its build's folder on this node once that holds no other copy; ClusterError
    where the folder stays (a file in it that may not be removed), so a caller names it as left."""
    shutil.rmtree(folder, ignore_errors=True)
    if folder.exists():
        raise ClusterError(
            f"shard copy folder {folder} could not be removed (a file in it may not be deleted, or is in use): "
            "remove it on its node"
        )
    with contextlib.suppress(OSError):
        folder.parent.rmdir()


def _remove_here(folder: str, local_root: str, process: int | None) -> None:
    """remove_folder, in a Ray task on the node whose folder it is (refused on any other node), once `process`
    (that of the folder's killed copy, which could still write in it; None: none to wait for) has ended; a folder
    that is not there (its copy died before making it, e.g. refusing it) is nothing to remove."""
    deadline = time.monotonic() + PROCESS_EXIT_S
    while process is not None and process_running(process):
        if time.monotonic() > deadline:
            raise ClusterError(f"the process {process} of shard copy folder {folder}'s copy still runs: kill it first")
        time.sleep(0.05)
    if Path(folder).exists():
        remove_folder(own_folder(folder, local_root, current_node()))


def remove_on_their_nodes(
    places: Iterable[CopyPlace], local_root: str, processes: dict[str, int | None] | None = None
) -> list[str]:
    """Remove each place's folder by a Ray task pinned to the place's node (a hard node affinity: it never runs
    elsewhere), all at once; what removes a copy's folder when its actor is dead. `processes`: by folder, the
    process of its copy (killed: ray.kill returns before the process ends) each task first waits to end, so no
    folder is removed under a copy that still writes in it. Returns what is left, as "FOLDER on node NODE": the
    folders of nodes that are not live (a node that is gone took its disk with it; one that comes back still holds
    the folder), of processes that did not end within PROCESS_EXIT_S, and of tasks that failed or did not end
    within REMOVAL_TIMEOUT_S."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    places = list(places)
    if not places:
        return []
    nodes = live_nodes()
    remover = ray.remote(_remove_here)
    started, left = [], []
    for place in places:
        if place.node not in nodes:
            left.append(place)
            continue
        strategy = NodeAffinitySchedulingStrategy(nodes[place.node], soft=False)
        options = remover.options(num_cpus=0, max_retries=0, scheduling_strategy=strategy)
        started.append((place, options.remote(place.folder, local_root, (processes or {}).get(place.folder))))
    tasks = [task for _, task in started]
    ready, _ = ray.wait(tasks, num_returns=len(tasks), timeout=REMOVAL_TIMEOUT_S) if tasks else ([], [])
    for place, task in started:
        if task not in ready:
            ray.cancel(task, force=True)
            left.append(place)
            continue
        try:
            ray.get(task)
        except Exception:  # noqa: BLE001 (a task that failed leaves its folder, said to the caller)
            left.append(place)
    return [f"{place.folder} on node {place.node}" for place in left]
