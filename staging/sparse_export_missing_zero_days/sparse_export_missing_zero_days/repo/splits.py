"""Train / holdout split by calendar day: the last ``holdout_days`` of the window are held out."""

from __future__ import annotations

from features import Examples
from timeline import Timeline


def split_by_day(examples: Examples, timeline: Timeline, holdout_days: int) -> tuple[Examples, Examples]:
    cutoff = timeline.holdout_start(holdout_days)
    return examples.select(examples.day < cutoff), examples.select(examples.day >= cutoff)
