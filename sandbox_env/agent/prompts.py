"""The prompts: the system prompt, the first turn, each step's observation (compact), one-line
summaries of old steps, the corrective message, and the conversation window that holds them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..instructions import conditions_of
from ..models import Observation
from .config import AgentConfig
from .replies import ACTION_FORMATS
from .text import one_line, truncate_middle

SYSTEM_PROMPT = f"""\
You are an ML infrastructure engineer on call. A PyTorch training job fails; you debug its repo \
in a sandbox through actions.
Each turn, reply with exactly ONE action: a JSON object (a ```json fence is fine). The formats:
{ACTION_FORMATS}
Rules:
- File contents are not shown until you read them; read a file before editing it.
- old_str must be copied exactly from the current file and occur once in it; keep it to a few lines.
- Reproduce the failure with the run command, fix the root cause with minimal edits, rerun to \
confirm, then submit_fix (it ends the episode).
- Hidden behavioural checks run the code with their own settings. Workarounds that hide the \
failure (try/except, exiting early, shrinking the workload, longer timeouts, disabling the \
feature) are rejected.
- The step budget is limited. The explanation is scored for a verified fix: name the root \
cause, the mechanism and why the fix works, in full sentences."""


def corrective_message(error: str, truncated: bool = False) -> str:
    """The user message that asks the model to fix an unusable reply."""
    cut = (" Your reply was cut off at the token limit: keep it shorter (one action, brief "
           "prose).") if truncated else ""
    return (f"Your reply could not be used: {error}.{cut}\n"
            "Reply with exactly one action as a JSON object (a ```json fence is fine), one of:\n"
            f"{ACTION_FORMATS}")


def intro_message(obs: Observation, run_command: str | None, max_chars: int) -> str:
    """The first user turn: the incident report, the file names (not their contents), the run command."""
    if run_command is None:
        m = re.search(r"Reproduce with: (.+)", obs.terminal_output)
        run_command = m.group(1).strip() if m else "(see the incident report)"
    files = obs.files or sorted(obs.current_files)
    return (f"Task: {obs.task_name} (step budget: {obs.max_steps})\n"
            f"Incident report:\n{truncate_middle(obs.task_description.strip(), max_chars)}\n\n"
            f"Files in the workspace (contents not shown; use read_file): {', '.join(files)}\n"
            f"Run command: {run_command}\n"
            f"{conditions_of(obs.instructions)}\n"
            "Reply with your first action.")


def _output_section(obs: Observation, max_chars: int) -> str | None:
    """The step's terminal output (head + tail), with file contents shown below replaced by a
    pointer; None when there is nothing else in it."""
    output = obs.terminal_output
    for path, text in obs.current_files.items():
        if text and text in output:
            output = output.replace(text, f"[content of {path} shown below]")
    only_files = not re.sub(r"\[content of \S+ shown below\]", "", output).strip()
    if output.strip() and output != obs.last_action_error and not only_files:
        return "Output:\n" + truncate_middle(output.strip("\n"), max_chars)
    return None


def render_observation(obs: Observation, label: str, cfg: AgentConfig, note: str = "") -> str:
    """The new information of one step, compact: output (head + tail), files of this step, status."""
    lines = [f"Step {obs.step_number}/{obs.max_steps} ({obs.budget_remaining} left): {label} -> "
             f"reward {obs.reward:+.2f}, run_status={obs.run_status}, system_status={obs.system_status}"]
    if note:
        lines.append(f"Note: {note}")
    if obs.last_action_error:
        lines.append(f"Error: {truncate_middle(obs.last_action_error, 1000)}")
    output = _output_section(obs, cfg.max_output_chars)
    if output is not None:
        lines.append(output)
    for path, text in obs.current_files.items():
        lines.append(f"File {path} (current content, {len(text)} chars):\n```\n"
                     f"{truncate_middle(text, cfg.max_file_chars)}\n```")
    if obs.hint:
        lines.append(f"Hint: {obs.hint}")
    if obs.verdict is not None:
        v = obs.verdict
        lines.append(f"Verification {'PASSED' if v.passed else 'FAILED'} ({v.outcome.value})"
                     + "".join(f"\n- {r}" for r in v.reasons[:10]))
    if obs.done:
        lines.append(f"Episode over. Score: {obs.score}")
    return "\n".join(lines)


def summarize_observation(turn: int, label: str, obs: Observation) -> str:
    """One line for an old step that left the verbatim window."""
    s = (f"turn {turn}: {label} -> reward {obs.reward:+.2f}, {obs.system_status}, "
         f"run_status={obs.run_status}")
    if obs.last_action_error:
        s += f", error: {one_line(obs.last_action_error, 100)}"
    elif obs.current_files and label.startswith("read_file"):
        s += f", files shown: {', '.join(obs.current_files)}"
    else:
        lines = [ln for ln in obs.terminal_output.splitlines()
                 if ln.strip() and not ln.startswith(("[mock]", "[exit code", "[note]", "$ "))]
        key = next((ln for ln in reversed(lines) if re.search(r"error|exception|fail", ln, re.I)),
                   lines[-1] if lines else "")
        if key:
            s += f", output: {one_line(key, 120)}"
    return s


@dataclass
class _Exchange:
    reply: str  # assistant message as kept in the prompt
    observation: str  # user message rendering what followed
    summary: str  # one line once the exchange leaves the window


class Conversation:
    """The prompt: system, the task, older turns as one-line summaries, the last N verbatim."""

    def __init__(self, cfg: AgentConfig, intro: str) -> None:
        self.cfg = cfg
        self.intro = intro
        self.exchanges: list[_Exchange] = []

    def add(self, reply: str, observation: str, summary: str) -> None:
        self.exchanges.append(_Exchange(reply, observation, summary))

    def messages(self) -> list[dict[str, str]]:
        window = self.cfg.history_window
        old = self.exchanges[: max(0, len(self.exchanges) - window)]
        recent = self.exchanges[len(old):]
        first = self.intro
        if old:
            kept = old[-self.cfg.max_summary_lines:]
            omitted = len(old) - len(kept)
            first += "\n\nEarlier turns (summarised):" + (f"\n({omitted} older turns omitted)"
                                                           if omitted else "")
            first += "".join(f"\n- {e.summary}" for e in kept)
        msgs = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": first}]
        for e in recent:
            msgs += [{"role": "assistant", "content": e.reply}, {"role": "user", "content": e.observation}]
        if not recent and old:
            msgs[-1]["content"] += "\n\nReply with your next action."
        return msgs
