"""How a method's dataclass field becomes an option of `searchengine train METHOD`: a field's default is the
option's default, and its metadata holds the help text, the bounds (`min`, `max`), a short flag, and the flag when
it is not the field name with dashes. Also the help texts several methods share."""

from __future__ import annotations

from dataclasses import MISSING, field
from typing import Any

SEED_HELP = "Random seed: the same seed and data give the same model."
TRUNCATE_HELP = "Truncate training texts to this many tokens."
SENTENCES_HELP = "Unlabelled sentences: .txt (one per line), .jsonl or .gz."
SCORED_PAIRS_HELP = "Scored pairs: score<TAB>sentence1<TAB>sentence2."
MAX_SCORE_HELP = "The largest score of the data's scale (STS-B: 5)."
IN_BATCH_HELP = "Sentences per batch (in-batch negatives)."


def option(
    default: Any = MISSING,
    *,
    help: str | None = None,  # noqa: A002 (the name typer and click give it)
    flag: str | None = None,
    short: str | None = None,
    min: float | None = None,  # noqa: A002
    max: float | None = None,  # noqa: A002
) -> Any:
    """A dataclass field that is also a command-line option; no default makes the option required.

    flag: the option's name when it is not `--field-name` (e.g. "--lr"), or "--on/--off" for a boolean switch."""
    metadata = {"help": help, "flag": flag, "short": short, "min": min, "max": max}
    return field(default=default, metadata={key: value for key, value in metadata.items() if value is not None})
