"""The agent's configuration: defaults, the seed's environment variables, and where the API key comes from."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

DEFAULT_API_BASE_URL = "https://router.huggingface.co/v1"
DEFAULT_MODEL = "Qwen/Qwen2.5-72B-Instruct"
DEFAULT_ENV_URL = "http://localhost:8000"

API_KEY_VARS = ("HF_TOKEN", "OPENAI_API_KEY")  # the key's variables, first set (non-empty) one wins


class AgentConfigError(ValueError):
    """The agent cannot start as configured (no API key, unknown task, bad value)."""


def api_key_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """The model API key: the first non-empty one of HF_TOKEN, OPENAI_API_KEY (the seed's order)."""
    env = os.environ if environ is None else environ
    return next((env[var] for var in API_KEY_VARS if env.get(var)), None)


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
            "api_key": api_key_from_env(env),
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
        """The API key, or AgentConfigError saying which variables to set."""
        if self.api_key is None or not self.api_key.get_secret_value().strip():
            raise AgentConfigError(
                f"no API key: set {API_KEY_VARS[0]} (or {API_KEY_VARS[1]}) for the model endpoint "
                f"{self.api_base_url}; a local OpenAI-compatible server accepts any value")
        return self.api_key.get_secret_value()
