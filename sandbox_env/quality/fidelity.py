"""Mock/real agreement, measured leave-one-out over every labelled workspace state.

The real verdict of a state is its Docker recording. The mock judges the same state with that
state's own recording hidden, so what is measured is the classifier's generalisation, not a
lookup. Writes a Markdown report.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel

from ..sandbox.mock import MockSandbox
from ..suite.tasks import TaskSpec
from ..suite.traces import load_traces, task_states
from ..workspace import Workspace


class StateAgreement(BaseModel):
    task: str
    state: str
    label: str  # correct | wrong | cheat | original | solution
    real_passed: bool
    mock_passed: bool
    mock_source: str
    mock_provenance: str = "inferred"

    @property
    def unsure(self) -> bool:
        return self.mock_provenance == "unsure"

    @property
    def agrees(self) -> bool:
        return not self.unsure and self.real_passed == self.mock_passed


def measure_task(task: TaskSpec) -> list[StateAgreement]:
    """Agreement of every recorded labelled state of ``task``, leave-one-out."""
    real = {t.state: t for t in load_traces(task) if t.provenance.source == "docker"}
    labels = {f"patch:{p.file}": p.label for p in task.patches}
    rows = []
    for state, _behaviour, files in task_states(task):
        if state not in real:
            continue
        mock = MockSandbox(exclude={f"{task.id}/{state}"})
        verdict = mock.verify(Workspace(files), task)
        rows.append(StateAgreement(task=task.id, state=state, label=labels.get(state, state),
                                   real_passed=real[state].verdict.passed,
                                   mock_passed=verdict.passed, mock_source=verdict.source,
                                   mock_provenance=verdict.provenance))
    return rows


def report(rows: Iterable[StateAgreement]) -> tuple[str, float]:
    """Markdown report and the agreement rate among confident verdicts (unsure counted apart)."""
    rows = list(rows)
    tasks = sorted({r.task for r in rows})
    lines = ["# Mock/real agreement, in-sample (leave-one-out)", "",
             "In-sample: these labelled states are the ones the classifiers were written and tested "
             "with. Real verdict: the state's Docker recording. Mock verdict: the mock sandbox with "
             "that state's own recording hidden (classifier + the other recordings). Unsure verdicts "
             "(the classifier cannot tell) are counted apart; agreement is among confident ones. The "
             "out-of-sample figures are in docs/heldout.md.", "",
             "| task | states | unsure | agree | rate among confident |", "|---|---:|---:|---:|---:|"]
    for t in tasks:
        mine = [r for r in rows if r.task == t]
        sure = [r for r in mine if not r.unsure]
        ok = sum(r.agrees for r in mine)
        lines.append(f"| {t} | {len(mine)} | {len(mine) - len(sure)} | {ok} | "
                     f"{ok / len(sure) if sure else 0:.1%} |")
    sure = [r for r in rows if not r.unsure]
    ok = sum(r.agrees for r in rows)
    rate = ok / len(sure) if sure else 0.0
    lines.append(f"| **all** | {len(rows)} | {len(rows) - len(sure)} | {ok} | **{rate:.1%}** |")
    bad = [r for r in rows if not r.agrees and not r.unsure]
    lines += ["", "Disagreements:" if bad else "No disagreements."]
    lines += [f"- {r.task} {r.state} ({r.label}): real passed={r.real_passed}, mock passed="
              f"{r.mock_passed} via {r.mock_source}" for r in bad]
    return "\n".join(lines) + "\n", rate


def write_report(tasks: Iterable[TaskSpec], out: Path) -> float:
    rows = [r for t in tasks for r in measure_task(t)]
    text, rate = report(rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return rate
