"""The model client: the one OpenAI-SDK client builder, and chat completions retried with backoff."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .config import AgentConfig, AgentConfigError
from .report import note
from .text import one_line

if TYPE_CHECKING:
    from openai import OpenAI


class LLMError(RuntimeError):
    """The model API failed for good (after retries, or with a non-retryable error)."""


def make_llm_client(cfg: AgentConfig) -> OpenAI:
    """An OpenAI SDK client for the configured endpoint and key (AgentConfig.from_env reads it from
    HF_TOKEN, then OPENAI_API_KEY); the SDK's own retries are off, `complete` retries with backoff."""
    try:
        from openai import OpenAI
    except ImportError:
        raise AgentConfigError("the agent needs the openai SDK: pip install 'sandbox-env[llm]'") from None

    return OpenAI(base_url=cfg.api_base_url, api_key=cfg.require_key(),
                  timeout=cfg.request_timeout_s, max_retries=0)


@dataclass
class Completion:
    """A reply's text, and whether the token limit cut it off."""

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
            note(f"[agent] model API error ({type(exc).__name__}: {one_line(str(exc), 160)}); "
                 f"retry {attempt + 1}/{cfg.llm_retries} in {delay:.1f}s")
            sleep(delay)
            continue
        except openai.APIStatusError as exc:
            raise LLMError(f"model API refused the request: HTTP {exc.status_code}: "
                           f"{one_line(str(exc), 300)}") from exc
        if not reply.choices:
            return Completion("", False)
        choice = reply.choices[0]
        return Completion(choice.message.content or "", choice.finish_reason == "length")
    raise AssertionError("unreachable")
