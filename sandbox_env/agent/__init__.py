"""Baseline LLM agent: plays sandbox-env episodes over HTTP with an OpenAI-compatible chat model.

One job per module: `config` (AgentConfig, the environment variables, the API key's order),
`replies` (the action in a model reply), `prompts` (what the model is shown), `model_client`
(the OpenAI client and retried completions), `loop` (one episode), `report` (results and the
[START]/[STEP]/[END] lines), `run` (a whole run and `main`, the entry point), `text` (trimming).
"""

from __future__ import annotations

from .config import (
    API_KEY_VARS,
    DEFAULT_API_BASE_URL,
    DEFAULT_ENV_URL,
    DEFAULT_MODEL,
    AgentConfig,
    AgentConfigError,
    api_key_from_env,
)
from .loop import TurnReply, ask_for_action, run_episode
from .model_client import Completion, LLMError, complete, make_llm_client
from .prompts import (
    SYSTEM_PROMPT,
    Conversation,
    corrective_message,
    intro_message,
    render_observation,
    summarize_observation,
)
from .replies import ACTION_FORMATS, AnyAction, ParsedReply, ReplyError, parse_reply
from .report import BENCHMARK, Emit, EpisodeResult, RunSummary, action_label, end_line, start_line, step_line
from .run import EnvUnavailable, main, resolve_tasks, run_agent, wait_for_env
from .text import one_line, truncate_middle

__all__ = [
    "ACTION_FORMATS", "API_KEY_VARS", "BENCHMARK", "DEFAULT_API_BASE_URL", "DEFAULT_ENV_URL",
    "DEFAULT_MODEL", "SYSTEM_PROMPT", "AgentConfig", "AgentConfigError", "AnyAction", "Completion",
    "Conversation", "Emit", "EnvUnavailable", "EpisodeResult", "LLMError", "ParsedReply", "ReplyError",
    "RunSummary", "TurnReply", "action_label", "api_key_from_env", "ask_for_action", "complete",
    "corrective_message", "end_line", "intro_message", "main", "make_llm_client", "one_line",
    "parse_reply", "render_observation", "resolve_tasks", "run_agent", "run_episode", "start_line",
    "step_line", "summarize_observation", "truncate_middle", "wait_for_env",
]
