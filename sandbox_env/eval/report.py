"""Renders an eval directory as a self-contained HTML report, a Markdown summary and trajectory pages."""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import BaseModel

from .records import EPISODES_FILE, EpisodeRecord, StepRecord, latest
from .stats import MeanCI, RateCI
from .summary import DIFFICULTIES, GroupStats, Summary, load_summary_inputs, summarize

REPORT_HTML = "report.html"
REPORT_MD = "report.md"
TRAJ_DIR = "trajectories"
PLOTS_DIR = "plots"
SECTIONS = (
    ("overview", "Overview"),
    ("success-task", "Success rate per task"),
    ("success-difficulty", "Success rate per difficulty"),
    ("scores", "Score distribution"),
    ("steps", "Steps to solve"),
    ("time", "Time per phase"),
    ("outcomes", "Outcome breakdown"),
    ("episodes", "Episodes"),
    ("provenance", "Provenance"),
    ("methods", "Methods"),
)

CSS = """
body{font:14px/1.45 -apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;margin:24px auto;
max-width:1180px;padding:0 16px;color:#1d1d1f;background:#fff}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #ddd;
padding-bottom:4px}h3{font-size:15px;margin:16px 0 6px}
nav a{margin-right:12px;font-size:13px}.muted{color:#666;font-size:12px}
table{border-collapse:collapse;margin:8px 0;font-size:12.5px}th,td{border:1px solid #ddd;padding:3px 7px;
text-align:left;vertical-align:top}th{background:#f4f4f6}td.num{text-align:right;font-variant-numeric:tabular-nums}
img{max-width:100%;border:1px solid #eee;margin:6px 0}
pre{background:#f6f8fa;border:1px solid #e3e3e3;padding:8px;overflow-x:auto;white-space:pre-wrap;
word-break:break-word;font-size:12px;margin:4px 0}
.s-verified{color:#1a7f37;font-weight:600}.s-rejected{color:#c62828}.s-budget_exhausted{color:#d46b08}
.s-infra_error{color:#8a7a00}.s-error{color:#000;font-weight:600}.s-unfinished{color:#666}
.step{border:1px solid #ddd;border-radius:6px;padding:8px 12px;margin:10px 0}
.step h3{margin:0 0 6px}.err{color:#c62828}.box{background:#fafafa;border:1px solid #ddd;border-radius:6px;
padding:8px 12px;margin:8px 0}
"""


class ReportResult(BaseModel):
    html: Path
    markdown: Path
    trajectories: int
    plots: list[str]


class ReportError(RuntimeError):
    """The directory holds nothing to report."""


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "x"


def trajectory_file(r: EpisodeRecord) -> str:
    return f"{slug(r.agent)}__{slug(r.task)}__seed{r.seed}.html"


def e(x: object) -> str:
    return html.escape("" if x is None else str(x))


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


# --------------------------------------------------------------------------- tables (shared by HTML/MD)
Row = list[str]


def overview_rows(s: Summary) -> tuple[Row, list[Row]]:
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


def group_rows(s: Summary, by: str) -> tuple[Row, list[Row]]:
    head = [by, "agent", "n", "success rate [95% CI]", "mean score [95% CI]", "mean steps",
            "steps to solve (median)", "mean wall s", "outcomes"]
    rows = []
    keys: list[str] = []
    for a in s.agents.values():
        for k in (a.per_task if by == "task" else a.per_difficulty):
            if k not in keys:
                keys.append(k)
    if by == "difficulty":
        keys = [d for d in DIFFICULTIES if d in keys] + [k for k in keys if k not in DIFFICULTIES]
    for k in keys:
        for a in s.agents.values():
            g: GroupStats | None = (a.per_task if by == "task" else a.per_difficulty).get(k)
            if g is None:
                continue
            name = f"{k} ({s.task_difficulty.get(k, '?')})" if by == "task" else k
            rows.append([name, a.label, str(g.n), fmt_rate(g.success), fmt_mean(g.score),
                         fmt_num(g.steps_mean), fmt_num(g.steps_to_solve_median),
                         fmt_num(g.wall_time_mean_s, 2), fmt_outcomes(g.outcomes)])
    return head, rows


def phase_rows(s: Summary) -> tuple[Row, list[Row]]:
    head = ["agent", "task", "reset s", "agent s", "env s", "verification s", "total s", "env by action (s)"]
    rows = []
    for a in s.agents.values():
        for t, g in [("all", a.overall), *a.per_task.items()]:
            p = g.phases
            rows.append([a.label, t, fmt_num(p.reset_s, 3), fmt_num(p.agent_s, 3), fmt_num(p.env_s, 3),
                         fmt_num(p.verification_s, 3), fmt_num(p.total_s, 3),
                         ", ".join(f"{k} {v:.3f}" for k, v in p.by_action.items()) or "-"])
    return head, rows


def outcome_rows(s: Summary) -> tuple[Row, list[Row]]:
    classes = ["verified", "rejected", "budget_exhausted", "unfinished", "infra_error", "error"]
    head = ["agent", "task", *classes, "verdict outcomes"]
    rows = []
    for a in s.agents.values():
        for t, g in [("all", a.overall), *a.per_task.items()]:
            rows.append([a.label, t, *[str(g.outcomes.get(c, 0)) for c in classes],
                         fmt_outcomes(g.verdict_outcomes)])
    return head, rows


def episode_rows(records: list[EpisodeRecord]) -> tuple[Row, list[Row]]:
    head = ["agent", "task", "seed", "status", "outcome", "verdict", "score", "steps", "wall s", "trajectory"]
    rows = []
    for r in records:
        rows.append([r.agent, r.task, str(r.seed), r.status, r.outcome, r.verdict_outcome or "-",
                     "excluded" if r.score is None else f"{r.score:.3f}", str(r.steps),
                     f"{r.timings.total_s:.2f}", f"{TRAJ_DIR}/{trajectory_file(r)}"])
    return head, rows


def html_table(head: Row, rows: list[Row], num: Iterable[int] = (), link_col: int | None = None,
               cls_col: int | None = None) -> str:
    numeric = set(num)
    out = ["<table><thead><tr>", *[f"<th>{e(h)}</th>" for h in head], "</tr></thead><tbody>"]
    for row in rows:
        out.append("<tr>")
        for i, cell in enumerate(row):
            attrs = ' class="num"' if i in numeric else ""
            if i == link_col:
                out.append(f"<td><a href='{e(cell)}'>view</a></td>")
            elif i == cls_col:
                out.append(f'<td class="s-{e(cell)}">{e(cell)}</td>')
            else:
                out.append(f"<td{attrs}>{e(cell)}</td>")
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def md_table(head: Row, rows: list[Row], link_col: int | None = None) -> str:
    def cell(i: int, c: str) -> str:
        c = c.replace("|", "\\|")
        return f"[view]({c})" if i == link_col else c

    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell(i, c) for i, c in enumerate(r)) + " |" for r in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------- trajectory pages
def _action_html(s: StepRecord) -> str:
    a = s.action
    kind = s.action_type
    if kind == "edit_file":
        return (f"<div>file <code>{e(a.get('filename'))}</code></div><div class='muted'>old_str</div>"
                f"<pre>{e(a.get('old_str'))}</pre><div class='muted'>new_str</div>"
                f"<pre>{e(a.get('new_str'))}</pre>")
    if kind == "execute_bash":
        return f"<pre>$ {e(a.get('command'))}</pre>"
    if kind == "submit_fix":
        return f"<div class='muted'>explanation</div><pre>{e(a.get('explanation'))}</pre>"
    if kind in ("read_file", "view_git_diff"):
        return f"<div>file <code>{e(a.get('filename') or '(all)')}</code></div>"
    return f"<pre>{e(json.dumps(a, indent=1))}</pre>"


def trajectory_html(r: EpisodeRecord) -> str:
    title = f"{r.agent} · {r.task} · seed {r.seed}"
    score = "excluded (not scored)" if r.score is None else f"{r.score:.3f}"
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>"
             f"<style>{CSS}</style></head><body>",
             f"<p><a href='../{REPORT_HTML}#episodes'>&larr; back to the report</a></p>",
             f"<h1>{e(title)}</h1>",
             f"<p class='muted'>task version {e(r.task_version)} · {e(r.difficulty)} · budget "
             f"{r.max_steps} steps · mode {e(r.mode)} · model {e(r.model or '-')} · record "
             f"{e(r.record_id)}</p>",
             "<h2 id='result'>Result</h2><div class='box'>",
             f"<div>status <b>{e(r.status)}</b> · outcome "
             f"<span class='s-{e(r.outcome)}'>{e(r.outcome)}</span> · score <b>{e(score)}</b>"
             f" · steps {r.steps} · infra errors {r.infra_errors}"
             f" · explanation score {e(r.explanation_score)}</div>"]
    if r.verdict:
        v = r.verdict
        parts.append(f"<div>verdict: <b>{'PASSED' if v.passed else 'FAILED'}</b> ({e(v.outcome)}, "
                     f"{e(v.source)})</div><ul>" + "".join(f"<li>{e(x)}</li>" for x in v.reasons) + "</ul>")
    if r.error:
        parts.append(f"<div class='err'>error:</div><pre>{e(r.error)}</pre>")
    if r.replay:
        rp = r.replay
        parts.append(f"<div>replay of {e(rp.source)}: {'matches' if rp.matches else 'DIFFERS'}</div>"
                     + "".join(f"<div class='err'>{e(d)}</div>" for d in rp.differences))
    parts.append("</div>")
    t = r.timings
    parts.append("<h2 id='timings'>Timings</h2>" + html_table(
        ["reset s", "agent s", "env s", "verification s", "total s", "env by action"],
        [[f"{t.reset_s:.3f}", f"{t.agent_s:.3f}", f"{t.env_s:.3f}", f"{t.verification_s:.3f}",
          f"{t.total_s:.3f}", ", ".join(f"{k} {v:.3f}" for k, v in t.by_action.items()) or "-"]]))
    if r.initial_observation:
        o = r.initial_observation
        files = ", ".join(f"{k} ({v} chars)" for k, v in o.files.items())
        parts.append("<h2 id='reset'>Reset</h2><div class='step'>"
                     f"<div class='muted'>files: {e(files)}</div><pre>{e(o.terminal_output)}</pre></div>")
    parts.append(f"<h2 id='steps'>Steps ({len(r.trajectory)} actions sent)</h2>")
    for s in r.trajectory:
        o = s.observation
        head = f"Action {s.index} · {e(s.action_type)}"
        if o is not None:
            head += (f" · step {o.step_number}/{r.max_steps} · reward {s.reward:+.3f} · {e(o.system_status)}"
                     f" · run {e(o.run_status)}")
        head += f" · {s.duration_s:.3f} s"
        parts.append(f"<div class='step' id='step-{s.index}'><h3>{head}</h3>{_action_html(s)}")
        if s.refused:
            parts.append("<div class='err'>refused by the environment (no step):</div>"
                         f"<pre>{e(s.refused)}</pre>")
        if o is not None:
            if o.last_action_error:
                parts.append(f"<div class='err'>error: {e(o.last_action_error)}</div>")
            cut = (f" (of {o.output_chars} chars, head and tail kept)"
                   if o.output_chars > len(o.terminal_output) else "")
            parts.append(f"<div class='muted'>output{cut}</div><pre>{e(o.terminal_output)}</pre>")
            if o.files:
                parts.append(f"<div class='muted'>files in this observation: "
                             f"{e(', '.join(f'{k} ({v} chars)' for k, v in o.files.items()))}</div>")
            if o.hint:
                parts.append(f"<div class='muted'>hint: {e(o.hint)}</div>")
            if o.verdict:
                word = "PASSED" if o.verdict.passed else "FAILED"
                parts.append(f"<div>verdict {word} ({e(o.verdict.outcome)})</div>")
        parts.append("</div>")
    p = r.provenance
    parts.append("<h2 id='provenance'>Provenance</h2>" + html_table(
        ["package", "python", "host", "platform", "mode", "judge", "image", "torch"],
        [[p.package_version, p.python, p.host, p.platform, p.mode, p.judge, p.image or "-",
          f"{p.torch or '-'} ({p.torch_source or '-'})"]]))
    if p.traces:
        parts.append("<div class='muted'>replayed recordings made in: " + e("; ".join(
            f"{x.source} image {x.image or '-'} torch {x.torch} python {x.python} on {x.host}"
            for x in p.traces))
            + "</div>")
    if r.agent_info:
        info = json.dumps(r.agent_info, indent=1, default=str)
        parts.append(f"<h2 id='agent'>Agent</h2><pre>{e(info)}</pre>")
    parts.append("</body></html>")
    return "".join(parts)


# --------------------------------------------------------------------------- the report
def _provenance_rows(records: list[EpisodeRecord]) -> tuple[Row, list[Row]]:
    head = ["agent", "mode", "package", "python", "host", "judge", "image", "torch", "episodes"]
    seen: dict[tuple[str, ...], int] = {}
    for r in records:
        p = r.provenance
        key = (r.agent, p.mode, p.package_version, p.python, p.host, p.judge, p.image or "-",
               f"{p.torch or '-'} ({p.torch_source or '-'})")
        seen[key] = seen.get(key, 0) + 1
    return head, [[*k, str(n)] for k, n in seen.items()]


def build_report(out: Path, title: str | None = None) -> ReportResult:
    """Write DIR/report.html (self-contained), DIR/report.md, DIR/plots/*.png, DIR/trajectories/*.html."""
    try:
        from . import plots
    except ImportError as exc:
        raise ReportError(f"the report needs matplotlib: pip install 'sandbox-env[eval]' ({exc})") from None
    all_records, runs, bad = load_summary_inputs(out)
    if not all_records:
        raise ReportError(f"{out / EPISODES_FILE}: no episode records to report")
    summary = summarize(all_records, runs, str(out), bad)
    records = sorted(latest(all_records).values(), key=lambda r: (r.agent, r.task, r.seed))
    agents = list(summary.agents)
    tasks: list[str] = []
    for a in summary.agents.values():
        tasks += [t for t in a.tasks if t not in tasks]
    title = title or f"sandbox-env evaluation: {', '.join(agents)}"

    figures: dict[str, bytes] = {
        "success_per_task": plots.success_bars(summary, "task"),
        "success_per_difficulty": plots.success_bars(summary, "difficulty"),
        "score_distribution": plots.score_distribution(records, agents, tasks),
        "steps_to_solve": plots.steps_to_solve(records, agents, tasks),
        "time_per_phase": plots.time_per_phase(records, agents, tasks),
        "outcome_breakdown": plots.outcome_breakdown(records, agents, tasks),
    }
    (out / PLOTS_DIR).mkdir(exist_ok=True)
    for name, png in figures.items():
        (out / PLOTS_DIR / f"{name}.png").write_bytes(png)

    def img(name: str) -> str:
        data = base64.b64encode(figures[name]).decode()
        return f"<img alt='{e(name)}' src='data:image/png;base64,{data}'>"

    traj = out / TRAJ_DIR
    traj.mkdir(exist_ok=True)
    for old in traj.glob("*.html"):
        old.unlink()
    for r in records:
        (traj / trajectory_file(r)).write_text(trajectory_html(r), encoding="utf-8")

    tables: dict[str, tuple[Row, list[Row]]] = {
        "overview": overview_rows(summary), "task": group_rows(summary, "task"),
        "difficulty": group_rows(summary, "difficulty"), "phases": phase_rows(summary),
        "outcomes": outcome_rows(summary), "episodes": episode_rows(records),
        "provenance": _provenance_rows(records),
    }
    html_doc = _html(summary, title, tables, img)
    md_doc = _markdown(summary, title, tables, list(figures))
    (out / REPORT_HTML).write_text(html_doc, encoding="utf-8")
    (out / REPORT_MD).write_text(md_doc, encoding="utf-8")
    return ReportResult(html=out / REPORT_HTML, markdown=out / REPORT_MD, trajectories=len(records),
                        plots=[f"{PLOTS_DIR}/{n}.png" for n in figures])


def _replay_lines(s: Summary) -> list[str]:
    return [f"{a.label}: {a.replay.checked} replayed episodes, {a.replay.mismatches} differ from their "
            "recording"
            + (f" ({', '.join(a.replay.mismatched)})" if a.replay.mismatched else "")
            for a in s.agents.values() if a.replay]


def _meta_lines(s: Summary) -> list[str]:
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


def _html(s: Summary, title: str, tables: dict[str, tuple[Row, list[Row]]], img: Callable[[str], str]) -> str:
    nav = "".join(f"<a href='#{i}'>{e(t)}</a>" for i, t in SECTIONS)
    sec = {i: t for i, t in SECTIONS}
    body = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>"
            f"<style>{CSS}</style></head><body><h1>{e(title)}</h1><nav>{nav}</nav>"]
    body.append(f"<section id='overview'><h2>{sec['overview']}</h2>"
                + "".join(f"<p class='muted'>{e(x)}</p>" for x in _meta_lines(s))
                + html_table(*tables["overview"])
                + "".join(f"<p><b>Replay:</b> {e(x)}</p>" for x in _replay_lines(s)) + "</section>")
    body.append(f"<section id='success-task'><h2>{sec['success-task']}</h2>{img('success_per_task')}"
                f"{html_table(*tables['task'])}</section>")
    body.append(f"<section id='success-difficulty'><h2>{sec['success-difficulty']}</h2>"
                f"{img('success_per_difficulty')}{html_table(*tables['difficulty'])}</section>")
    body.append(f"<section id='scores'><h2>{sec['scores']}</h2>{img('score_distribution')}</section>")
    body.append(f"<section id='steps'><h2>{sec['steps']}</h2>{img('steps_to_solve')}</section>")
    body.append(f"<section id='time'><h2>{sec['time']}</h2>{img('time_per_phase')}"
                f"{html_table(*tables['phases'])}</section>")
    body.append(f"<section id='outcomes'><h2>{sec['outcomes']}</h2>{img('outcome_breakdown')}"
                f"{html_table(*tables['outcomes'])}</section>")
    head, rows = tables["episodes"]
    body.append(f"<section id='episodes'><h2>{sec['episodes']}</h2><p class='muted'>{len(rows)} episodes "
                "(newest record per agent, task and seed); each links to its trajectory.</p>"
                + html_table(head, rows, num=(2, 6, 7, 8), link_col=9, cls_col=4) + "</section>")
    body.append(f"<section id='provenance'><h2>{sec['provenance']}</h2>{html_table(*tables['provenance'])}"
                + "".join(f"<p class='muted'>task {e(t)}: versions {e(', '.join(v))}</p>"
                          for t, v in s.task_versions.items()) + "</section>")
    body.append(f"<section id='methods'><h2>{sec['methods']}</h2><ul>"
                + "".join(f"<li><b>{e(k)}</b>: {e(v)}</li>" for k, v in s.methods.items())
                + "</ul></section>")
    body.append("</body></html>")
    return "".join(body)


def _markdown(s: Summary, title: str, tables: dict[str, tuple[Row, list[Row]]], figures: list[str]) -> str:
    sec = {i: t for i, t in SECTIONS}
    fig = {n: f"![{n}]({PLOTS_DIR}/{n}.png)" for n in figures}
    parts = [f"# {title}", "", *[f"{x}  " for x in _meta_lines(s)], "",
             f"## {sec['overview']}", "", md_table(*tables["overview"]), ""]
    parts += [f"Replay: {x}" for x in _replay_lines(s)]
    parts += [f"## {sec['success-task']}", "", fig["success_per_task"], "", md_table(*tables["task"]), "",
              f"## {sec['success-difficulty']}", "", fig["success_per_difficulty"], "",
              md_table(*tables["difficulty"]), "",
              f"## {sec['scores']}", "", fig["score_distribution"], "",
              f"## {sec['steps']}", "", fig["steps_to_solve"], "",
              f"## {sec['time']}", "", fig["time_per_phase"], "", md_table(*tables["phases"]), "",
              f"## {sec['outcomes']}", "", fig["outcome_breakdown"], "", md_table(*tables["outcomes"]), "",
              f"## {sec['episodes']}", "", md_table(*tables["episodes"], link_col=9), "",
              f"## {sec['provenance']}", "", md_table(*tables["provenance"]), "",
              f"## {sec['methods']}", "", *[f"- **{k}**: {v}" for k, v in s.methods.items()], ""]
    return "\n".join(parts)
