"""The report's figures (matplotlib, Agg, no pyplot state), each rendered to PNG bytes."""

from __future__ import annotations

import io
import random
from collections.abc import Sequence

from matplotlib.figure import Figure

from .records import OUTCOME_CLASSES, EpisodeRecord
from .summary import GroupStats, PairedComparison, Summary

OUTCOME_COLOURS = {"verified": "#2ca02c", "rejected": "#d62728", "budget_exhausted": "#ff7f0e",
                   "unfinished": "#7f7f7f", "infra_error": "#bcbd22", "error": "#1f1f1f"}
PHASES = ("reset", "agent", "read_file", "edit_file", "execute_bash", "view_git_diff", "verification")
PHASE_COLOURS = ("#c7c7c7", "#1f77b4", "#aec7e8", "#98df8a", "#ff9896", "#c5b0d5", "#d62728")
DPI = 100


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    return buf.getvalue()


AGENT_PALETTE = ("#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22",
                 "#2ca02c", "#d62728")


def agent_colours(agents: Sequence[str]) -> dict[str, str]:
    """One colour per agent label, the same in every figure (agents in the summary's order)."""
    return {a: AGENT_PALETTE[i % len(AGENT_PALETTE)] for i, a in enumerate(agents)}


def _colour_ticks(labels: object, rows: Sequence[tuple[str, str]], colours: dict[str, str]) -> None:
    """Colour each ``agent · task`` tick label with its agent's colour."""
    for label, (agent, _) in zip(labels, rows, strict=True):  # type: ignore[call-overload]
        label.set_color(colours.get(agent, "#222"))


def _empty(ax: object, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#555")  # type: ignore[attr-defined]
    ax.set_xticks([])  # type: ignore[attr-defined]
    ax.set_yticks([])  # type: ignore[attr-defined]


def success_bars(summary: Summary, by: str) -> bytes:
    """Success rate per task (by="task") or difficulty (by="difficulty"), agents side by side,
    with Wilson 95% intervals as error bars."""
    agents = list(summary.agents.values())
    colours = agent_colours(list(summary.agents))
    groups: list[str] = []
    for a in agents:
        for g in (a.per_task if by == "task" else a.per_difficulty):
            if g not in groups:
                groups.append(g)
    fig = Figure(figsize=(max(6.0, 1.6 * len(groups) * max(1, len(agents)) ** 0.5 + 2), 3.6))
    ax = fig.subplots()
    if not groups:
        _empty(ax, "no episodes")
        return _png(fig)
    width = 0.8 / max(1, len(agents))
    for i, a in enumerate(agents):
        table: dict[str, GroupStats] = a.per_task if by == "task" else a.per_difficulty
        xs, ys, lo, hi, kn = [], [], [], [], []
        for j, g in enumerate(groups):
            st = table.get(g)
            if st is None or st.success.rate is None:
                continue
            xs.append(j - 0.4 + width * (i + 0.5))
            ys.append(st.success.rate)
            lo.append(st.success.rate - (st.success.lo or 0.0))
            hi.append((st.success.hi or 0.0) - st.success.rate)
            kn.append(f"{st.success.k}/{st.success.n}")
        ax.bar(xs, ys, width * 0.92, yerr=[lo, hi], capsize=3, color=colours[a.label], label=a.label)
        for x, text in zip(xs, kn, strict=True):
            ax.text(x, 0.015, text, ha="center", va="bottom", fontsize=7, color="#222",
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.75})
    tilt = by == "task"
    ax.set_xticks(range(len(groups)), groups, rotation=15 if tilt else 0, ha="right" if tilt else "center")
    ax.set_ylim(0, 1.08)
    ax.set_ylabel("success rate (Wilson 95% CI)")
    ax.set_title(f"Success rate per {by}")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper right", framealpha=0.8)
    return _png(fig)


def _grouped_boxes(ax: object, data: dict[tuple[str, str], list[float]], agents: Sequence[str],
                   groups: Sequence[str], jitter_seed: int = 0) -> None:
    """Box per (agent, group) in the agent's colour: face, edges, whiskers, caps and median line."""
    rng = random.Random(jitter_seed)
    colours = agent_colours(agents)
    width = 0.8 / max(1, len(agents))
    for i, a in enumerate(agents):
        pos, vals = [], []
        for j, g in enumerate(groups):
            v = data.get((a, g), [])
            if v:
                pos.append(j - 0.4 + width * (i + 0.5))
                vals.append(v)
        if not vals:
            continue
        colour = colours[a]
        line = {"color": colour, "linewidth": 1.2}
        ax.boxplot(vals, positions=pos, widths=width * 0.8, patch_artist=True,  # type: ignore[attr-defined]
                   showfliers=False, manage_ticks=False, whiskerprops=line, capprops=line,
                   medianprops={"color": colour, "linewidth": 2.2},
                   boxprops={"facecolor": colour, "edgecolor": colour, "alpha": 0.35})
        for p, v in zip(pos, vals, strict=True):
            xs = [p + rng.uniform(-width * 0.25, width * 0.25) for _ in v]
            ax.scatter(xs, v, s=10, color=colour, zorder=3,  # type: ignore[attr-defined]
                       label=a if p == pos[0] else None)
    ax.set_xticks(range(len(groups)), groups, rotation=15, ha="right")  # type: ignore[attr-defined]


def score_distribution(records: list[EpisodeRecord], agents: Sequence[str], tasks: Sequence[str]) -> bytes:
    fig = Figure(figsize=(max(6.0, 1.6 * len(tasks) + 2), 3.6))
    ax = fig.subplots()
    data: dict[tuple[str, str], list[float]] = {}
    for r in records:
        if r.scored and r.score is not None:
            data.setdefault((r.agent, r.task), []).append(r.score)
    if not data:
        _empty(ax, "no scored episodes")
        return _png(fig)
    _grouped_boxes(ax, data, agents, tasks)
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("episode score")
    ax.set_title("Score distribution per task (box: quartiles; dots: episodes)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper right", framealpha=0.8)
    return _png(fig)


def steps_to_solve(records: list[EpisodeRecord], agents: Sequence[str], tasks: Sequence[str]) -> bytes:
    fig = Figure(figsize=(max(6.0, 1.6 * len(tasks) + 2), 3.6))
    ax = fig.subplots()
    data: dict[tuple[str, str], list[float]] = {}
    for r in records:
        if r.scored and r.success:
            data.setdefault((r.agent, r.task), []).append(float(r.steps))
    if not data:
        _empty(ax, "no verified episodes: nothing was solved")
        return _png(fig)
    _grouped_boxes(ax, data, agents, tasks, jitter_seed=1)
    budgets = {r.task: r.max_steps for r in records}
    for j, t in enumerate(tasks):
        if t in budgets:
            ax.hlines(budgets[t], j - 0.45, j + 0.45, colors="#999", linestyles="dashed", linewidth=1)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("environment steps (verified episodes)")
    ax.set_title("Steps to solve (dashed: step budget)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper right", framealpha=0.8)
    return _png(fig)


def phase_means(records: list[EpisodeRecord]) -> dict[str, float]:
    """Mean seconds per phase; environment steps split by action, submit_fix = verification."""
    n = len(records)
    out = dict.fromkeys(PHASES, 0.0)
    if not n:
        return out
    for r in records:
        t = r.timings
        out["reset"] += t.reset_s / n
        out["agent"] += t.agent_s / n
        for a, s in t.by_action.items():
            key = "verification" if a == "submit_fix" else a
            if key in out:
                out[key] += s / n
    return out


def time_per_phase(records: list[EpisodeRecord], agents: Sequence[str], tasks: Sequence[str]) -> bytes:
    rows = [(a, t) for a in agents for t in tasks
            if any(r.agent == a and r.task == t and r.scored for r in records)]
    fig = Figure(figsize=(8.0, max(2.5, 0.38 * len(rows) + 1.6)), layout="constrained")
    ax = fig.subplots()
    if not rows:
        _empty(ax, "no scored episodes")
        return _png(fig)
    left = [0.0] * len(rows)
    means = [phase_means([r for r in records if r.agent == a and r.task == t and r.scored]) for a, t in rows]
    for phase, colour in zip(PHASES, PHASE_COLOURS, strict=True):
        widths = [m[phase] for m in means]
        ax.barh(range(len(rows)), widths, left=left, color=colour, label=phase)
        left = [x + w for x, w in zip(left, widths, strict=True)]
    ax.set_yticks(range(len(rows)), [f"{a} · {t}" for a, t in rows], fontsize=8)
    _colour_ticks(ax.get_yticklabels(), rows, agent_colours(agents))
    ax.invert_yaxis()
    ax.set_xlabel("mean seconds per episode")
    ax.set_title("Time per phase (agent = outside environment calls; verification = submit_fix)")
    fig.legend(fontsize=7, ncols=len(PHASES), loc="outside lower center", frameon=False)
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


def outcome_breakdown(records: list[EpisodeRecord], agents: Sequence[str], tasks: Sequence[str]) -> bytes:
    rows = [(a, t) for a in agents for t in tasks if any(r.agent == a and r.task == t for r in records)]
    fig = Figure(figsize=(8.0, max(2.5, 0.38 * len(rows) + 1.6)), layout="constrained")
    ax = fig.subplots()
    if not rows:
        _empty(ax, "no episodes")
        return _png(fig)
    left = [0.0] * len(rows)
    for oc in OUTCOME_CLASSES:
        widths = []
        for a, t in rows:
            mine = [r for r in records if r.agent == a and r.task == t]
            widths.append(sum(r.outcome == oc for r in mine) / len(mine))
        if any(widths):
            ax.barh(range(len(rows)), widths, left=left, color=OUTCOME_COLOURS[oc], label=oc)
        left = [x + w for x, w in zip(left, widths, strict=True)]
    ax.set_yticks(range(len(rows)), [f"{a} · {t}" for a, t in rows], fontsize=8)
    _colour_ticks(ax.get_yticklabels(), rows, agent_colours(agents))
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("fraction of episodes (excluded ones included)")
    ax.set_title("Outcome breakdown")
    fig.legend(fontsize=7, ncols=len(OUTCOME_CLASSES), loc="outside lower center", frameon=False)
    return _png(fig)


def paired_differences(pairs: Sequence[PairedComparison]) -> bytes:
    """Per pair of agents: mean paired difference in score and in success (first - second) over the
    episodes both played, with Student t 95% intervals; 0 marked."""
    rows = [p for p in pairs if p.n_pairs]
    fig = Figure(figsize=(8.0, max(2.4, 0.55 * len(rows) + 1.6)), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    if not rows:
        for ax in axes:
            _empty(ax, "no two agents played the same episodes")
        return _png(fig)
    labels = [f"{p.first} − {p.second} (n={p.n_pairs})" for p in rows]
    for ax, metric, title in ((axes[0], "score_diff", "score difference"),
                              (axes[1], "success_diff", "success-rate difference")):
        for y, p in enumerate(rows):
            c = getattr(p, metric)
            if c.mean is None:
                continue
            err = ([[c.mean - c.lo], [c.hi - c.mean]] if c.lo is not None and c.hi is not None else None)
            ax.errorbar([c.mean], [y], xerr=err, fmt="o", color="#333", capsize=4, markersize=6)
        ax.axvline(0.0, color="#999", linestyle="dashed", linewidth=1)
        ax.set_xlim(-1.05, 1.05)
        ax.set_xlabel(f"{title} (first − second, 95% CI)")
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(rows)), labels, fontsize=8)
    axes[0].invert_yaxis()
    fig.suptitle("Paired differences on the same episodes (task, seed)", fontsize=11)
    return _png(fig)
