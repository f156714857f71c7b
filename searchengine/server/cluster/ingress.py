"""The ingress of a cluster index on Ray Serve: one replica that opens the ClusterIndex over the copies'
deployments and serves the FastAPI app of `searchengine serve` (searchengine.server.app.create_app) over it, so
every route, key check, limit, error and metric is the same code as on one machine.

One replica, never more: it numbers each shard's writes, and two numbering the same shard would give two writes
one number. Serve restarts it when it fails; the new one reads from the copies which writes each holds. It heals the
cluster in a thread of its own (ClusterIndex.heal every `heal_every_s`, beside the writer thread): a copy whose
replica died is started again, one whose node is gone is rebuilt on a live node from a live copy (and, once the
manifest names the new one, the old one's Serve application is deleted), one that missed writes catches up. On
start it deletes the copy applications of its manifest's build that the manifest does not name (an ingress that died
between the manifest's write and the delete left them)."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from ray import serve

from searchengine.server.app import create_app
from searchengine.server.cluster.cluster_engine import ClusterEngine
from searchengine.server.cluster.copy_deployments import (
    ServeCalls,
    start_copy_deployment,
    stop_copy_deployment,
    stop_unnamed_copies,
)
from searchengine.server.served_index import ServedIndex
from searchengine.server.settings import ServerSettings

log = logging.getLogger("searchengine.server")
HEAL_EVERY_S = 5.0
"""Seconds between two looks for copies to restart, rebuild or catch up."""


@serve.ingress()
class ClusterIngress:
    """Opens the cluster index at `manifest_path` (read on the node this replica runs on) and serves it."""

    async def __init__(
        self,
        manifest_path: str,
        settings: ServerSettings,
        readers: int = 2,
        max_batch: int = 64,
        heal_every_s: float = HEAL_EVERY_S,
    ) -> None:
        from searchengine.cluster.cluster_index import ClusterIndex

        self.settings = settings
        # Off the replica's event loop, where a handle's result may not be waited for. This replica makes every
        # write, so it may keep each shard's term statistics between the shard's writes.
        self.cluster = await asyncio.to_thread(
            ClusterIndex.open,
            manifest_path,
            calls=ServeCalls(),
            starter=start_copy_deployment,
            stopper=stop_copy_deployment,
            keep_statistics=True,
        )
        await asyncio.to_thread(self._stop_unnamed_copies)
        self.engine = ClusterEngine(self.cluster)
        self.served = await asyncio.to_thread(
            ServedIndex, self.engine.path, max_batch=max_batch, readers=readers, open_engine=lambda: self.engine
        )
        self._stop = threading.Event()
        self._healing = threading.Lock()
        self._healer = threading.Thread(target=self._heal, args=(heal_every_s,), name="cluster-heal", daemon=True)
        self._healer.start()

    def _stop_unnamed_copies(self) -> None:
        """Delete the copy applications of this cluster's build its manifest does not name (stop_unnamed_copies): an
        ingress that died after heal wrote the manifest and before it deleted the replaced copy's left it running. A
        failure is logged; the ingress serves on, and the application stays until the next start."""
        try:
            for app in stop_unnamed_copies(self.cluster.manifest):
                log.warning("deleted Serve application %s: a copy of this cluster its manifest no longer names", app)
        except Exception as error:  # noqa: BLE001 (searches and writes do not need it)
            why = f"{type(error).__name__}: {error}".splitlines()[0]
            log.warning("could not look for copies the manifest no longer names: %s", why)

    def __serve_build_asgi_app__(self) -> Any:  # noqa: ANN401 (a FastAPI app)
        return create_app(self.served, self.settings)

    def status(self) -> dict[str, Any]:
        """ClusterIndex.status as this ingress knows it (the writes each shard acknowledged, so each copy's lag)."""
        return self.cluster.status()

    def spans(self) -> dict[str, dict[str, float]]:
        """Where this ingress's searches spent their time so far, summed by mode: encoding, waiting for the shards,
        and the whole (ClusterIndex.spans); a benchmark reads it before and after a stretch of searches."""
        return self.cluster.spans.totals()

    def heal(self) -> list[str]:
        """ClusterIndex.heal now, one at a time. Not on the writer thread: heal takes each shard's write lock while
        it moves or catches up a copy, and not while a copy starts (seconds), so writes go on meanwhile."""
        with self._healing:
            return self.cluster.heal()

    def _heal(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            try:
                for line in self.heal():
                    log.warning("cluster healed: %s", line)
            except Exception:  # noqa: BLE001 (the next turn tries again; searches go on meanwhile)
                log.exception("healing the cluster failed")

    def __del__(self) -> None:
        self._stop.set()
