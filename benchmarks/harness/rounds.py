"""Variants measured in rounds: the order they take turns in, and their per-call latency percentiles.

Variants alternate within each round, in an order that rotates from round to round, so that load from other
processes and a warm cache fall on every variant alike rather than on whichever runs first."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def rotation(names: Sequence[str], round_number: int) -> list[str]:
    """`names` in the order round `round_number` runs them: each round starts one name later."""
    shift = round_number % len(names)
    return [*names[shift:], *names[:shift]]


def percentile_ms(seconds: Sequence[float], percent: float, digits: int = 2) -> float:
    """The `percent` percentile of per-call times in seconds, in milliseconds rounded to `digits`."""
    return round(float(np.percentile(seconds, percent)) * 1000, digits)
