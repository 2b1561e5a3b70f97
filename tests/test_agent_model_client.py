"""sandbox_env.agent.model_client: the one OpenAI client builder (the key's order included, shared with
the eval's llm policy) and chat completions retried with backoff on connection errors, 429 and 5xx."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import httpx
import openai
import pytest

from sandbox_env.agent import AgentConfig, AgentConfigError, Completion, LLMError, complete, make_llm_client
from sandbox_env.eval import LLMAgent, make_agent

REQUEST = httpx.Request("POST", "http://model.test/v1/chat/completions")
MESSAGES = [{"role": "user", "content": "hi"}]


def status_error(cls: type[openai.APIStatusError], code: int) -> openai.APIStatusError:
    return cls(f"scripted {code}", response=httpx.Response(code, request=REQUEST), body=None)


def chat_reply(content: str | None, finish_reason: str = "stop") -> Any:
    return SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=content),
                                                    finish_reason=finish_reason)])


class FakeLLM:
    """`llm.chat.completions.create(**kwargs)` answering from a script; exceptions are raised."""

    def __init__(self, *script: Any) -> None:
        self.script = list(script)
        self.calls: list[dict[str, Any]] = []
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item


def cfg(**kw: Any) -> AgentConfig:
    return AgentConfig.model_validate({"api_key": "k", "model": "m", "retry_backoff_s": 1.0, **kw})


def test_retryable_errors_back_off_exponentially_then_succeed() -> None:
    llm = FakeLLM(openai.APIConnectionError(request=REQUEST), status_error(openai.RateLimitError, 429),
                  status_error(openai.InternalServerError, 503), chat_reply("ok"))
    delays: list[float] = []
    out = complete(llm, MESSAGES, cfg(llm_retries=3, seed=5), delays.append)  # type: ignore[arg-type]
    assert out == Completion("ok", False) and delays == [1.0, 2.0, 4.0]
    assert llm.calls[0] == {"model": "m", "messages": MESSAGES, "temperature": 0.0, "max_tokens": 2048,
                            "seed": 5}
    assert all(c == llm.calls[0] for c in llm.calls)


def test_retries_give_up_and_the_backoff_is_capped() -> None:
    llm = FakeLLM(*[status_error(openai.InternalServerError, 500)] * 4)
    delays: list[float] = []
    with pytest.raises(LLMError, match="model API failed after 4 attempts"):
        complete(llm, MESSAGES, cfg(llm_retries=3, retry_backoff_s=20.0), delays.append)  # type: ignore[arg-type]
    assert delays == [20.0, 30.0, 30.0] and len(llm.calls) == 4


def test_a_refused_request_is_not_retried() -> None:
    llm = FakeLLM(status_error(openai.BadRequestError, 400))
    with pytest.raises(LLMError, match="model API refused the request: HTTP 400"):
        complete(llm, MESSAGES, cfg(), lambda _: pytest.fail("no retry expected"))  # type: ignore[arg-type]
    assert len(llm.calls) == 1


def test_completion_text_and_truncation() -> None:
    assert complete(FakeLLM(chat_reply("abc", "length")), MESSAGES, cfg()) == Completion("abc", True)  # type: ignore[arg-type]
    assert complete(FakeLLM(chat_reply(None)), MESSAGES, cfg()) == Completion("", False)  # type: ignore[arg-type]
    assert complete(FakeLLM(SimpleNamespace(choices=[])), MESSAGES, cfg()) == Completion("", False)  # type: ignore[arg-type]
    llm = FakeLLM(chat_reply("x"))
    complete(llm, MESSAGES, cfg())  # type: ignore[arg-type]
    assert "seed" not in llm.calls[0]


def test_the_client_builder_uses_the_configured_endpoint_and_key() -> None:
    c = cfg(api_base_url="http://model.test/v1", request_timeout_s=7.0)
    client = make_llm_client(c)
    assert client.api_key == "k" and str(client.base_url) == "http://model.test/v1/"
    assert client.max_retries == 0 and client.timeout == 7.0  # our retries, not the SDK's
    with pytest.raises(AgentConfigError, match="no API key"):
        make_llm_client(AgentConfig())


def test_agent_and_eval_policy_build_the_client_alike_hf_token_first() -> None:
    environ = {"OPENAI_API_KEY": "sk-1", "HF_TOKEN": "hf-1", "API_BASE_URL": "http://model.test/v1"}
    assert make_llm_client(AgentConfig.from_env(environ)).api_key == "hf-1"
    agent = make_agent("llm", environ=environ)
    assert isinstance(agent, LLMAgent) and agent.llm.api_key == "hf-1"
    assert str(agent.llm.base_url) == "http://model.test/v1/" and agent.llm.max_retries == 0
    assert make_agent("llm", environ={"OPENAI_API_KEY": "sk-1"}).llm.api_key == "sk-1"  # type: ignore[attr-defined]
