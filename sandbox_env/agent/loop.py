"""One episode: ask the model for an action (one corrective retry), send it, log the turn, until done."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx

from ..client import EnvClientError, TriageClient
from ..models import Observation
from ..rubrics import SCORE_MIN, clamp_score
from .config import AgentConfig
from .model_client import LLMError, complete
from .prompts import (
    Conversation,
    corrective_message,
    intro_message,
    render_observation,
    summarize_observation,
)
from .replies import ParsedReply, ReplyError, parse_reply
from .report import Emit, EpisodeResult, TurnLog, action_label, emit_stdout, end_line, note, start_line
from .text import one_line, truncate_middle

if TYPE_CHECKING:
    from openai import OpenAI

FATAL_ENV_STATUSES = (404, 409, 503)  # a refused action with these ends the episode


@dataclass
class TurnReply:
    """What one turn got from the model: a usable action, or the error of its last reply."""

    text: str
    parsed: ParsedReply | None
    error: str | None
    truncated: bool
    calls: int


def ask_for_action(llm: OpenAI, messages: list[dict[str, str]], cfg: AgentConfig,
                   sleep: Callable[[float], None] = time.sleep) -> TurnReply:
    """Ask the model; an unusable reply gets exactly one corrective retry in the same turn."""
    c = complete(llm, messages, cfg, sleep)
    try:
        return TurnReply(c.text, parse_reply(c.text), None, c.truncated, 1)
    except ReplyError as first:
        retry = [*messages, {"role": "assistant", "content": c.text or "(empty)"},
                 {"role": "user", "content": corrective_message(str(first), c.truncated)}]
    c = complete(llm, retry, cfg, sleep)
    try:
        return TurnReply(c.text, parse_reply(c.text), None, c.truncated, 2)
    except ReplyError as second:
        return TurnReply(c.text, None, str(second), c.truncated, 2)


class _Episode:
    """One episode while it is played: the last observation, the prompt, the failure streak."""

    def __init__(self, client: TriageClient, llm: OpenAI, cfg: AgentConfig, res: EpisodeResult,
                 *, emit: Emit, sleep: Callable[[float], None]) -> None:
        self.client, self.llm, self.cfg, self.res, self.sleep = client, llm, cfg, res, sleep
        self.log = TurnLog(res, emit)
        self.obs: Observation | None = None
        self.conv: Conversation  # set by play, once the episode is reset
        self.failures = 0

    def play(self, task: str, run_command: str | None) -> None:
        """Reset (compact observations: each step carries only the files it read or changed),
        then one turn after another until the episode is done, the turn limit is reached, or a
        turn stops it (``res.error`` says why)."""
        cfg, res = self.cfg, self.res
        if cfg.seed is not None and "@" not in task:  # the seed seeds the model, not a variant choice
            task = f"{task}@0"
        obs = self.obs = self.client.reset(task=task, seed=cfg.seed, compact=True).observation
        res.episode_id = obs.episode_id
        self.conv = Conversation(cfg, intro_message(obs, run_command, cfg.max_file_chars))
        max_turns = cfg.max_turns or obs.max_steps + cfg.max_consecutive_failures
        while not self.obs.done and res.steps < max_turns:
            reply = ask_for_action(self.llm, self.conv.messages(), cfg, self.sleep)
            res.llm_calls += reply.calls
            stop = self._unusable(reply) if reply.parsed is None else self._act(reply, reply.parsed)
            if stop:
                break
        if not self.obs.done and res.error is None:
            res.error = f"turn limit {max_turns} reached before the episode ended"

    def _unusable(self, reply: TurnReply) -> bool:
        """A turn without a usable action: logged, no env step; True when the streak ends the episode."""
        self.failures += 1
        self.res.failed_turns += 1
        err = reply.error or "unusable reply"
        self.log.turn("invalid", 0.0, False, f"unusable reply after one corrective retry: {err}", False)
        self.conv.add(truncate_middle(reply.text or "(empty)", 400),
                      corrective_message(err, reply.truncated)
                      + "\n(No action was taken; the workspace is unchanged.)",
                      f"turn {self.res.steps}: unusable reply ({one_line(err, 80)}); no action taken")
        if self.failures >= self.cfg.max_consecutive_failures:
            self.res.error = f"{self.failures} unusable replies in a row; episode stopped"
            return True
        return False

    def _act(self, reply: TurnReply, parsed: ParsedReply) -> bool:
        """Send the action and record the answer; True when the environment's refusal ends the episode."""
        self.failures = 0
        label = action_label(parsed.action)
        try:
            step = self.client.step(parsed.action.model_dump(exclude={"metadata"}))
        except EnvClientError as exc:
            self.log.turn(label, 0.0, False, f"environment refused the action: {exc}", False)
            if exc.status in FATAL_ENV_STATUSES:
                self.res.error = f"environment error: {exc}"
                return True
            self.conv.add(reply.text, f"The environment refused the action: {exc.detail}",
                          f"turn {self.res.steps}: {label} refused by the environment")
            return False
        obs = self.obs = step.observation
        self.log.turn(label, step.reward, step.done, obs.last_action_error, True)
        extra = (f"your reply held {parsed.ignored + 1} actions; only the first was "
                 "executed. Send one action per reply.") if parsed.ignored else ""
        self.conv.add(reply.text, render_observation(obs, label, self.cfg, extra),
                      summarize_observation(self.res.steps, label, obs))
        return False


def _final_score(client: TriageClient, obs: Observation | None) -> float:
    if obs is None:
        return SCORE_MIN
    if obs.done and obs.score is not None:
        return clamp_score(obs.score)
    try:
        st = client.state()
    except (EnvClientError, httpx.HTTPError):
        return SCORE_MIN
    return clamp_score(st.score) if st.done and st.score is not None else SCORE_MIN


def _finish(client: TriageClient, obs: Observation | None, res: EpisodeResult, close: bool) -> None:
    """Outcome and score of the episode; then close it on the server (errors ignored) if asked."""
    res.done = bool(obs is not None and obs.done)
    res.success = bool(obs is not None and obs.verdict is not None and obs.verdict.passed)
    res.score = _final_score(client, obs)
    if close:
        try:
            client.close_episode()
        except (EnvClientError, httpx.HTTPError):
            pass


def run_episode(client: TriageClient, llm: OpenAI, task: str, cfg: AgentConfig, *,
                emit: Emit = emit_stdout, run_command: str | None = None, close: bool = True,
                sleep: Callable[[float], None] = time.sleep) -> EpisodeResult:
    """Play one episode of ``task``: [START], one [STEP] per turn, [END]; never raises for the episode.

    A reply without a usable action gets one corrective retry; if that fails too, the turn is
    logged with its error (action=invalid, reward 0), no action is sent to the environment, and
    the next turn starts fresh. ``max_consecutive_failures`` such turns in a row end the episode.
    """
    t0 = time.monotonic()
    res = EpisodeResult(task=task, model=cfg.model)
    emit(start_line(task, cfg.model))
    episode = _Episode(client, llm, cfg, res, emit=emit, sleep=sleep)
    try:
        episode.play(task, run_command)
    except LLMError as exc:
        res.error = str(exc)
    except (EnvClientError, httpx.HTTPError) as exc:
        res.error = f"environment error: {exc}"
    if res.error:
        note(f"[agent] {task}: {res.error}")
    _finish(client, episode.obs, res, close)
    res.duration_s = round(time.monotonic() - t0, 3)
    emit(end_line(res.success, res.steps, res.score, res.rewards))
    return res
