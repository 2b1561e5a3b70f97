"""sandbox_env.agent.config: defaults, the seed's environment variables, overrides, the API key's order."""

from __future__ import annotations

import pytest

from sandbox_env.agent import API_KEY_VARS, AgentConfig, AgentConfigError, api_key_from_env


def test_config_from_env_and_overrides() -> None:
    cfg = AgentConfig.from_env({})
    assert (cfg.api_base_url, cfg.model, cfg.env_url) == (
        "https://router.huggingface.co/v1", "Qwen/Qwen2.5-72B-Instruct", "http://localhost:8000")
    assert cfg.api_key is None and cfg.tasks is None and cfg.health_timeout_s == 120
    env = {"API_BASE_URL": "http://x/v1", "MODEL_NAME": "m", "OPENAI_API_KEY": "sk-1", "ENV_URL": "http://e",
           "TASKS": " a, b ,", "SEED": "7"}
    cfg = AgentConfig.from_env(env, model=None, seed=3)
    assert (cfg.api_base_url, cfg.model, cfg.env_url, cfg.tasks, cfg.seed) == (
        "http://x/v1", "m", "http://e", ["a", "b"], 3)
    assert cfg.require_key() == "sk-1" and "sk-1" not in repr(cfg)
    assert AgentConfig.from_env({**env, "HF_TOKEN": "hf-1"}).require_key() == "hf-1"


def test_the_api_key_comes_from_hf_token_then_openai_api_key() -> None:
    assert API_KEY_VARS == ("HF_TOKEN", "OPENAI_API_KEY")
    assert api_key_from_env({"HF_TOKEN": "hf-1", "OPENAI_API_KEY": "sk-1"}) == "hf-1"
    assert api_key_from_env({"OPENAI_API_KEY": "sk-1"}) == "sk-1"
    assert api_key_from_env({"HF_TOKEN": "", "OPENAI_API_KEY": "sk-1"}) == "sk-1"  # empty: not set
    assert api_key_from_env({"HF_TOKEN": "", "OPENAI_API_KEY": ""}) is None
    cfg = AgentConfig.from_env({"OPENAI_API_KEY": "sk-1", "HF_TOKEN": "hf-1"})
    assert cfg.require_key() == "hf-1"
    assert AgentConfig.from_env({"HF_TOKEN": "hf-1"}, api_key="override").require_key() == "override"


def test_missing_key_and_bad_values_are_configuration_errors() -> None:
    with pytest.raises(AgentConfigError, match=r"no API key: set HF_TOKEN \(or OPENAI_API_KEY\) for "
                                                r"the model endpoint https://router\.huggingface\.co/v1"):
        AgentConfig.from_env({}).require_key()
    with pytest.raises(AgentConfigError, match="no API key"):
        AgentConfig(api_key="  ").require_key()
    with pytest.raises(AgentConfigError, match="invalid agent configuration"):
        AgentConfig.from_env({"SEED": "seven"})
    with pytest.raises(AgentConfigError, match="invalid agent configuration"):
        AgentConfig.from_env({}, temperature=5.0)
    assert AgentConfig.from_env({"TASKS": " , "}).tasks is None
