"""What an eval shows on the terminal: live progress while it runs, the summary lines after."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable

from .records import EpisodeRecord
from .summary import Summary

Emit = Callable[[str], None]


class LineProgress:
    """No TTY (or --no-progress): one line per finished episode."""

    def __init__(self, total: int, emit: Emit) -> None:
        self.total, self.emit, self.done = total, emit, 0

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def update(self, counts: Counter[str], running: int, record: EpisodeRecord | None = None) -> None:
        if record is None:
            return
        self.done += 1
        score = "excluded" if record.score is None else f"{record.score:.3f}"
        self.emit(f"[eval] {self.done}/{self.total} {record.agent} {record.task} seed={record.seed} "
                  f"status={record.status} outcome={record.outcome} score={score} steps={record.steps} "
                  f"{record.timings.total_s:.1f}s"
                  + (f" error={record.error[:160]!r}" if record.error else ""))


class RichProgress:
    """A live rich display: done / running / failed / infra and the ETA."""

    def __init__(self, total: int, title: str) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(bar_width=24),
            MofNCompleteColumn(),
            TextColumn("running [cyan]{task.fields[running]}[/] failed [red]{task.fields[failed]}[/] "
                       "infra [yellow]{task.fields[infra]}[/] verified [green]{task.fields[verified]}[/]"),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            transient=False,
        )
        self.task = self.progress.add_task(title, total=total, running=0, failed=0, infra=0, verified=0)

    def __enter__(self) -> RichProgress:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def update(self, counts: Counter[str], running: int, record: EpisodeRecord | None = None) -> None:
        self.progress.update(self.task, advance=1 if record is not None else 0, running=running,
                             failed=counts["agent_error"] + counts["env_error"], infra=counts["infra_error"],
                             verified=counts["verified"])


def make_progress(live: bool | None, total: int, title: str, emit: Emit) -> LineProgress | RichProgress:
    """The live display when ``live`` (None: when stdout is a TTY) and rich is installed, else lines."""
    if sys.stdout.isatty() if live is None else live:
        try:
            return RichProgress(total, title)
        except ImportError:
            emit("[eval] rich is not installed (pip install 'sandbox-env[eval]'): plain progress lines")
    return LineProgress(total, emit)


def summary_lines(summary: Summary) -> list[str]:
    """A few lines per agent for the terminal."""
    out = []
    for a in summary.agents.values():
        o = a.overall
        rate = "n/a" if o.success.rate is None else (f"{o.success.rate:.1%} [{o.success.lo:.1%}, "
                                                     f"{o.success.hi:.1%}]")
        score = "n/a" if o.score.mean is None else f"{o.score.mean:.3f}" + (
            f" [{o.score.lo:.3f}, {o.score.hi:.3f}]" if o.score.lo is not None else "")
        out.append(f"[summary] {a.label}: episodes={o.n} scored={o.n_scored} success={rate} "
                   f"mean_score={score} infra_excluded={o.n_infra_excluded} "
                   f"env_error_excluded={o.n_env_error_excluded} unsure_excluded={o.n_unsure_excluded} "
                   f"agent_errors={o.n_agent_error}")
        for t, g in a.per_task.items():
            r = "n/a" if g.success.rate is None else f"{g.success.rate:.0%}"
            m = "n/a" if g.score.mean is None else f"{g.score.mean:.3f}"
            out.append(f"[summary]   {t}: success={r} ({g.success.k}/{g.success.n}) mean_score={m} "
                       f"outcomes={g.outcomes}")
        if a.replay:
            out.append(f"[summary]   replay: {a.replay.checked} checked, {a.replay.mismatches} mismatched")
    return out
