"""The report's content as plain rows and lines, shared by its HTML and Markdown renderings."""

from __future__ import annotations

import re

from .records import EpisodeRecord
from .stats import MeanCI, RateCI
from .summary import DIFFICULTIES, AgentSummary, GroupStats, Summary

REPORT_HTML = "report.html"
REPORT_MD = "report.md"
TRAJ_DIR = "trajectories"
PLOTS_DIR = "plots"
SECTIONS = (
    ("overview", "Overview"),
    ("pairs", "Paired differences"),
    ("success-task", "Success rate per task"),
    ("success-difficulty", "Success rate per difficulty"),
    ("success-variants", "Success rate per family and split"),
    ("scores", "Score distribution"),
    ("steps", "Steps to solve"),
    ("time", "Time per phase"),
    ("outcomes", "Outcome breakdown"),
    ("episodes", "Episodes"),
    ("provenance", "Provenance"),
    ("methods", "Methods"),
)

Row = list[str]
Table = tuple[Row, list[Row]]  # head, rows


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "x"


def trajectory_file(r: EpisodeRecord) -> str:
    return f"{slug(r.agent)}__{slug(r.task)}__seed{r.seed}.html"


def fmt_rate(c: RateCI) -> str:
    if c.rate is None:
        return "n/a"
    return f"{c.rate:.1%} [{c.lo:.1%}, {c.hi:.1%}] ({c.k}/{c.n})"


def fmt_mean(c: MeanCI, nd: int = 3) -> str:
    if c.mean is None:
        return "n/a"
    ci = f" [{c.lo:.{nd}f}, {c.hi:.{nd}f}]" if c.lo is not None and c.hi is not None else ""
    return f"{c.mean:.{nd}f}{ci}"


def fmt_num(x: float | None, nd: int = 1, unit: str = "") -> str:
    return "n/a" if x is None else f"{x:.{nd}f}{unit}"


def fmt_outcomes(d: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items()) or "none"


def report_tables(s: Summary, records: list[EpisodeRecord]) -> dict[str, Table]:
    """Every table of the report, by name."""
    return {
        "overview": overview_rows(s), "task": group_rows(s, "task"),
        "difficulty": group_rows(s, "difficulty"), "family": group_rows(s, "family"),
        "split": group_rows(s, "split"), "phases": phase_rows(s),
        "outcomes": outcome_rows(s), "episodes": episode_rows(records),
        "provenance": provenance_rows(records), "pairs": pair_rows(s),
    }


def overview_rows(s: Summary) -> Table:
    head = ["agent", "model", "mode", "episodes", "scored", "success rate [95% CI]", "mean score [95% CI]",
            "mean steps", "median steps to solve", "infra excluded", "env errors excluded", "agent errors"]
    rows = []
    for a in s.agents.values():
        o = a.overall
        rows.append([a.label, a.model or "-", ", ".join(a.modes), str(o.n), str(o.n_scored),
                     fmt_rate(o.success), fmt_mean(o.score), fmt_num(o.steps_mean),
                     fmt_num(o.steps_to_solve_median), str(o.n_infra_excluded),
                     str(o.n_env_error_excluded), str(o.n_agent_error)])
    return head, rows


def _groups(a: AgentSummary, by: str) -> dict[str, GroupStats]:
    return {"task": a.per_task, "difficulty": a.per_difficulty, "family": a.per_family,
            "split": a.per_split}[by]


def group_rows(s: Summary, by: str) -> Table:
    """Per task, difficulty, family (a family's variants together) or split (train / test)."""
    head = [by, "agent", "n", "success rate [95% CI]", "mean score [95% CI]", "mean steps",
            "steps to solve (median)", "mean wall s", "outcomes"]
    rows = []
    keys: list[str] = []
    for a in s.agents.values():
        for k in _groups(a, by):
            if k not in keys:
                keys.append(k)
    if by == "difficulty":
        keys = [d for d in DIFFICULTIES if d in keys] + [k for k in keys if k not in DIFFICULTIES]
    for k in keys:
        for a in s.agents.values():
            g: GroupStats | None = _groups(a, by).get(k)
            if g is None:
                continue
            name = f"{k} ({s.task_difficulty.get(k, '?')})" if by == "task" else k
            rows.append([name, a.label, str(g.n), fmt_rate(g.success), fmt_mean(g.score),
                         fmt_num(g.steps_mean), fmt_num(g.steps_to_solve_median),
                         fmt_num(g.wall_time_mean_s, 2), fmt_outcomes(g.outcomes)])
    return head, rows


def phase_rows(s: Summary) -> Table:
    head = ["agent", "task", "reset s", "agent s", "env s", "verification s", "total s", "env by action (s)"]
    rows = []
    for a in s.agents.values():
        for t, g in [("all", a.overall), *a.per_task.items()]:
            p = g.phases
            rows.append([a.label, t, fmt_num(p.reset_s, 3), fmt_num(p.agent_s, 3), fmt_num(p.env_s, 3),
                         fmt_num(p.verification_s, 3), fmt_num(p.total_s, 3),
                         ", ".join(f"{k} {v:.3f}" for k, v in p.by_action.items()) or "-"])
    return head, rows


def outcome_rows(s: Summary) -> Table:
    classes = ["verified", "rejected", "budget_exhausted", "unfinished", "infra_error", "error"]
    head = ["agent", "task", *classes, "verdict outcomes"]
    rows = []
    for a in s.agents.values():
        for t, g in [("all", a.overall), *a.per_task.items()]:
            rows.append([a.label, t, *[str(g.outcomes.get(c, 0)) for c in classes],
                         fmt_outcomes(g.verdict_outcomes)])
    return head, rows


REASON_CHARS = 240
KNOBS = re.compile(r"\((?!error)(?=[^()]*=)[^()]{60,}\)")


def rejection_reason(r: EpisodeRecord) -> str:
    """A rejected episode: the first reason its failing verdict gives, first line, capped; else ''."""
    if r.outcome != "rejected" or r.verdict is None or r.verdict.passed:
        return ""
    for reason in r.verdict.reasons:
        if reason.strip() and not reason.startswith("[mock]"):
            first = reason.strip().splitlines()[0].removesuffix("; last output:")
            first = KNOBS.sub("(…)", first)  # a long knob list hides what failed
            return first if len(first) <= REASON_CHARS else first[:REASON_CHARS - 1] + "…"
    return f"verdict {r.verdict.outcome} (no reason given)"


def episode_rows(records: list[EpisodeRecord]) -> Table:
    head = ["agent", "task", "seed", "status", "outcome", "verdict", "score", "steps", "wall s", "trajectory",
            "why rejected (first reason of the failing verdict)"]
    rows = []
    for r in records:
        rows.append([r.agent, r.task, str(r.seed), r.status, r.outcome, r.verdict_outcome or "-",
                     "excluded" if r.score is None else f"{r.score:.3f}", str(r.steps),
                     f"{r.timings.total_s:.2f}", f"{TRAJ_DIR}/{trajectory_file(r)}",
                     rejection_reason(r) or "-"])
    return head, rows


def fmt_diff(c: MeanCI) -> str:
    if c.mean is None:
        return "n/a"
    ci = f" [{c.lo:+.3f}, {c.hi:+.3f}]" if c.lo is not None and c.hi is not None else " (n < 2: no interval)"
    return f"{c.mean:+.3f}{ci}"


def pair_rows(s: Summary) -> Table:
    """Every two agents on the episodes both played: paired differences with 95% intervals."""
    head = ["first", "second", "paired episodes", "score difference [95% CI]",
            "success difference [95% CI]", "first better / second better / ties"]
    rows = [[p.first, p.second, str(p.n_pairs), fmt_diff(p.score_diff), fmt_diff(p.success_diff),
             f"{p.first_better} / {p.second_better} / {p.ties}"] for p in s.pairs]
    return head, rows


def pair_note(s: Summary) -> str:
    if not s.pairs:
        return "One agent only: run a second agent into the same directory to compare them."
    return ("Differences are first − second over the episodes both agents played (same task and seed, "
            "both scored); an interval that excludes 0 is a difference at the 95% level.")


def mock_notice(s: Summary, records: list[EpisodeRecord]) -> str:
    """Said at the top when episodes ran in mock mode: their runs and verdicts are replays."""
    mock = [r for r in records if r.mode == "mock"]
    if not mock:
        return ""
    unsure = sum(r.status == "unsure" for r in mock)
    how: dict[str, int] = {}
    for r in mock:
        p = getattr(r.verdict, "provenance", "") if r.verdict else ""
        if p:
            how[p] = how.get(p, 0) + 1
    said = ", ".join(f"{n} {p}" for p, n in sorted(how.items()))
    return (f"Mock mode: {len(mock)} of {len(records)} episodes ran in mock mode. Their command outputs "
            "and verdicts are replays of runs recorded in real sandboxes (or inferred from them for "
            "states never recorded), not fresh executions"
            + (f" (verdicts: {said})" if said else "")
            + (f"; {unsure} unsure verdicts are excluded from every statistic" if unsure else "")
            + ". Confirm results that matter in docker mode (--mode docker).")


def provenance_rows(records: list[EpisodeRecord]) -> Table:
    head = ["agent", "mode", "package", "python", "host", "judge", "image", "torch", "episodes"]
    seen: dict[tuple[str, ...], int] = {}
    for r in records:
        p = r.provenance
        key = (r.agent, p.mode, p.package_version, p.python, p.host, p.judge, p.image or "-",
               f"{p.torch or '-'} ({p.torch_source or '-'})")
        seen[key] = seen.get(key, 0) + 1
    return head, [[*k, str(n)] for k, n in seen.items()]


def replay_lines(s: Summary) -> list[str]:
    return [f"{a.label}: {a.replay.checked} replayed episodes, {a.replay.mismatches} differ from their "
            "recording"
            + (f" ({', '.join(a.replay.mismatched)})" if a.replay.mismatched else "")
            for a in s.agents.values() if a.replay]


def meta_lines(s: Summary) -> list[str]:
    lines = [f"Directory: {s.directory} · generated {s.generated_at} · sandbox-env {s.package_version}",
             f"{s.n_records} records ({s.n_superseded} superseded by a retry)"
             + (f" · unreadable lines skipped: {s.unreadable_lines}" if s.unreadable_lines else "")]
    for run in s.runs[-5:]:
        lines.append(f"Run {run.started_at}: {run.label} ({run.agent}) mode={run.mode} "
                     f"concurrency={run.concurrency}/{run.concurrency_requested} planned={run.planned} "
                     f"skipped={run.skipped} ran={run.ran} "
                     f"wall={run.wall_s:.1f}s" + (" INTERRUPTED" if run.interrupted else ""))
    if s.interrupted:
        lines.append("The latest run was interrupted: the results are partial.")
    return lines
