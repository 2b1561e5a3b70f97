"""The report as HTML: the self-contained report page (inline CSS and plots) and one page per trajectory."""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterable

from .records import EpisodeRecord, StepRecord
from .report_tables import REPORT_HTML, SECTIONS, Row, Table, meta_lines, pair_note, replay_lines
from .summary import Summary

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
.notice{background:#fff8e1;border:1px solid #e0b400;border-radius:6px;padding:8px 12px;margin:10px 0}
.step h3{margin:0 0 6px}.err{color:#c62828}.box{background:#fafafa;border:1px solid #ddd;border-radius:6px;
padding:8px 12px;margin:8px 0}
"""


def e(x: object) -> str:
    return html.escape("" if x is None else str(x))


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


# --------------------------------------------------------------------------- trajectory pages
def trajectory_html(r: EpisodeRecord) -> str:
    title = f"{r.agent} · {r.task} · seed {r.seed}"
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>"
             f"<style>{CSS}</style></head><body>",
             f"<p><a href='../{REPORT_HTML}#episodes'>&larr; back to the report</a></p>",
             f"<h1>{e(title)}</h1>",
             f"<p class='muted'>task version {e(r.task_version)} · {e(r.difficulty)} · budget "
             f"{r.max_steps} steps · mode {e(r.mode)} · model {e(r.model or '-')} · record "
             f"{e(r.record_id)}</p>",
             *_result_html(r)]
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
    parts += [_step_html(s, r.max_steps) for s in r.trajectory]
    parts += _provenance_html(r)
    if r.agent_info:
        info = json.dumps(r.agent_info, indent=1, default=str)
        parts.append(f"<h2 id='agent'>Agent</h2><pre>{e(info)}</pre>")
    parts.append("</body></html>")
    return "".join(parts)


def _result_html(r: EpisodeRecord) -> list[str]:
    score = "excluded (not scored)" if r.score is None else f"{r.score:.3f}"
    parts = ["<h2 id='result'>Result</h2><div class='box'>",
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
    return parts


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


def _step_html(s: StepRecord, max_steps: int) -> str:
    o = s.observation
    head = f"Action {s.index} · {e(s.action_type)}"
    if o is not None:
        head += (f" · step {o.step_number}/{max_steps} · reward {s.reward:+.3f} · {e(o.system_status)}"
                 f" · run {e(o.run_status)}")
    head += f" · {s.duration_s:.3f} s"
    parts = [f"<div class='step' id='step-{s.index}'><h3>{head}</h3>{_action_html(s)}"]
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
    return "".join(parts)


def _provenance_html(r: EpisodeRecord) -> list[str]:
    p = r.provenance
    parts = ["<h2 id='provenance'>Provenance</h2>" + html_table(
        ["package", "python", "host", "platform", "mode", "judge", "image", "torch"],
        [[p.package_version, p.python, p.host, p.platform, p.mode, p.judge, p.image or "-",
          f"{p.torch or '-'} ({p.torch_source or '-'})"]])]
    if p.traces:
        parts.append("<div class='muted'>replayed recordings made in: " + e("; ".join(
            f"{x.source} image {x.image or '-'} torch {x.torch} python {x.python} on {x.host}"
            for x in p.traces))
            + "</div>")
    return parts


# --------------------------------------------------------------------------- the report page
def report_html(s: Summary, title: str, tables: dict[str, Table], img: Callable[[str], str],
                notice: str = "") -> str:
    nav = "".join(f"<a href='#{i}'>{e(t)}</a>" for i, t in SECTIONS)
    sec = dict(SECTIONS)
    body = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>"
            f"<style>{CSS}</style></head><body><h1>{e(title)}</h1><nav>{nav}</nav>"]
    if notice:
        body.append(f"<p class='notice' id='mock-notice'><b>{e(notice)}</b></p>")
    body.append(f"<section id='overview'><h2>{sec['overview']}</h2>"
                + "".join(f"<p class='muted'>{e(x)}</p>" for x in meta_lines(s))
                + html_table(*tables["overview"])
                + "".join(f"<p><b>Replay:</b> {e(x)}</p>" for x in replay_lines(s)) + "</section>")
    body.append(f"<section id='pairs'><h2>{sec['pairs']}</h2><p class='muted'>{e(pair_note(s))}</p>"
                f"{img('paired_differences') if s.pairs else ''}{html_table(*tables['pairs'])}</section>")
    body.append(f"<section id='success-task'><h2>{sec['success-task']}</h2>{img('success_per_task')}"
                f"{html_table(*tables['task'])}</section>")
    body.append(f"<section id='success-difficulty'><h2>{sec['success-difficulty']}</h2>"
                f"{img('success_per_difficulty')}{html_table(*tables['difficulty'])}</section>")
    body.append(f"<section id='success-variants'><h2>{sec['success-variants']}</h2>"
                "<p class='muted'>A family's variants counted together; train and test variants "
                "apart (the test split is never used to tune checks or classifiers).</p>"
                f"{html_table(*tables['family'])}{html_table(*tables['split'])}</section>")
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
