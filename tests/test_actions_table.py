"""The action table is the one place an action is described: every face derives from it.

The last test adds a field to an action in one place (the model) and checks that the MCP tool,
the TRL tool method, the agent's reply parsing, the instructions and the HTTP wire schema all
carry it, with nothing else edited.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from sandbox_env import actions


def _faces() -> dict[str, object]:
    """Fresh imports of every face that derives from the table."""
    from sandbox_env import environment, trl
    from sandbox_env.agent import replies
    from sandbox_env.server import mcp, wire

    return {m.__name__: m for m in (replies, environment, mcp, wire, trl)}


def test_every_face_matches_the_table() -> None:
    faces = _faces()
    mcp, trl = faces["sandbox_env.server.mcp"], faces["sandbox_env.trl"]
    tools = {t["name"]: t for t in mcp.ACTION_TOOLS}  # type: ignore[attr-defined]
    assert list(tools) == list(actions.ACTION_TYPES)
    wire_schema = json.dumps(faces["sandbox_env.server.wire"].step_body_schema())  # type: ignore[attr-defined]
    instructions = faces["sandbox_env.environment"].INSTRUCTIONS  # type: ignore[attr-defined]
    for model in actions.ACTIONS:
        kind, args = model.kind(), model.argument_names()
        assert set(tools[kind]["inputSchema"]["properties"]) == set(args)
        assert set(tools[kind]["inputSchema"]["required"]) == set(model.required_arguments())
        method = getattr(trl.TriageToolEnv, kind)  # type: ignore[attr-defined]
        assert list(inspect.signature(method).parameters)[1:] == list(args)
        assert all(f"    {a}: " in method.__doc__ for a in args)
        assert actions.example_line(kind) in instructions
        assert all(f'"{a}"' in wire_schema for a in args)


EDIT = ("    filename: str = Field(min_length=1, max_length=MAX_PATH,\n"
        "                          description=\"path relative to the workspace root, e.g. train.py\")\n")
NEW_FIELD = ("    max_lines: int | None = Field(default=None, ge=1, "
             "description=\"return at most this many lines\")\n")

PROBE = """
import inspect, json
from sandbox_env import actions
from sandbox_env.agent.replies import parse_reply
from sandbox_env.environment import INSTRUCTIONS
from sandbox_env.server.mcp import ACTION_TOOLS
from sandbox_env.server.wire import step_body_schema
from sandbox_env.trl import TriageToolEnv
tool = next(t for t in ACTION_TOOLS if t["name"] == "read_file")
method = TriageToolEnv.read_file
parsed = parse_reply('{"action_type": "read_file", "filename": "train.py", "max_lines": 5}')
try:
    actions.parse_action({"action_type": "read_file", "filename": "a", "max_lines": 0})
    refused = False
except actions.InvalidAction as exc:
    refused = "max_lines" in str(exc)
print(json.dumps({
    "mcp": "max_lines" in tool["inputSchema"]["properties"],
    "trl_signature": "max_lines" in inspect.signature(method).parameters,
    "trl_doc": "max_lines: return at most this many lines" in method.__doc__,
    "wire": '"max_lines"' in json.dumps(step_body_schema()),
    "agent": parsed.action.max_lines == 5,
    "validation": refused,
}))
"""


def test_a_new_field_reaches_every_face_from_one_edit(tmp_path: Path) -> None:
    """One line added to ReadFile in a copy of the package; every face carries the field."""
    package = Path(actions.__file__).parent
    shutil.copytree(package, tmp_path / "sandbox_env", ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "sandbox_env" / "actions.py"
    src = target.read_text()
    assert src.count(EDIT) == 1 and "max_lines" not in src
    target.write_text(src.replace(EDIT, EDIT + NEW_FIELD))
    changed = [p for p in (tmp_path / "sandbox_env").rglob("*.py")
               if p.read_bytes() != (package / p.relative_to(tmp_path / "sandbox_env")).read_bytes()]
    assert changed == [target]  # the one edit
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}"}
    out = subprocess.run([sys.executable, "-c", "import sys; sys.meta_path[:] = [f for f in sys.meta_path "
                          "if 'editable' not in repr(f).lower()]\n" + PROBE],
                         check=False, env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert all(found.values()), found
