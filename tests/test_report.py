"""`sandbox-env report`: a self-contained HTML report (inline PNG plots, no network), a Markdown
summary and readable trajectory pages, rendered for real in headless Chromium."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sandbox_env.eval import OracleAgent, RandomAgent, StepAgent
from sandbox_env.eval.policies import Policy
from sandbox_env.eval.records import EPISODES_FILE, read_records
from sandbox_env.eval.report import SECTIONS, ReportError, build_report, trajectory_file
from sandbox_env.models import Observation
from sandbox_env.suite.tasks import TaskRegistry, TaskSpec

from .test_eval import CrashesOn, FlakySandbox, run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HOSTILE = "<script>alert(1)</script> <img src=https://evil.example/x.png> & done."


class Hostile(StepAgent):
    """Submits at once with an explanation full of markup: the report must show it as text."""

    label = "hostile<b>"

    def policy(self, task: TaskSpec, seed: int) -> Policy:
        class P:
            def act(self, obs: Observation, refused: str | None) -> dict[str, Any] | None:
                return {"action_type": "submit_fix", "explanation": HOSTILE}

        return P()


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory, real_tasks: TaskRegistry) -> Path:
    """Two agents compared over every real task, plus agent errors, infra exclusions and markup."""
    out = tmp_path_factory.mktemp("report")
    run(out, real_tasks, OracleAgent(), seeds=[0, 1], concurrency=4)
    run(out, real_tasks, RandomAgent(), seeds=[0, 1, 2], concurrency=4)
    run(out, real_tasks, CrashesOn("oom_graph_leak"), seeds=[0], concurrency=4,
        sandbox=FlakySandbox("compile_graph_break", "verify-infra"))
    run(out, real_tasks, Hostile(), seeds=[0], tasks=["oom_graph_leak"])
    build_report(out, title="Report under test")
    return out


def test_report_is_self_contained_with_every_section(report_dir: Path) -> None:
    doc = (report_dir / "report.html").read_text()
    for anchor, title in SECTIONS:
        assert f"<section id='{anchor}'><h2>{title}</h2>" in doc
    images = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", doc)
    assert len(images) == 7
    assert all(base64.b64decode(i).startswith(PNG_MAGIC) and len(i) > 5000 for i in images)
    assert "<script" not in doc.lower() and "<link" not in doc.lower() and "@import" not in doc
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", doc), "a network fetch"
    assert not re.search(r"url\(", doc)
    # agents side by side: every task has a row per agent, exclusions and errors are visible
    for label in ("oracle", "random", "crashy", "hostile&lt;b&gt;"):
        assert f"<td>{label}</td>" in doc
    assert "infra_error" in doc and "agent_error" in doc and "excluded" in doc
    assert "Wilson score interval" in doc and "Student t interval" in doc
    for name in ("success_per_task", "success_per_difficulty", "score_distribution", "steps_to_solve",
                 "time_per_phase", "outcome_breakdown", "paired_differences"):
        assert (report_dir / "plots" / f"{name}.png").read_bytes().startswith(PNG_MAGIC)


def test_links_resolve_and_trajectories_are_readable(report_dir: Path) -> None:
    doc = (report_dir / "report.html").read_text()
    ids = set(re.findall(r"id='([^']+)'", doc))
    hrefs = re.findall(r"href='([^']+)'", doc)
    recs = {trajectory_file(r): r for r in read_records(report_dir / EPISODES_FILE).records}
    traj_links = [h for h in hrefs if h.startswith("trajectories/")]
    pages = list((report_dir / "trajectories").iterdir())
    assert len(traj_links) == len(set(traj_links)) == len(recs) == len(pages)
    for h in hrefs:
        if h.startswith("#"):
            assert h[1:] in ids, h
        else:
            assert (report_dir / h).is_file(), h
    for name, r in recs.items():
        page = (report_dir / "trajectories" / name).read_text()
        back = re.findall(r"href='([^']+)'", page)
        assert back == ["../report.html#episodes"] and "episodes" in ids
        assert page.count("<div class='step' id='step-") == len(r.trajectory)
        assert f"outcome <span class='s-{r.outcome}'>{r.outcome}</span>" in page
        assert not re.search(r"<(script|img|iframe|link|object)\b", page, re.IGNORECASE)
        if r.agent == "oracle":
            assert "verdict: <b>PASSED</b>" in page and "$ python train.py" in page
            assert "old_str" in page and "new_str" in page and "explanation" in page
        if r.status == "infra_error":
            assert "excluded (not scored)" in page and "checker container died" in page
    hostile = (report_dir / "trajectories" / "hostile-b__oom_graph_leak__seed0.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in hostile


def test_markdown_summary(report_dir: Path, real_tasks: TaskRegistry) -> None:
    md = (report_dir / "report.md").read_text()
    episodes = 2 * len(list(real_tasks))  # the oracle's seeds 0-1 on every task
    assert md.startswith("# Report under test")
    for _, title in SECTIONS:
        assert f"\n## {title}\n" in md
    for link in re.findall(r"\]\(([^)]+)\)", md):
        assert (report_dir / link).is_file(), link
    assert re.search(rf"^\| oracle \| - \| mock \| {episodes} \| {episodes} \| 100\.0% \[", md, re.MULTILINE)
    assert "| crashy | oom_graph_leak |" in md


def test_report_of_an_empty_directory_says_so(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="no episode records"):
        build_report(tmp_path)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           *args], capture_output=True, text=True, timeout=90, check=False)


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed")
def test_report_renders_in_headless_chromium(report_dir: Path, tmp_path: Path) -> None:
    from matplotlib.image import imread

    pages = [report_dir / "report.html",
             report_dir / "trajectories" / "oracle__oom_graph_leak__seed0.html"]
    for page in pages:
        shot = tmp_path / f"{page.stem}.png"
        p = chromium(f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri())
        assert p.returncode == 0 and shot.exists(), p.stderr[-2000:]
        assert shot.stat().st_size > 20_000
        pixels = imread(shot)
        assert pixels.shape[:2] == (2000, 1280)
        assert float(pixels[..., :3].std()) > 0.05, "a blank page"
        dark = (pixels[..., :3].mean(axis=2) < 0.5).mean()
        assert 0.002 < dark < 0.6, dark  # text and plots, not an empty or black page
    dom = chromium("--dump-dom", pages[0].as_uri())
    assert dom.returncode == 0
    headings = re.findall(r"<h2>([^<]+)</h2>", dom.stdout)
    assert headings == [t for _, t in SECTIONS]
    assert dom.stdout.count('src="data:image/png;base64,') == 7
    assert 'id="mock-notice"' in dom.stdout and "not fresh executions" in dom.stdout


def test_paired_differences_between_agents(report_dir: Path, real_tasks: TaskRegistry) -> None:
    """Every two agents on the episodes both played: mean difference with a 95% interval."""
    from sandbox_env.eval.summary import load_summary_inputs, summarize

    s = summarize(*load_summary_inputs(report_dir)[:2])
    pair = next(p for p in s.pairs if {p.first, p.second} == {"oracle", "random"})
    common = 2 * len(list(real_tasks))  # oracle seeds 0-1, random seeds 0-2: seeds 0-1 of every task
    assert pair.n_pairs == common
    sign = 1 if pair.first == "oracle" else -1
    d = pair.score_diff
    assert d.mean is not None and d.lo is not None and d.hi is not None
    assert sign * d.mean > 0.9 and d.lo <= d.mean <= d.hi and (d.lo > 0 if sign > 0 else d.hi < 0)
    assert pair.success_diff.mean == sign * 1.0
    assert (pair.first_better, pair.second_better)[0 if sign > 0 else 1] == common
    labels = list(s.agents)
    assert len(s.pairs) == len(labels) * (len(labels) - 1) // 2
    doc = (report_dir / "report.html").read_text()
    assert "<section id='pairs'><h2>Paired differences</h2>" in doc and "[+0." in doc
    written = json.loads((report_dir / "summary.json").read_text())  # the eval run wrote it
    assert [(p["first"], p["second"]) for p in written["pairs"]] == [(p.first, p.second) for p in s.pairs]


def test_paired_difference_interval_is_student_t_on_the_differences() -> None:
    from sandbox_env.eval.stats import paired_difference_ci

    c = paired_difference_ci([1.0, 1.0, 1.0, 0.5], [0.0, 1.0, 0.0, 0.5])  # differences 1, 0, 1, 0
    assert c.n == 4 and c.mean == pytest.approx(0.5)
    half = 3.182446 * 0.57735027 / 2  # t(0.975, 3) * sd / sqrt(4)
    assert c.lo == pytest.approx(0.5 - half, abs=1e-5) and c.hi == pytest.approx(min(1.0, 0.5 + half))
    one = paired_difference_ci([0.9], [0.1])
    assert one.mean == pytest.approx(0.8) and one.lo is None
    with pytest.raises(ValueError):
        paired_difference_ci([1.0], [])


def test_each_rejected_episode_names_its_failing_reason(report_dir: Path) -> None:
    from sandbox_env.eval.report_tables import episode_rows

    recs = sorted(read_records(report_dir / EPISODES_FILE).records, key=lambda r: r.record_id)
    head, rows = episode_rows(recs)
    col = head.index("why rejected (first reason of the failing verdict)")
    rejected = [(r, row) for r, row in zip(recs, rows, strict=True) if r.outcome == "rejected"]
    assert rejected
    for r, row in rejected:
        assert row[col] != "-" and "[mock]" not in row[col] and len(row[col]) <= 240
        assert r.verdict is not None and any(row[col].split(" (")[0] in x for x in r.verdict.reasons)
    assert all(row[col] == "-" for r, row in zip(recs, rows, strict=True) if r.outcome != "rejected")
    assert "why rejected" in (report_dir / "report.md").read_text()


def test_mock_mode_results_carry_a_notice(report_dir: Path) -> None:
    doc = (report_dir / "report.html").read_text()
    assert doc.index("id='mock-notice'") < doc.index("<section id='overview'>")
    assert "replays of runs recorded in real sandboxes" in doc
    md = (report_dir / "report.md").read_text()
    assert md.splitlines()[2].startswith("> **Mock mode:")


def test_each_agent_keeps_one_colour_in_every_figure() -> None:
    """Boxes, whiskers, medians and dots of an agent are drawn in that agent's colour (the median
    line was once left at matplotlib's default, the second agent's colour)."""
    from matplotlib.colors import to_hex
    from matplotlib.figure import Figure

    from sandbox_env.eval import plots

    agents = ["first", "second", "third"]
    colours = plots.agent_colours(agents)
    assert len(set(colours.values())) == 3 and plots.agent_colours(agents) == colours
    ax = Figure().subplots()
    data = {(a, t): [0.1 * i + 0.01 * j for j in range(5)] for i, a in enumerate(agents) for t in ("x", "y")}
    plots._grouped_boxes(ax, data, agents, ["x", "y"])
    medians = sorted((line.get_xdata()[0], to_hex(line.get_color())) for line in ax.lines
                     if line.get_linewidth() == pytest.approx(2.2))
    assert len(medians) == 6
    # positions: for each group, agents left to right
    by_group = [medians[i:i + 3] for i in (0, 3)]
    for group in by_group:
        assert [c for _, c in group] == [colours[a] for a in agents]
    assert {to_hex(p.get_facecolor()[:3]) for p in ax.patches} == set(colours.values())
