"""sandbox_env.agent.replies: the first valid action of a model reply, repairs of near-misses, and
precise errors for unusable replies; plus the action labels of the [STEP] lines."""

from __future__ import annotations

import json

import pytest

from sandbox_env.agent import ReplyError, action_label, parse_reply

ACTION = {"action_type": "read_file", "filename": "train.py"}


@pytest.mark.parametrize("reply", [
    json.dumps(ACTION),
    f"```json\n{json.dumps(ACTION)}\n```",
    f"Let me look at the loop.\n```\n{json.dumps(ACTION, indent=2)}\n```\nThen I'll run it.",
    f"{json.dumps(ACTION)}\nThis shows the training loop.",
    f"Reading the file now: {json.dumps(ACTION)}",
    json.dumps({"action": ACTION}),
    json.dumps({"thought": "the loop", **ACTION, "confidence": 0.7}),
    '{"plan": "inspect"}\n' + json.dumps(ACTION),
    '{"action_type": "read_file"}\n' + json.dumps(ACTION),  # first *valid* action wins
    "{not json} " + json.dumps(ACTION),
    '{"action": "read_file", "filename": "train.py"}',
    '{"action_type": " Read_File", "arguments": {"filename": "train.py"}}',
])
def test_parse_reply_accepts(reply: str) -> None:
    parsed = parse_reply(reply)
    assert parsed.action.model_dump(exclude={"metadata"}) == ACTION


def test_parse_reply_details() -> None:
    edit = parse_reply('```json\n{"action_type": "edit_file", "filename": "m.py", "old_str": "if x:\n'
                       '    y = {1: 2}\n", "new_str": "y = {1: 3}\n"}\n```').action
    assert edit.old_str == "if x:\n    y = {1: 2}\n" and edit.new_str == "y = {1: 3}\n"  # type: ignore[union-attr]
    two = parse_reply(json.dumps(ACTION) + "\n" + json.dumps({**ACTION, "filename": "model.py"}))
    assert two.action.filename == "train.py" and two.ignored == 1  # type: ignore[union-attr]
    diff = parse_reply('{"action_type": "view_git_diff"}').action
    assert diff.action_type == "view_git_diff" and diff.filename is None  # type: ignore[union-attr]
    assert action_label(parse_reply('{"action_type": "execute_bash", "command": "python\\n train.py"}')
                        .action) == "execute_bash(python train.py)"
    assert action_label(parse_reply('{"action_type": "submit_fix", "explanation": "abc"}').action) \
        == "submit_fix(3 chars)"


@pytest.mark.parametrize(("reply", "message"), [
    ("", "the reply was empty"),
    (None, "the reply was empty"),
    ("I think the bug is in train.py.", "no JSON object found in the reply"),
    ('{"action_type": "read_file", "filename": "train.py"', "the reply holds no valid JSON object"),
    ('{"tool": "read_file", "args": {"filename": "x"}}',
     "the JSON object has no action_type (keys: args, tool)"),
    ('{"action_type": "run_tests"}', "unknown action_type 'run_tests'; expected one of: read_file, "
                                     "edit_file, execute_bash, view_git_diff, submit_fix"),
    ('{"action_type": "edit_file", "filename": "a.py", "old_str": "x"}', "edit_file is missing new_str"),
    ('{"action_type": "read_file", "filename": ""}', "read_file.filename: String should have at least 1"),
    ('{"action_type": "execute_bash", "command": 5}', "execute_bash.command: Input should be a valid string"),
    ('{"action": {"filename": "a"}}', "the JSON object has no action_type (keys: filename)"),
])
def test_parse_reply_rejects_with_a_precise_message(reply: str | None, message: str) -> None:
    with pytest.raises(ReplyError) as info:
        parse_reply(reply)
    assert message in str(info.value)
