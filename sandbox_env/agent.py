"""Baseline LLM agent: plays sandbox-env episodes over HTTP with an OpenAI-compatible chat model."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, computed_field, field_validator

from .client import EnvClientError, TriageClient
from .environment import InvalidAction, parse_action
from .models import ACTION_TYPES, EditFile, ExecuteBash, Observation, ReadFile, SubmitFix, ViewGitDiff
from .rubrics import SCORE_MIN, clamp_score

if TYPE_CHECKING:
    from openai import OpenAI

DEFAULT_API_BASE_URL = "https://router.huggingface.co/v1"
DEFAULT_MODEL = "Qwen/Qwen2.5-72B-Instruct"
DEFAULT_ENV_URL = "http://localhost:8000"
BENCHMARK = "sandbox-env"

AnyAction = ReadFile | EditFile | ExecuteBash | ViewGitDiff | SubmitFix
Emit = Callable[[str], None]

ACTION_FIELDS: dict[str, tuple[str, ...]] = {  # the fields of each action; all required but the diff's
    "read_file": ("filename",),
    "edit_file": ("filename", "old_str", "new_str"),
    "execute_bash": ("command",),
    "view_git_diff": ("filename",),
    "submit_fix": ("explanation",),
}
OPTIONAL_FIELDS = {("view_git_diff", "filename")}

ACTION_FORMATS = """\
{"action_type": "read_file", "filename": "train.py"}
{"action_type": "edit_file", "filename": "train.py", "old_str": "<exact text, unique in the file>", \
"new_str": "<replacement>"}
{"action_type": "execute_bash", "command": "python train.py"}
{"action_type": "view_git_diff", "filename": null}
{"action_type": "submit_fix", "explanation": "<root cause, mechanism, why the fix works>"}"""

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


# --------------------------------------------------------------------------- configuration
class AgentConfigError(ValueError):
    """The agent cannot start as configured (no API key, unknown task, bad value)."""


class EnvUnavailable(RuntimeError):
    """The environment server did not answer /health in time."""


class LLMError(RuntimeError):
    """The model API failed for good (after retries, or with a non-retryable error)."""


class AgentConfig(BaseModel):
    """Everything one agent run needs; `from_env` reads the seed's environment variables."""

    model_config = ConfigDict(extra="forbid")

    api_base_url: str = Field(default=DEFAULT_API_BASE_URL, min_length=1)
    model: str = Field(default=DEFAULT_MODEL, min_length=1)
    api_key: SecretStr | None = Field(default=None, description="HF_TOKEN or OPENAI_API_KEY")
    env_url: str = Field(default=DEFAULT_ENV_URL, min_length=1)
    tasks: list[str] | None = Field(default=None, description="task ids; None: every task of the server")
    seed: int | None = Field(default=None, description="passed to reset and to the model")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=2048, ge=16)
    request_timeout_s: float = Field(default=120.0, gt=0, description="one model request")
    env_timeout_s: float = Field(default=900.0, gt=0, description="one environment request")
    health_timeout_s: float = Field(default=120.0, ge=0, description="wait for the env's /health")
    llm_retries: int = Field(default=3, ge=0, description="retries of a model call on connection/5xx/429")
    retry_backoff_s: float = Field(default=2.0, ge=0, description="first backoff, doubled each retry")
    max_consecutive_failures: int = Field(default=3, ge=1,
                                          description="unusable replies in a row that end the episode")
    history_window: int = Field(default=4, ge=0, description="exchanges kept verbatim in the prompt")
    max_output_chars: int = Field(default=4000, ge=200, description="terminal output kept per step")
    max_file_chars: int = Field(default=12_000, ge=200, description="file content kept per file")
    max_summary_lines: int = Field(default=40, ge=1, description="one-line summaries of older steps")
    max_turns: int | None = Field(default=None, ge=1, description="cap on turns per episode "
                                  "(default: the task's step budget + max_consecutive_failures)")

    @field_validator("tasks", mode="before")
    @classmethod
    def _split_tasks(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = v.split(",")
        if isinstance(v, list | tuple):
            v = [str(t).strip() for t in v if str(t).strip()]
            return v or None
        return v

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> AgentConfig:
        """API_BASE_URL, MODEL_NAME, HF_TOKEN / OPENAI_API_KEY, ENV_URL, TASKS, SEED; overrides win."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {
            "api_base_url": env.get("API_BASE_URL") or None,
            "model": env.get("MODEL_NAME") or None,
            "api_key": env.get("HF_TOKEN") or env.get("OPENAI_API_KEY") or None,
            "env_url": env.get("ENV_URL") or None,
            "tasks": env.get("TASKS") or None,
            "seed": env.get("SEED") or None,
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls.model_validate({k: v for k, v in values.items() if v is not None})
        except ValueError as exc:
            raise AgentConfigError(f"invalid agent configuration: {exc}") from None

    def require_key(self) -> str:
        if self.api_key is None or not self.api_key.get_secret_value().strip():
            raise AgentConfigError(
                "no API key: set HF_TOKEN (or OPENAI_API_KEY) for the model endpoint "
                f"{self.api_base_url}; a local OpenAI-compatible server accepts any value")
        return self.api_key.get_secret_value()


# --------------------------------------------------------------------------- results
class EpisodeResult(BaseModel):
    """One episode as the agent played it; `score` is clamped to [0.001, 0.999]."""

    task: str
    model: str
    episode_id: str | None = None
    success: bool = False
    score: float = SCORE_MIN
    done: bool = False
    steps: int = Field(default=0, description="turns logged as [STEP] lines")
    env_steps: int = Field(default=0, description="actions the environment executed")
    failed_turns: int = Field(default=0, description="turns whose reply was unusable (no env step)")
    llm_calls: int = 0
    rewards: list[float] = Field(default_factory=list)
    actions: list[str] = Field(default_factory=list)
    error: str | None = None
    duration_s: float = 0.0


class RunSummary(BaseModel):
    """All episodes of one run."""

    model: str
    env_url: str
    episodes: list[EpisodeResult] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def mean_score(self) -> float:
        return round(sum(e.score for e in self.episodes) / len(self.episodes), 4) if self.episodes else 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verified(self) -> int:
        return sum(e.success for e in self.episodes)


# --------------------------------------------------------------------------- reply parsing
class ReplyError(ValueError):
    """A model reply that holds no usable action; the message says precisely why."""


@dataclass(frozen=True)
class ParsedReply:
    action: AnyAction
    ignored: int = 0  # further valid actions in the same reply (not executed)


_DECODER = json.JSONDecoder(strict=False)  # literal newlines inside strings are common in replies


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in ``text``, in order (prose, fences and trailing text skipped)."""
    found: list[dict[str, Any]] = []
    i = text.find("{")
    while i != -1:
        try:
            obj, end = _DECODER.raw_decode(text, i)
        except ValueError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            found.append(obj)
        i = text.find("{", end)
    return found


_ARG_KEYS = ("arguments", "args", "parameters", "params", "input")


def _normalise(obj: dict[str, Any]) -> dict[str, Any]:
    """Common near-misses -> the flat action: {"action": {...}} (OpenEnv's wrapping),
    {"action": "read_file", ...}, fields nested under "arguments"/"args"/..., "Read_File "."""
    inner = obj.get("action")
    if "action_type" not in obj and isinstance(inner, dict):
        obj = inner
    elif "action_type" not in obj and isinstance(inner, str):
        obj = {k: v for k, v in obj.items() if k != "action"} | {"action_type": inner}
    kind = obj.get("action_type")
    if isinstance(kind, str):
        obj = {**obj, "action_type": kind.strip().lower()}
    for key in _ARG_KEYS:
        nested = obj.get(key)
        if isinstance(nested, dict) and "action_type" in obj:
            obj = {**nested, **{k: v for k, v in obj.items() if k != key}}
    return obj


def _validate(candidate: dict[str, Any]) -> AnyAction:
    kind = candidate.get("action_type")
    if kind not in ACTION_TYPES:
        raise ReplyError(f"unknown action_type {kind!r}; expected one of: {', '.join(ACTION_TYPES)}")
    fields = {*ACTION_FIELDS[kind], "action_type", "metadata"}
    data = {k: v for k, v in candidate.items() if k in fields}  # extra keys ("thought", ...) dropped
    missing = [f for f in ACTION_FIELDS[kind] if f not in data and (kind, f) not in OPTIONAL_FIELDS]
    if missing:
        raise ReplyError(f"{kind} is missing {', '.join(missing)}; expected "
                         f"{_format_of(kind)}")
    try:
        return parse_action(data)
    except InvalidAction as exc:
        raise ReplyError(f"{exc}; expected {_format_of(kind)}") from None


def _format_of(kind: str) -> str:
    return next(line for line in ACTION_FORMATS.splitlines() if f'"{kind}"' in line)


def parse_reply(text: str | None) -> ParsedReply:
    """The first valid action in a model reply, or ReplyError saying precisely what is wrong.

    Accepts a bare JSON object, JSON in ```json / ``` fences, JSON with prose before or after
    it, OpenEnv's {"action": {...}} wrapping and the near-misses `_normalise` repairs. Keys an
    action does not have ("thought", ...) are dropped.
    """
    if text is None or not text.strip():
        raise ReplyError("the reply was empty")
    objects = [_normalise(o) for o in _json_objects(text)]
    if not objects:
        if "{" not in text:
            raise ReplyError("no JSON object found in the reply")
        try:
            _DECODER.raw_decode(text, text.index("{"))
        except ValueError as exc:
            raise ReplyError(f"the reply holds no valid JSON object (the first '{{' does not parse: "
                             f"{exc}; check quotes, escapes and closing braces)") from None
        raise ReplyError("the reply holds no JSON object")
    first_error: ReplyError | None = None
    valid: list[AnyAction] = []
    for obj in objects:
        if "action_type" not in obj:
            continue
        try:
            valid.append(_validate(obj))
        except ReplyError as exc:
            first_error = first_error or exc
    if valid:
        return ParsedReply(valid[0], ignored=len(valid) - 1)
    if first_error is not None:
        raise first_error
    keys = ", ".join(sorted(objects[0])[:6]) or "none"
    raise ReplyError(f"the JSON object has no action_type (keys: {keys}); "
                     f"action_type must be one of: {', '.join(ACTION_TYPES)}")


def corrective_message(error: str, truncated: bool = False) -> str:
    """The user message that asks the model to fix an unusable reply."""
    cut = (" Your reply was cut off at the token limit: keep it shorter (one action, brief "
           "prose).") if truncated else ""
    return (f"Your reply could not be used: {error}.{cut}\n"
            "Reply with exactly one action as a JSON object (a ```json fence is fine), one of:\n"
            f"{ACTION_FORMATS}")


# --------------------------------------------------------------------------- log lines
def _one_line(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def action_label(action: AnyAction) -> str:
    """A compact one-line label: read_file(train.py), execute_bash(python train.py), ..."""
    if isinstance(action, ReadFile | EditFile):
        arg = action.filename
    elif isinstance(action, ExecuteBash):
        arg = _one_line(action.command, 60)
    elif isinstance(action, ViewGitDiff):
        arg = action.filename or ""
    else:
        arg = f"{len(action.explanation)} chars"
    return f"{action.action_type}({_one_line(arg, 80)})"


def _b(v: bool) -> str:
    return "true" if v else "false"


def start_line(task: str, model: str) -> str:
    return f"[START] task={task} env={BENCHMARK} model={model}"


def step_line(n: int, action: str, reward: float, done: bool, error: str | None) -> str:
    err = _one_line(error, 200) if error else "null"
    return f"[STEP] step={n} action={action} reward={reward:.2f} done={_b(done)} error={err}"


def end_line(success: bool, steps: int, score: float, rewards: list[float]) -> str:
    return (f"[END] success={_b(success)} steps={steps} score={score:.3f} "
            f"rewards={','.join(f'{r:.2f}' for r in rewards)}")


def _stdout(line: str) -> None:
    print(line, flush=True)


def _note(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- prompts
def truncate_middle(text: str, limit: int) -> str:
    """Keep the head and the tail of ``text`` within ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 5
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n... [{cut} of {len(text)} chars cut] ...\n{text[-tail:]}"


def render_observation(obs: Observation, label: str, cfg: AgentConfig, note: str = "") -> str:
    """The new information of one step, compact: output (head + tail), files of this step, status."""
    lines = [f"Step {obs.step_number}/{obs.max_steps} ({obs.budget_remaining} left): {label} -> "
             f"reward {obs.reward:+.2f}, run_status={obs.run_status}, system_status={obs.system_status}"]
    if note:
        lines.append(f"Note: {note}")
    if obs.last_action_error:
        lines.append(f"Error: {truncate_middle(obs.last_action_error, 1000)}")
    output = obs.terminal_output
    for path, text in obs.current_files.items():
        if text and text in output:
            output = output.replace(text, f"[content of {path} shown below]")
    only_files = not re.sub(r"\[content of \S+ shown below\]", "", output).strip()
    if output.strip() and output != obs.last_action_error and not only_files:
        lines.append("Output:\n" + truncate_middle(output.strip("\n"), cfg.max_output_chars))
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
        s += f", error: {_one_line(obs.last_action_error, 100)}"
    elif obs.current_files and label.startswith("read_file"):
        s += f", files shown: {', '.join(obs.current_files)}"
    else:
        lines = [ln for ln in obs.terminal_output.splitlines()
                 if ln.strip() and not ln.startswith(("[mock]", "[exit code", "[note]", "$ "))]
        key = next((ln for ln in reversed(lines) if re.search(r"error|exception|fail", ln, re.I)),
                   lines[-1] if lines else "")
        if key:
            s += f", output: {_one_line(key, 120)}"
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


def intro_message(obs: Observation, run_command: str | None, max_chars: int) -> str:
    if run_command is None:
        m = re.search(r"Reproduce with: (.+)", obs.terminal_output)
        run_command = m.group(1).strip() if m else "(see the incident report)"
    files = obs.files or sorted(obs.current_files)
    return (f"Task: {obs.task_name} (step budget: {obs.max_steps})\n"
            f"Incident report:\n{truncate_middle(obs.task_description.strip(), max_chars)}\n\n"
            f"Files in the workspace (contents not shown; use read_file): {', '.join(files)}\n"
            f"Run command: {run_command}\n"
            "Reply with your first action.")


# --------------------------------------------------------------------------- model calls
def make_llm_client(cfg: AgentConfig) -> OpenAI:
    """An OpenAI SDK client for the configured endpoint; retries are ours (with backoff)."""
    try:
        from openai import OpenAI
    except ImportError:
        raise AgentConfigError("the agent needs the openai SDK: pip install 'sandbox-env[llm]'") from None

    return OpenAI(base_url=cfg.api_base_url, api_key=cfg.require_key(),
                  timeout=cfg.request_timeout_s, max_retries=0)


@dataclass
class Completion:
    text: str
    truncated: bool


def complete(llm: OpenAI, messages: list[dict[str, str]], cfg: AgentConfig,
             sleep: Callable[[float], None] = time.sleep) -> Completion:
    """One chat completion; connection errors, timeouts, 429 and 5xx are retried with backoff."""
    import openai

    kwargs: dict[str, Any] = {"model": cfg.model, "messages": messages,
                              "temperature": cfg.temperature, "max_tokens": cfg.max_tokens}
    if cfg.seed is not None:
        kwargs["seed"] = cfg.seed
    for attempt in range(cfg.llm_retries + 1):
        try:
            reply = llm.chat.completions.create(**kwargs)
        except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as exc:
            if attempt == cfg.llm_retries:
                raise LLMError(f"model API failed after {attempt + 1} attempts: {exc}") from exc
            delay = min(30.0, cfg.retry_backoff_s * 2 ** attempt)
            _note(f"[agent] model API error ({type(exc).__name__}: {_one_line(str(exc), 160)}); "
                  f"retry {attempt + 1}/{cfg.llm_retries} in {delay:.1f}s")
            sleep(delay)
            continue
        except openai.APIStatusError as exc:
            raise LLMError(f"model API refused the request: HTTP {exc.status_code}: "
                           f"{_one_line(str(exc), 300)}") from exc
        if not reply.choices:
            return Completion("", False)
        choice = reply.choices[0]
        return Completion(choice.message.content or "", choice.finish_reason == "length")
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------- one episode
def _final_score(client: TriageClient, obs: Observation | None) -> float:
    if obs is not None and obs.done and obs.score is not None:
        return clamp_score(obs.score)
    try:
        st = client.state()
    except (EnvClientError, httpx.HTTPError):
        return SCORE_MIN
    return clamp_score(st.score) if st.done and st.score is not None else SCORE_MIN


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


class _Log:
    """Bookkeeping of an episode's turns and its [STEP] lines."""

    def __init__(self, res: EpisodeResult, emit: Emit) -> None:
        self.res, self.emit = res, emit

    def turn(self, label: str, reward: float, done: bool, error: str | None, env_step: bool) -> None:
        r = self.res
        r.steps += 1
        r.env_steps += env_step
        r.rewards.append(reward)
        r.actions.append(label)
        self.emit(step_line(r.steps, label, reward, done, error))


def run_episode(client: TriageClient, llm: OpenAI, task: str, cfg: AgentConfig, *,
                emit: Emit = _stdout, run_command: str | None = None, close: bool = True,
                sleep: Callable[[float], None] = time.sleep) -> EpisodeResult:
    """Play one episode of ``task``: [START], one [STEP] per turn, [END]; never raises for the episode.

    A reply without a usable action gets one corrective retry; if that fails too, the turn is
    logged with its error (action=invalid, reward 0), no action is sent to the environment, and
    the next turn starts fresh. ``max_consecutive_failures`` such turns in a row end the episode.
    """
    t0 = time.monotonic()
    res = EpisodeResult(task=task, model=cfg.model)
    log = _Log(res, emit)
    emit(start_line(task, cfg.model))
    obs: Observation | None = None
    try:
        obs = client.reset(task=task, seed=cfg.seed).observation
        res.episode_id = obs.episode_id
        conv = Conversation(cfg, intro_message(obs, run_command, cfg.max_file_chars))
        max_turns = cfg.max_turns or obs.max_steps + cfg.max_consecutive_failures
        failures = 0
        while not obs.done and res.steps < max_turns:
            reply = ask_for_action(llm, conv.messages(), cfg, sleep)
            res.llm_calls += reply.calls
            if reply.parsed is None:
                failures += 1
                res.failed_turns += 1
                err = reply.error or "unusable reply"
                log.turn("invalid", 0.0, False, f"unusable reply after one corrective retry: {err}", False)
                conv.add(truncate_middle(reply.text or "(empty)", 400),
                         corrective_message(err, reply.truncated)
                         + "\n(No action was taken; the workspace is unchanged.)",
                         f"turn {res.steps}: unusable reply ({_one_line(err, 80)}); no action taken")
                if failures >= cfg.max_consecutive_failures:
                    res.error = f"{failures} unusable replies in a row; episode stopped"
                    break
                continue
            failures = 0
            label = action_label(reply.parsed.action)
            try:
                step = client.step(reply.parsed.action.model_dump(exclude={"metadata"}))
            except EnvClientError as exc:
                log.turn(label, 0.0, False, f"environment refused the action: {exc}", False)
                if exc.status in (404, 409, 503):
                    res.error = f"environment error: {exc}"
                    break
                conv.add(reply.text, f"The environment refused the action: {exc.detail}",
                         f"turn {res.steps}: {label} refused by the environment")
                continue
            obs = step.observation
            log.turn(label, step.reward, step.done, obs.last_action_error, True)
            note = (f"your reply held {reply.parsed.ignored + 1} actions; only the first was "
                    "executed. Send one action per reply.") if reply.parsed.ignored else ""
            conv.add(reply.text, render_observation(obs, label, cfg, note),
                     summarize_observation(res.steps, label, obs))
        if not obs.done and res.error is None:
            res.error = f"turn limit {max_turns} reached before the episode ended"
    except LLMError as exc:
        res.error = str(exc)
    except (EnvClientError, httpx.HTTPError) as exc:
        res.error = f"environment error: {exc}"
    if res.error:
        _note(f"[agent] {task}: {res.error}")
    res.done = bool(obs is not None and obs.done)
    res.success = bool(obs is not None and obs.verdict is not None and obs.verdict.passed)
    res.score = _final_score(client, obs) if obs is not None else SCORE_MIN
    if close:
        try:
            client.close_episode()
        except (EnvClientError, httpx.HTTPError):
            pass
    res.duration_s = round(time.monotonic() - t0, 3)
    emit(end_line(res.success, res.steps, res.score, res.rewards))
    return res


# --------------------------------------------------------------------------- a whole run
def wait_for_env(client: TriageClient, timeout_s: float, poll_s: float = 1.0) -> dict[str, Any]:
    """Poll GET /health until it answers 200 (HF Spaces cold-start) or raise EnvUnavailable."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    while True:
        try:
            return client.health()
        except (EnvClientError, httpx.HTTPError) as exc:
            last = f"{type(exc).__name__}: {exc}"
        if time.monotonic() >= deadline:
            raise EnvUnavailable(f"environment did not answer /health within {timeout_s:.0f}s ({last})")
        time.sleep(poll_s)


def resolve_tasks(client: TriageClient, wanted: list[str] | None) -> list[dict[str, Any]]:
    """The server's task rows, all or the wanted ones (in the order given)."""
    rows = client.tasks()
    if not wanted:
        return rows
    by_id = {r["id"]: r for r in rows}
    unknown = [t for t in wanted if t not in by_id]
    if unknown:
        raise AgentConfigError(f"unknown task(s) {', '.join(unknown)}; the server has: "
                               f"{', '.join(by_id)}")
    return [by_id[t] for t in wanted]


def run_agent(cfg: AgentConfig, emit: Emit = _stdout, llm: OpenAI | None = None) -> RunSummary:
    """Wait for the environment, then play every selected task once; the summary goes to stderr."""
    llm = llm or make_llm_client(cfg)
    summary = RunSummary(model=cfg.model, env_url=cfg.env_url)
    with TriageClient(cfg.env_url, timeout=cfg.env_timeout_s) as client:
        wait_for_env(client, cfg.health_timeout_s)
        for row in resolve_tasks(client, cfg.tasks):
            summary.episodes.append(run_episode(client, llm, row["id"], cfg, emit=emit,
                                                run_command=row.get("run_command")))
    _note(f"[summary] model={cfg.model} tasks={len(summary.episodes)} "
          f"verified={summary.verified}/{len(summary.episodes)} mean_score={summary.mean_score:.3f}")
    for e in summary.episodes:
        _note(f"[summary]   {e.task}: score={e.score:.3f} success={_b(e.success)} steps={e.steps}"
              + (f" error={e.error}" if e.error else ""))
    return summary


def main(json_out: str | Path | None = None, environ: Mapping[str, str] | None = None,
         **overrides: Any) -> int:
    """Entry point of `sandbox-env agent` and inference.py: 0 if it ran (whatever the scores),
    2 on a configuration error, 1 when the environment never came up.

    The configuration comes from the environment variables, ``overrides`` (None: not given) win.
    """
    cfg: AgentConfig | None = None
    try:
        cfg = AgentConfig.from_env(environ, **overrides)
        cfg.require_key()
        summary = run_agent(cfg)
    except AgentConfigError as exc:
        _note(f"error: {exc}")
        return 2
    except (EnvUnavailable, EnvClientError, httpx.HTTPError) as exc:
        _note(f"error: environment {cfg.env_url if cfg else '?'}: {exc}")
        return 1
    if json_out:
        Path(json_out).write_text(summary.model_dump_json(indent=2) + "\n")
        _note(f"[summary] written to {json_out}")
    return 0
