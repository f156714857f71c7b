"""One simulated Ray cluster per test module: a head and two nodes, each of one CPU and named by its own
`searchengine_node_<name>` resource, so every node keeps its shard copies in its own folder."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import WORDS


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    """The cluster and its worker nodes by name (the head is named "head")."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "resources": {"searchengine_node_head": 1}, "include_dashboard": False},
    )
    nodes = {name: cluster.add_node(num_cpus=1, resources={f"searchengine_node_{name}": 1}) for name in ("a", "b")}
    ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
    cluster.wait_for_nodes()
    yield cluster, nodes
    ray.shutdown()
    cluster.shutdown()


def corpus(count: int, seed: int = 0) -> list[Any]:
    """`count` documents of random words from the tiny model's vocabulary, each with an id and a language."""
    from searchengine.indexer.tables.documents import Document

    chooser = random.Random(seed)
    return [
        Document(
            " ".join(chooser.choice(WORDS) for _ in range(chooser.randint(3, 14))),
            metadata={"lang": "en" if position % 3 else "fr"},
            external_id=f"doc-{position}",
        )
        for position in range(count)
    ]


def one_index(path: Path, documents: list[Any], encoder: Any) -> Path:  # noqa: ANN401
    """One ordinary index of `documents` (Flat, whole documents), the reference a cluster must equal."""
    from searchengine.indexer.commit.index_directory import IndexDirectory

    from searchengine.engine.indexing import IndexSettings, build_index, document_chunks

    settings = IndexSettings(index_type="Flat", passages=False)
    build_index(IndexDirectory(path), document_chunks(documents), encoder, settings, total=len(documents))
    return path


def counted_writes(prefix: str) -> list[list[dict]]:
    """Writes (records: id and text) that one index's add counts apart: new ids, the same text again (updated), a
    new text (replaced), one id twice in one write (superseded)."""
    return [
        [{"id": f"{prefix}-{n}", "text": f"a {word} rocket over the moon"} for n, word in enumerate(("red", "blue"))],
        [{"id": f"{prefix}-0", "text": "a red rocket over the moon"}, {"id": f"{prefix}-2", "text": "a cold sea"}],
        [{"id": f"{prefix}-1", "text": "a green rocket under the sea"}],
        [{"id": f"{prefix}-3", "text": "the first of two"}, {"id": f"{prefix}-3", "text": "the second of two"}],
    ]


COUNTS = [(2, 2, 0, 0, 0), (2, 1, 1, 0, 0), (1, 1, 0, 1, 0), (2, 1, 0, 0, 1)]
"""What one index's add reports for each of `counted_writes`: documents, added, updated, replaced, superseded."""
