"""Out-of-sample scores of the checks and of the mock, on patches written by another hand.

Each task may keep held-out batches, one folder each (``heldout/`` is batch 1, ``heldout2/``
batch 2, ...: a new batch is written whenever a check or classifier changed after someone read
the previous one): patches written by someone who never read the task's
checks, classifier or labelled patches (``labels.toml``: file, label correct | wrong | cheat,
expect pass | fail, description). A batch written on a family's variants keeps one folder per
variant, ``<batch>/<N>/``, with patches against that variant's repo (``batch_dir``). They are
never used to tune a check or a classifier; this module only scores them, two ways:

- the real checks (a real backend's verdict) against the author's intent: a correct fix must
  pass, a wrong fix or a cheat must not;
- the mock (the frozen classifier and recordings: these states are never recorded) against
  the real verdict, counting the mock's confident verdicts apart from its unsure ones, and
  against the author's intent (the only reference when no real backend ran: ``--mode none``).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..models import Verdict
from ..suite.tasks import TaskSpec
from ..workspace import Workspace, apply_patch

Label = Literal["correct", "wrong", "cheat"]


class HeldoutPatch(BaseModel):
    """One entry of ``heldout/labels.toml``."""

    model_config = ConfigDict(extra="forbid")
    file: str
    label: Label
    expect: Literal["pass", "fail"]
    description: str = ""


class HeldoutRow(BaseModel):
    """What the real checks and the mock concluded about one held-out patch."""

    task: str
    batch: str = "heldout"
    file: str
    label: Label
    expect_pass: bool
    real_passed: bool | None = None
    real_outcome: str | None = None
    real_seconds: float | None = None
    mock_passed: bool | None = None
    mock_source: str | None = None
    mock_unsure: bool = False
    reasons: list[str] = Field(default_factory=list)

    @property
    def real_as_intended(self) -> bool | None:
        return None if self.real_passed is None else self.real_passed == self.expect_pass


def batch_dir(task: TaskSpec, batch: str = "heldout") -> Path:
    """Where a batch's patches for ``task`` live: ``<family>/<batch>/`` for variant 0, and
    ``<family>/<batch>/<N>/`` for variant N (patches written against that variant's repo)."""
    if task.variant_index:
        return task.base_task.root / batch / str(task.variant_index)
    return task.root / batch


def batch_variants(task: TaskSpec, batch: str = "heldout") -> list[int]:
    """The variants of ``task``'s family a batch has patches for (``<batch>/<N>/labels.toml``)."""
    root = task.base_task.root / batch
    if not root.is_dir():
        return []
    return sorted(int(d.name) for d in root.iterdir()
                  if d.name.isdigit() and (d / "labels.toml").is_file())


def heldout_patches(task: TaskSpec, batch: str = "heldout") -> list[HeldoutPatch]:
    labels = batch_dir(task, batch) / "labels.toml"
    if not labels.exists():
        return []
    return [HeldoutPatch.model_validate(p) for p in tomllib.loads(labels.read_text()).get("patch", [])]


def heldout_workspace(task: TaskSpec, patch: HeldoutPatch, batch: str = "heldout") -> Workspace:
    return Workspace(apply_patch(task.repo_files(), (batch_dir(task, batch) / patch.file).read_text()))


def is_unsure(verdict: Verdict) -> bool:
    """A mock verdict that says it cannot tell (provenance ``unsure``)."""
    return verdict.provenance == "unsure"


Judge = Callable[[Workspace, TaskSpec], Verdict]


def judge_mock(row: HeldoutRow, task: TaskSpec, verify_mock: Judge) -> None:
    """(Re)judge one row with the mock."""
    patch = next(p for p in heldout_patches(task, row.batch) if p.file == row.file)
    v = verify_mock(heldout_workspace(task, patch, row.batch), task)
    row.mock_passed, row.mock_source, row.mock_unsure = v.passed, v.source, is_unsure(v)


def score(tasks: Iterable[TaskSpec], verify_real: Callable[[Workspace, TaskSpec], Verdict] | None,
          verify_mock: Callable[[Workspace, TaskSpec], Verdict], *, workers: int = 1,
          log: Callable[[str], None] = print, batch: str = "heldout",
          labels: Iterable[Label] | None = None) -> list[HeldoutRow]:
    """Judge every patch of one held-out batch (or those with ``labels``) with the mock and
    (when given) a real backend."""
    wanted = set(labels) if labels else {"correct", "wrong", "cheat"}
    todo = [(t, p) for t in tasks for p in heldout_patches(t, batch) if p.label in wanted]

    def one(item: tuple[TaskSpec, HeldoutPatch]) -> HeldoutRow:
        task, patch = item
        row = HeldoutRow(task=task.id, batch=batch, file=patch.file, label=patch.label,
                         expect_pass=patch.expect == "pass")
        judge_mock(row, task, verify_mock)
        if verify_real is not None:
            real = verify_real(heldout_workspace(task, patch, batch), task)
            row.real_passed, row.real_outcome = real.passed, real.outcome.value
            row.real_seconds, row.reasons = round(real.duration_s, 1), real.reasons[:3]
        log(f"{task.id} {patch.file}: real={row.real_passed} ({row.real_outcome}) mock={row.mock_passed} "
            f"({row.mock_source})")
        return row

    with ThreadPoolExecutor(max(1, workers)) as pool:
        return list(pool.map(one, todo))


def _rate(n: int, d: int) -> str:
    return f"{n}/{d} ({n / d:.0%})" if d else "-"


def _mock_table(rows: list[HeldoutRow], tasks: list[str],
                truth: Callable[[HeldoutRow], bool | None]) -> list[str]:
    """Per task and in all: the mock's unsure count and its agreement with ``truth``."""
    lines = ["| task | patches | unsure | agree among confident |", "|---|---:|---:|---:|"]
    for t in [*tasks, None]:
        mine = [r for r in rows if t is None or r.task == t]
        sure = [r for r in mine if not r.mock_unsure]
        agree = sum(r.mock_passed == truth(r) for r in sure)
        lines.append(f"| {t or '**all**'} | {len(mine)} | {len(mine) - len(sure)} | "
                     f"{_rate(agree, len(sure))} |")
    return lines


def report(rows: list[HeldoutRow], backend: str) -> str:
    """The Markdown section: checks vs intent, mock vs real, mock vs intent, per task and in all."""
    tasks = sorted({r.task for r in rows})
    real = [r for r in rows if r.real_passed is not None]
    batches = ", ".join(f"`task_repos/*/{b}/`" for b in sorted({r.batch for r in rows}))
    lines = [f"## Held-out patches ({date.today().isoformat()}, real backend: {backend})", "",
             "Patches written by a different hand that never read the checks, the classifiers or the "
             f"labelled patches ({batches}, never used for tuning). Produced by "
             "`sandbox-env heldout`.", ""]
    if real:
        lines += ["Real checks against the author's intent (a correct fix must pass; a wrong fix or a "
                  "cheat must not):", "",
                  "| task | correct passed | wrong rejected | cheats rejected |", "|---|---:|---:|---:|"]
        for t in [*tasks, None]:
            mine = [r for r in real if t is None or r.task == t]
            cells = []
            for label in ("correct", "wrong", "cheat"):
                sub = [r for r in mine if r.label == label]
                cells.append(_rate(sum(bool(r.real_as_intended) for r in sub), len(sub)))
            lines.append(f"| {t or '**all**'} | " + " | ".join(cells) + " |")
        lines += ["", "Mock against the real verdict (the classifier frozen; these states were never "
                  "recorded):", "", *_mock_table(real, tasks, lambda r: r.real_passed), ""]
    lines += ["Mock against the author's intent (every patch, with or without a real verdict):", "",
              *_mock_table(rows, tasks, lambda r: r.expect_pass)]
    bad_real = [r for r in real if not r.real_as_intended]
    bad_mock = [r for r in real if not r.mock_unsure and r.mock_passed != r.real_passed]
    off_intent = [r for r in rows if r.real_passed is None and not r.mock_unsure
                  and r.mock_passed != r.expect_pass]
    if real:
        lines += ["", "Real verdicts against intent, the misses:" if bad_real
                  else "The real checks met every intent."]
        lines += [f"- {r.task} `{r.file}` ({r.label}): passed={r.real_passed} ({r.real_outcome}); "
                  + "; ".join(x.splitlines()[0][:160] for x in r.reasons[:2]) for r in bad_real]
        lines += ["", "Mock disagreements:" if bad_mock else "No confident mock disagreement."]
        lines += [f"- {r.task} `{r.file}` ({r.label}): real passed={r.real_passed}, "
                  f"mock passed={r.mock_passed} via {r.mock_source}" for r in bad_mock]
    if off_intent:
        lines += ["", "Mock against intent where no real verdict was measured, the misses:"]
        lines += [f"- {r.task} `{r.file}` ({r.label}): mock passed={r.mock_passed} via {r.mock_source}"
                  for r in off_intent]
    return "\n".join(lines) + "\n"


def save(rows: list[HeldoutRow], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([r.model_dump() for r in rows], indent=1) + "\n")


def load(path: Path) -> list[HeldoutRow]:
    return [HeldoutRow.model_validate(r) for r in json.loads(path.read_text())]
