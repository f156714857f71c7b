"""tests/xdist_schedule.py names only units that exist: a test file moved or renamed, or a page that no longer runs
its commands, would leave its place in the longest-first order to nothing, and those tests would silently go back
to xdist's order (the long ones last)."""

from __future__ import annotations

from tests.docs_blocks import ROOT, all_blocks
from tests.xdist_schedule import LONGEST_FIRST, UNITS_OF_THEIR_OWN


def test_every_unit_named_longest_first_exists() -> None:
    (page_prefix,) = UNITS_OF_THEIR_OWN
    pages_that_run = {str(block.path.relative_to(ROOT)) for block in all_blocks() if block.action in ("run", "serve")}

    def exists(unit: str) -> bool:
        if unit.startswith(page_prefix):
            return unit.removeprefix(page_prefix).removesuffix("]") in pages_that_run
        return (ROOT / unit).is_file()

    missing = [unit for unit in LONGEST_FIRST if not exists(unit)]
    assert not missing, f"no such test file or page that runs, named in tests/xdist_schedule.py: {missing}"
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST), "a unit named twice in tests/xdist_schedule.py"
