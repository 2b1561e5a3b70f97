"""sandbox_env.agent.prompts: what the model is shown: the first turn, each step's compact
observation, one-line summaries of older steps, the corrective message and the window."""

from __future__ import annotations

from sandbox_env.agent import (
    ACTION_FORMATS,
    SYSTEM_PROMPT,
    AgentConfig,
    Conversation,
    corrective_message,
    intro_message,
    render_observation,
    summarize_observation,
    truncate_middle,
)
from sandbox_env.models import Observation, Outcome, Verdict


def test_truncation_keeps_head_and_tail_and_says_so() -> None:
    text = "HEAD\n" + "x" * 10_000 + "\nTraceback: the real error"
    out = truncate_middle(text, 4000)
    assert out.startswith("HEAD") and out.endswith("the real error") and len(out) < 4100
    assert "[6031 of 10031 chars cut]" in out
    assert truncate_middle("short", 4000) == "short"

    obs = Observation(task_name="t", task_description="d", terminal_output=text, max_steps=10,
                      budget_remaining=7, step_number=3, episode_id="e", mode="mock",
                      current_files={"a.py": "print(1)\n"}, hint="look at the divisor",
                      run_status="failing", system_status="training_failed", reward=0.05)
    shown = render_observation(obs, "execute_bash(python a.py)", AgentConfig(api_key="k"))
    assert shown.startswith("Step 3/10 (7 left): execute_bash(python a.py) -> reward +0.05, "
                            "run_status=failing")
    assert "chars cut]" in shown and "File a.py (current content, 9 chars):\n```\nprint(1)\n" in shown
    assert "Hint: look at the divisor" in shown and len(shown) < 4500


def _obs(**kw: object) -> Observation:
    base: dict[str, object] = {"task_name": "t", "task_description": "  The job dies at epoch 3.  ",
                               "max_steps": 10, "budget_remaining": 9, "step_number": 1,
                               "episode_id": "e", "mode": "mock"}
    return Observation.model_validate(base | kw)


CFG = AgentConfig(api_key="k")


def test_intro_lists_file_names_without_contents_and_the_run_command() -> None:
    obs = _obs(files=["a.py", "b.py"], current_files={"a.py": "SECRET_A\n", "b.py": "SECRET_B\n"},
               terminal_output="Reproduce with: python a.py --fast\n")
    intro = intro_message(obs, None, 1000)
    assert intro.startswith("Task: t (step budget: 10)\nIncident report:\nThe job dies at epoch 3.\n")
    assert "(contents not shown; use read_file): a.py, b.py\n" in intro and "SECRET" not in intro
    assert "Run command: python a.py --fast\n" in intro and intro.endswith("Reply with your first action.")
    assert "Run command: make run\n" in intro_message(obs, "make run", 1000)
    bare = intro_message(_obs(current_files={"z.py": "", "c.py": ""}), None, 1000)
    assert "use read_file): c.py, z.py\n" in bare and "Run command: (see the incident report)" in bare


def test_compact_step_shows_the_file_read_once_and_nothing_else() -> None:
    text = "def train():\n    return 1\n"
    read = _obs(terminal_output=text, current_files={"train.py": text}, reward=0.0)
    shown = render_observation(read, "read_file(train.py)", CFG)
    assert shown.count(text.strip()) == 1 and "Output:" not in shown
    assert "File train.py (current content, 26 chars):" in shown
    edited = _obs(terminal_output="edited model.py (1 replacement)",
                  current_files={"model.py": "x = 2\n"}, step_number=2)
    shown = render_observation(edited, "edit_file(model.py)", CFG, "only the first action was executed")
    assert shown.startswith("Step 2/10 (9 left): edit_file(model.py) -> reward +0.00")
    assert "Note: only the first action was executed" in shown
    assert "Output:\nedited model.py (1 replacement)" in shown and "File model.py" in shown
    assert "File train.py" not in shown


def test_render_shows_error_verdict_and_final_score() -> None:
    verdict = Verdict(passed=False, outcome=Outcome.failed, reasons=["loss diverged"])
    obs = _obs(last_action_error="old_str not found", terminal_output="old_str not found",
               verdict=verdict, done=True, score=0.05)
    shown = render_observation(obs, "submit_fix(40 chars)", CFG)
    assert "Error: old_str not found" in shown and "Output:" not in shown
    assert f"Verification FAILED ({Outcome.failed.value})\n- loss diverged" in shown
    assert shown.endswith("Episode over. Score: 0.05")


def test_summaries_of_old_steps_are_one_line() -> None:
    read = _obs(current_files={"a.py": "x\n"}, terminal_output="x\n", system_status="investigating")
    assert summarize_observation(1, "read_file(a.py)", read) == (
        "turn 1: read_file(a.py) -> reward +0.00, investigating, run_status=not_run, files shown: a.py")
    err = _obs(last_action_error="no such\nfile")
    assert summarize_observation(2, "read_file(x.py)", err).endswith(", error: no such file")
    run = _obs(terminal_output="$ python a.py\n[mock] replay\nRuntimeError: boom\nepoch 1\n[exit code 1]\n")
    assert summarize_observation(3, "execute_bash(python a.py)", run).endswith(
        ", output: RuntimeError: boom")
    assert "\n" not in summarize_observation(4, "x", _obs(terminal_output="a\n" * 200))


def test_conversation_keeps_the_last_turns_verbatim_and_summarises_older_ones() -> None:
    conv = Conversation(AgentConfig(api_key="k", history_window=2, max_summary_lines=2), "INTRO")
    for i in range(1, 5):
        conv.add(f"reply {i}", f"observation {i}", f"summary {i}")
    msgs = conv.messages()
    assert msgs[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert msgs[1] == {"role": "user",
                       "content": "INTRO\n\nEarlier turns (summarised):\n- summary 1\n- summary 2"}
    assert [m["content"] for m in msgs[2:]] == ["reply 3", "observation 3", "reply 4", "observation 4"]
    conv.add("reply 5", "observation 5", "summary 5")
    assert "(1 older turns omitted)\n- summary 2\n- summary 3" in conv.messages()[1]["content"]
    none_kept = Conversation(AgentConfig(api_key="k", history_window=0), "INTRO")
    assert len(none_kept.messages()) == 2 and none_kept.messages()[1]["content"] == "INTRO"
    none_kept.add("r", "o", "s")
    assert none_kept.messages()[-1]["content"].endswith("- s\n\nReply with your next action.")


def test_corrective_message_says_what_was_wrong_and_lists_the_formats() -> None:
    msg = corrective_message("no JSON object found in the reply")
    assert msg.startswith("Your reply could not be used: no JSON object found in the reply.\n")
    assert msg.endswith(ACTION_FORMATS) and "token limit" not in msg
    assert "cut off at the token limit" in corrective_message("x", truncated=True)
    assert ACTION_FORMATS in SYSTEM_PROMPT
