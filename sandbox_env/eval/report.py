"""`sandbox-env report DIR`: writes the plots, the trajectory pages, report.html and report.md.

The content is in report_tables.py, its renderings in report_html.py and report_markdown.py.
"""

from __future__ import annotations

import base64
from pathlib import Path
from types import ModuleType

from pydantic import BaseModel

from .records import EPISODES_FILE, EpisodeRecord, latest
from .report_html import e, report_html, trajectory_html
from .report_markdown import report_markdown
from .report_tables import (
    PLOTS_DIR,
    REPORT_HTML,
    REPORT_MD,
    SECTIONS,
    TRAJ_DIR,
    mock_notice,
    report_tables,
    trajectory_file,
)
from .summary import Summary, load_summary_inputs, summarize

__all__ = ["SECTIONS", "ReportError", "ReportResult", "build_report", "trajectory_file"]


class ReportResult(BaseModel):
    html: Path
    markdown: Path
    trajectories: int
    plots: list[str]


class ReportError(RuntimeError):
    """The directory holds nothing to report."""


def build_report(out: Path, title: str | None = None) -> ReportResult:
    """Write DIR/report.html (self-contained), DIR/report.md, DIR/plots/*.png, DIR/trajectories/*.html."""
    from . import plots  # matplotlib (the eval extra): a ModuleNotFoundError names it
    all_records, runs, bad = load_summary_inputs(out)
    if not all_records:
        raise ReportError(f"{out / EPISODES_FILE}: no episode records to report")
    summary = summarize(all_records, runs, str(out), bad)
    records = sorted(latest(all_records).values(), key=lambda r: (r.agent, r.task, r.seed))
    title = title or f"sandbox-env evaluation: {', '.join(summary.agents)}"
    figures = _write_plots(plots, out, summary, records)
    _write_trajectories(out, records)

    def img(name: str) -> str:
        data = base64.b64encode(figures[name]).decode()
        return f"<img alt='{e(name)}' src='data:image/png;base64,{data}'>"

    tables = report_tables(summary, records)
    notice = mock_notice(summary, records)
    (out / REPORT_HTML).write_text(report_html(summary, title, tables, img, notice), encoding="utf-8")
    (out / REPORT_MD).write_text(report_markdown(summary, title, tables, list(figures), notice),
                                 encoding="utf-8")
    return ReportResult(html=out / REPORT_HTML, markdown=out / REPORT_MD, trajectories=len(records),
                        plots=[f"{PLOTS_DIR}/{n}.png" for n in figures])


def _write_plots(plots: ModuleType, out: Path, summary: Summary,
                 records: list[EpisodeRecord]) -> dict[str, bytes]:
    """Render every figure (``plots``: eval/plots.py), write DIR/plots/NAME.png, return the PNGs by name."""
    agents = list(summary.agents)  # this order gives each agent its colour in every figure
    tasks: list[str] = []
    for a in summary.agents.values():
        tasks += [t for t in a.tasks if t not in tasks]
    figures: dict[str, bytes] = {
        "success_per_task": plots.success_bars(summary, "task"),
        "success_per_difficulty": plots.success_bars(summary, "difficulty"),
        "score_distribution": plots.score_distribution(records, agents, tasks),
        "steps_to_solve": plots.steps_to_solve(records, agents, tasks),
        "time_per_phase": plots.time_per_phase(records, agents, tasks),
        "outcome_breakdown": plots.outcome_breakdown(records, agents, tasks),
    }
    if summary.pairs:
        figures["paired_differences"] = plots.paired_differences(summary.pairs)
    (out / PLOTS_DIR).mkdir(exist_ok=True)
    for name, png in figures.items():
        (out / PLOTS_DIR / f"{name}.png").write_bytes(png)
    return figures


def _write_trajectories(out: Path, records: list[EpisodeRecord]) -> None:
    """DIR/trajectories/*.html: one page per episode, older pages removed."""
    traj = out / TRAJ_DIR
    traj.mkdir(exist_ok=True)
    for old in traj.glob("*.html"):
        old.unlink()
    for r in records:
        (traj / trajectory_file(r)).write_text(trajectory_html(r), encoding="utf-8")

