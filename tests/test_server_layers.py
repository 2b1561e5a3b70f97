"""The server's rooms one by one, in process (no HTTP): sessions, service, wire, ws.

Scenario tests over a real uvicorn server live in test_server.py, test_seed_client.py and
test_openenv.py; these pin each layer's own contract.
"""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from sandbox_env.actions import ACTION_TYPES, parse_action
from sandbox_env.environment import TriageEnvironment
from sandbox_env.errors import (
    ERRORS,
    CapacityReached,
    EpisodeDone,
    EpisodeIdRequired,
    EpisodeInUse,
    InvalidRequest,
    NoEpisode,
    SandboxUnavailable,
    UnknownEpisode,
    UnknownTask,
)
from sandbox_env.models import Limits, RunResult, Verdict
from sandbox_env.rubrics import LLMJudge
from sandbox_env.sandbox.mock import MockSandbox
from sandbox_env.server.mcp import McpHandler
from sandbox_env.server.service import EpisodeService, ResetParams, parse_reset
from sandbox_env.server.sessions import SessionManager
from sandbox_env.server.wire import ErrorBody, step_body_schema
from sandbox_env.server.ws import WebSocketEpisode, error_frame
from sandbox_env.suite.tasks import TaskRegistry, TaskSpec
from sandbox_env.workspace import Workspace


def _manager(tasks: TaskRegistry, n: int = 4, sandbox: Any = None) -> SessionManager:
    sbx = sandbox or MockSandbox()
    return SessionManager(lambda: TriageEnvironment(tasks, sbx), n, 60)


# -- sessions ---------------------------------------------------------------------------------
def test_sessions_route_idless_requests_and_refuse_clearly(toy_tasks: TaskRegistry) -> None:
    m = _manager(toy_tasks, n=3)
    with pytest.raises(NoEpisode):
        m.get(None)
    named = m.open("named")
    named.env.reset(task="toy_mean")
    assert m.get(None) is named  # the only live, unfinished HTTP episode
    anon = m.open(None)
    anon.env.reset(task="toy_mean")
    assert m.get(None) is anon and anon.anonymous
    again = m.open(None)  # an id-less reset moves the pointer: the unfinished previous one stays
    assert m.get(None) is again and len(m) == 3 and m.get(anon.episode_id) is anon
    assert not anon.anonymous  # addressed by its id: named, never reclaimed as anonymous
    again.env.reset(task="toy_mean")
    again.env.step(parse_action({"action_type": "submit_fix", "explanation": "none"}))
    third = m.open(None)  # the previous one is finished and was never addressed by id: reclaimed
    with pytest.raises(UnknownEpisode):
        m.get(again.episode_id)
    assert len(m) == 3 and m.get(None) is third
    assert asyncio.run(m.close(anon.episode_id))
    third.env.reset(task="toy_mean")
    fourth = m.open(None)  # third is unfinished: it stays, superseded
    fourth.env.reset(task="toy_mean")
    assert len(m) == 3 and m.get(None) is fourth and third.anonymous
    fifth = m.open(None)  # at capacity: the superseded anonymous episode (never addressed) goes
    assert third.episode_id not in m._sessions and len(m) == 3 and m.get(None) is fifth
    m.get(fourth.episode_id), m.get(fifth.episode_id)  # named now: nothing anonymous left to evict
    with pytest.raises(CapacityReached):
        m.open("one-too-many")
    assert asyncio.run(m.close("named"))
    ws = m.open("sock", attached=True)
    with pytest.raises(EpisodeInUse):
        m.open("sock")  # a WebSocket's episode is not an HTTP client's to reset
    assert asyncio.run(m.close("sock")) and asyncio.run(m.close(fifth.episode_id))
    assert asyncio.run(m.close(fourth.episode_id))
    assert not asyncio.run(m.close("sock"))
    del ws


def test_capacity_is_made_by_evicting_the_oldest_finished_episode(toy_tasks: TaskRegistry) -> None:
    m = _manager(toy_tasks, n=3)
    sessions = {eid: m.open(eid) for eid in ("old-done", "new-done", "running")}
    for eid, sess in sessions.items():
        sess.env.reset(task="toy_mean")
        if eid != "running":
            sess.env.step(parse_action({"action_type": "submit_fix", "explanation": "none"}))
        sess.touch()
    assert sessions["old-done"].finished and not sessions["running"].finished
    m.open("fourth")  # full: the least recently used finished episode makes room
    assert sorted(m._sessions) == ["fourth", "new-done", "running"]
    m.open("fifth")
    assert sorted(m._sessions) == ["fifth", "fourth", "running"]
    with pytest.raises(CapacityReached):  # nothing finished is left: running episodes stay
        m.open("sixth")


def test_eviction_and_expiry_follow_use_not_creation(toy_tasks: TaskRegistry,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The least recently *used* finished episode goes first, whatever the creation order, and
    expiry closes every idle session (however many recent ones were opened before them)."""
    import sandbox_env.server.sessions as sessions_mod

    clock = [1000.0]
    monkeypatch.setattr(sessions_mod.time, "monotonic", lambda: clock[0])
    m = _manager(toy_tasks, n=3)
    made = {eid: m.open(eid) for eid in ("first", "second", "third")}
    for sess in made.values():
        sess.env.reset(task="toy_mean")
        sess.env.step(parse_action({"action_type": "submit_fix", "explanation": "none"}))
    clock[0] += 1
    made["first"].touch()  # read again after it finished: "second" is now the least recently used
    m.open("fourth")
    assert sorted(m._sessions) == ["first", "fourth", "third"]
    m.rename(made["third"], "third-renamed")  # a rename is a use: "first" is now the oldest
    m.open("fifth")
    assert sorted(m._sessions) == ["fifth", "fourth", "third-renamed"]

    idle = SessionManager(lambda: TriageEnvironment(toy_tasks, MockSandbox()), 10, 60)
    olds = [idle.open(f"old-{i}") for i in range(3)]
    clock[0] += 30
    recent = idle.open("recent")
    clock[0] += 40  # the three old ones are 70 s idle, "recent" 40 s
    olds[1].touch()
    assert idle.expire() == 2 and sorted(idle._sessions) == ["old-1", "recent"]
    clock[0] += 61
    assert idle.expire() == 2 and len(idle) == 0
    del recent


def test_two_unfinished_named_episodes_need_an_id(toy_tasks: TaskRegistry) -> None:
    m = _manager(toy_tasks)
    for eid in ("a", "b"):
        m.open(eid).env.reset(task="toy_mean")
    with pytest.raises(EpisodeIdRequired, match="2 episodes are live"):
        m.get(None)


# -- service ----------------------------------------------------------------------------------
class _BlockingSandbox(MockSandbox):
    """Records the thread each call runs on; its runs can fail as an engine outage."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[str] = []
        self.down = False

    def answers_at_once(self, workspace: Workspace, task: TaskSpec, command: str | None = None) -> bool:
        return False  # a double of a sandbox whose every run and verification may block

    def run(self, workspace: Workspace, command: str, limits: Limits, task: TaskSpec) -> RunResult:
        self.threads.append(threading.current_thread().name)
        if self.down:
            raise SandboxUnavailable("Docker engine not reachable")
        return super().run(workspace, command, limits, task)

    def verify(self, workspace: Workspace, task: TaskSpec) -> Verdict:
        self.threads.append(threading.current_thread().name)
        return super().verify(workspace, task)


def test_service_runs_waiting_actions_in_threads_and_says_how_to_retry(toy_tasks: TaskRegistry) -> None:
    sbx = _BlockingSandbox()
    m = _manager(toy_tasks, sandbox=sbx)
    service = EpisodeService(toy_tasks, m, max_threads=2)

    async def play() -> None:
        session = m.open("ep")
        await service.reset(session, ResetParams(task="toy_mean"))
        await service.step(session, parse_action({"action_type": "read_file", "filename": "stats.py"}))
        await service.step(session, parse_action({"action_type": "execute_bash",
                                                  "command": "python report.py"}))
        main = threading.current_thread().name
        assert sbx.threads and all(t != main for t in sbx.threads)  # the run went to a worker
        sbx.down = True
        with pytest.raises(SandboxUnavailable, match="The step was not taken; retry"):
            await service.step(session, parse_action({"action_type": "execute_bash",
                                                      "command": "python report.py"}))
        assert service.state(session).step_count == 2  # the refused step used nothing
        await service.step(session, parse_action({"action_type": "submit_fix", "explanation": "x"}))
        with pytest.raises(EpisodeDone):
            await service.step(session, parse_action({"action_type": "view_git_diff"}))
        with pytest.raises(UnknownTask, match="toy_mean"):
            service.check_task("nope")

    asyncio.run(play())


class _ThreadRecordingMock(MockSandbox):
    """The real mock's answers_at_once, recording the thread each run and verification runs on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[str] = []

    def run(self, workspace: Workspace, command: str, limits: Limits, task: TaskSpec) -> RunResult:
        self.threads.append(threading.current_thread().name)
        return super().run(workspace, command, limits, task)

    def verify(self, workspace: Workspace, task: TaskSpec) -> Verdict:
        self.threads.append(threading.current_thread().name)
        return super().verify(workspace, task)


def test_mock_steps_answered_from_memory_run_inline_and_classification_in_a_thread(
        real_tasks: TaskRegistry) -> None:
    sbx = _ThreadRecordingMock()
    m = _manager(real_tasks, sandbox=sbx)
    service = EpisodeService(real_tasks, m, max_threads=2)
    task = real_tasks.get("oom_graph_leak")
    run = parse_action({"action_type": "execute_bash", "command": task.run_command})
    last = task.repo_files()["train.py"].rstrip("\n").splitlines()[-1] + "\n"
    novel = parse_action({"action_type": "edit_file", "filename": "train.py", "old_str": last,
                          "new_str": last + f"_layers_token = {threading.get_ident()}\n"})

    async def play() -> list[str]:
        session = m.open("ep")
        await service.reset(session, ResetParams(task=task.id))
        assert not session.env.blocks(run)  # the original state is recorded
        outs = [(await service.step(session, run)).observation.terminal_output]
        assert not session.env.blocks(parse_action({"action_type": "execute_bash", "command": "ls"}))
        await service.step(session, novel)
        assert session.env.blocks(run)  # a never-seen state: classified in a thread
        outs.append((await service.step(session, run)).observation.terminal_output)
        assert not session.env.blocks(run)  # its label is cached now
        submit = parse_action({"action_type": "submit_fix", "explanation": "x"})
        assert not session.env.blocks(submit)
        assert session.env.blocks(parse_action({"action_type": "submit_fix", "explanation": "x" * 4001}))
        judge, session.env.judge = session.env.judge, LLMJudge("m")  # a judge that waits: a thread
        assert session.env.blocks(submit)
        session.env.judge = judge
        await service.step(session, submit)
        assert not session.env.blocks(run)  # done: refused at once
        return outs

    main = threading.current_thread().name
    outs = asyncio.run(play())
    assert "this exact workspace state (recorded)" in outs[0]
    assert "a state the mock judges equivalent (inferred)" in outs[1]
    assert sbx.threads == [main, sbx.threads[1], main]
    assert sbx.threads[1] != main


@pytest.mark.parametrize(("data", "fragment"), [
    ([1], "JSON object"), ({"seed": True}, "seed"), ({"task": 5}, "task"),
    ({"compact": "yes"}, "compact"), ({"bogus": 1}, "bogus"),
])
def test_reset_parameters_are_strict(data: Any, fragment: str) -> None:
    with pytest.raises(InvalidRequest, match=fragment):
        parse_reset(data)


def test_lenient_reset_drops_dataset_columns() -> None:
    assert parse_reset({"task": "t", "prompt": "...", "compact": True}, lenient=True) == ResetParams(
        task="t", compact=True)


# -- wire -------------------------------------------------------------------------------------
def test_wire_schema_documents_every_action_and_error_code() -> None:
    schema = json.dumps(step_body_schema())
    assert all(f'"{kind}"' in schema for kind in ACTION_TYPES)
    described = ErrorBody.model_fields["code"].description or ""
    assert all(code in described for code in ERRORS)


# -- ws ---------------------------------------------------------------------------------------
def test_ws_frames_answer_bad_messages_with_stable_codes(toy_tasks: TaskRegistry) -> None:
    m = _manager(toy_tasks)
    service = EpisodeService(toy_tasks, m, max_threads=2)
    ws = WebSocketEpisode(service, McpHandler(service), 60, 1_000_000)
    session = m.open(None, attached=True)

    async def handle(raw: str) -> dict[str, Any]:
        reply, stop = await ws._handle(raw, session, borrowed=False)
        assert not stop and reply is not None
        return json.loads(reply)

    async def play() -> None:
        assert (await handle("{nope"))["data"]["code"] == "INVALID_JSON"
        assert (await handle("[1]"))["data"]["code"] == "VALIDATION_ERROR"
        assert (await handle('{"type": "dance"}'))["data"]["code"] == "UNKNOWN_TYPE"
        assert (await handle('{"type": "step", "data": {"action_type": "view_git_diff"}}'))["data"][
            "code"] == "NOT_RESET"
        first = await handle('{"type": "reset", "data": {"task": "toy_mean", "compact": true}}')
        assert first["type"] == "observation" and first["data"]["observation"]["task_name"] == "toy_mean"
        bad = await handle('{"type": "step", "data": {"action_type": "launch"}}')
        assert bad["data"]["code"] == "INVALID_ACTION"
        ok = await handle('{"type": "step", "data": {"action": {"action_type": "read_file", '
                          '"filename": "stats.py"}}}')
        assert list(ok["data"]["observation"]["current_files"]) == ["stats.py"]
        assert (await handle('{"type": "state"}'))["data"]["step_count"] == 1

    asyncio.run(play())
    frame = json.loads(error_frame("CAPACITY_REACHED", "full", max_sessions=4))
    assert frame == {"type": "error",
                     "data": {"message": "full", "code": "CAPACITY_REACHED", "max_sessions": 4}}
