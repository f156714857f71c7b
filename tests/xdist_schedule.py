"""How pytest-xdist hands the suite to its workers under `-n auto --dist loadfile` (pyproject.toml): whole test
files, as loadfile does (each file's module fixtures are built once), but the longest first, so that the short
files fill in around them. xdist's own order is by number of tests, which sends the one-test end-to-end benchmark
files last, where one of them can keep a worker busy alone while the other has nothing left. And each page of
tests/test_docs.py that runs its commands is a unit of its own, so that its long pages (the README, docs/files.md,
docs/integrations.md) run on both workers at once instead of one after another on one. tests/conftest.py installs
it for `--dist loadfile`; every test still runs once, with the fixtures and assertions it has."""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController

UNITS_OF_THEIR_OWN = ("tests/test_docs.py::test_blocks_that_run[",)
"""Tests whose node id starts so are each a unit of their own; every other test goes with its file."""

LONGEST_FIRST = (
    "tests/test_docs.py::test_blocks_that_run[README.md]",
    "tests/searchengine/engine/test_ray_embedding.py",
    "tests/searchengine/cluster/test_cluster_index.py",
    "tests/benchmarks/scale/test_cluster_check.py",
    "tests/test_docs.py::test_blocks_that_run[docs/files.md]",
    "tests/benchmarks/scale/test_search_speed.py",
    "tests/training/methods/test_bi_encoder_methods.py",
    "tests/indexer/vectors/test_template.py",
    "tests/test_docs.py::test_blocks_that_run[docs/integrations.md]",
    "tests/benchmarks/scale/test_cluster_fanout.py",
    "tests/searchengine/encoding/test_openvino_backend.py",
    "tests/searchengine/server/cluster/test_ray_serve.py",
    "tests/searchengine/cli/test_cluster_build_command.py",
    "tests/searchengine/cluster/test_cluster_build.py",
    "tests/benchmarks/serving/test_cold_query.py",
    "tests/benchmarks/encoding/test_encoding_speed.py",
    "tests/benchmarks/storage/test_memory_check.py",
    "tests/searchengine/encoding/test_cross_encoder.py",
    "tests/benchmarks/encoding/test_bulk_precision.py",
    "tests/searchengine/cli/test_cli.py",
    "tests/benchmarks/storage/test_write_cost.py",
    "tests/benchmarks/serving/test_serve_load.py",
    "tests/benchmarks/serving/test_integrations.py",
    "tests/benchmarks/storage/test_segment_effects.py",
    "tests/training/methods/test_pseudo_queries.py",
    "tests/searchengine/analysis/test_paraphrase_mining.py",
    "tests/benchmarks/encoding/test_encoding_limit.py",
    "tests/benchmarks/files/test_file_search.py",
    "tests/searchengine/integrations/test_mcp_server.py",
    "tests/benchmarks/storage/test_merge_after_build.py",
    "tests/hostile/test_hostile_inputs.py",
    "tests/searchengine/engine/test_engine.py",
    "tests/searchengine/server/test_collections.py",
    "tests/benchmarks/retrieval/test_retrieval_benchmarks.py",
    "tests/test_docs.py::test_blocks_that_run[docs/mining.md]",
    "tests/searchengine/server/test_server_crash.py",
    "tests/test_docs.py::test_blocks_that_run[docs/clustering.md]",
    "tests/benchmarks/files/test_file_sync.py",
    "tests/training/test_adapt.py",
    "tests/test_docs.py::test_blocks_that_run[docs/training.md]",
    "tests/searchengine/cli/test_files.py",
)
"""The units that took 15 s or more in a whole run (2 loaded cores; each unit's tests' setup, call and teardown
summed), longest first; the README's page leads, as the longest in earlier runs. The units not named follow, those
with most tests first (xdist's own order)."""
PLACES = {unit: place for place, unit in enumerate(LONGEST_FIRST)}


class LongestFirstScheduling(LoadFileScheduling):
    """loadfile, with the tests of UNITS_OF_THEIR_OWN split out and the units handed out in LONGEST_FIRST's order."""

    def _split_scope(self, nodeid: str) -> str:
        if nodeid.startswith(UNITS_OF_THEIR_OWN):
            return nodeid
        return super()._split_scope(nodeid)

    def _assign_work_unit(self, node: WorkerController) -> None:
        """Give `node` the first unit left in LONGEST_FIRST's order (xdist gives the first unit of its queue)."""
        unit = min(self.workqueue, key=self._place)
        self.workqueue.move_to_end(unit, last=False)
        super()._assign_work_unit(node)

    def _place(self, unit: str) -> tuple[int, int]:
        return PLACES.get(unit, len(PLACES)), -len(self.workqueue[unit])
