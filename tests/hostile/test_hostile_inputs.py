"""Every bad input of tests/hostile/cases.py ends in one `Error:` line, exit 1, and the index unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.cases import all_cases
from tests.hostile.harness import Case, base_of, build_base, can_mount, run_case

CASES = all_cases(disk=can_mount())


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> dict[str, Path]:
    return build_base(tmp_path_factory.mktemp("hostile-bases"), tiny_model)


def test_there_are_at_least_a_hundred_cases() -> None:
    assert len(CASES) >= 100


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input_gets_one_line_and_changes_nothing(
    case: Case, bases: dict[str, Path], tiny_model: Path, tmp_path: Path
) -> None:
    outcome = run_case(case, bases[base_of(case)], tiny_model, tmp_path)
    assert outcome.passed, f"{outcome.problem}: {outcome.output.strip()[-800:]}"
