"""A real TRL ``GRPOTrainer`` step on CPU over sandbox-env episodes, in process and on a live server.

Nothing is downloaded (``HF_HUB_OFFLINE=1``): the tokenizer is a byte-level BPE trained here with
``tokenizers`` on the task repositories' text and wears TRL's own Qwen3 chat template (so TRL
recognises it and parses tool calls); the model is a one-layer Qwen2 built from a config. A random
model that small almost never writes a valid tool call, so the module first fits it, for a few
hundred supervised steps (to a loss below 0.001: rollouts sample ~30 tokens), to answer the
rendered episode prompt with one ``submit_fix`` call. GRPO then runs as a user would run it:
``environment_factory=TriageToolEnv``, ``reward_fn``, one optimiser step, and the rollouts call
the environment's tool for real.

Needs the ``trl`` extra (``bash scripts/setup.sh dev,torch,trl``). Without it the module is
skipped, except under ``CI=true``, where a missing TRL is a failure.
"""

from __future__ import annotations

import copy
import gc
import inspect
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sandbox_env.trl import URL_ENV_VARS, TriageToolEnv, reward_fn

from .conftest import ROOT, start_server

if os.environ.get("CI", "").lower() == "true":
    import trl  # noqa: F401  (in CI a missing TRL is an error, not a skip)
else:
    pytest.importorskip("trl", reason="needs the trl extra: bash scripts/setup.sh dev,torch,trl")

import huggingface_hub.constants
import torch
from datasets import Dataset
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
from trl import GRPOConfig, GRPOTrainer
from trl.chat_template_utils import qwen3_chat_template

TASKS = ["oom_graph_leak", "compile_graph_break"]
PROMPT = "Debug this training job with the tools; call submit_fix when you know the root cause."
CHAT_KWARGS = {"enable_thinking": False}
CALL = json.dumps({"name": "submit_fix", "arguments": {"explanation": "The loss keeps its graph alive."}})
COMPLETION = f"<tool_call>\n{CALL}\n</tool_call><|im_end|>"
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MARKUP = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]
NUM_GENERATIONS = 2
ROLLOUTS = len(TASKS) * NUM_GENERATIONS  # one batch: every row, NUM_GENERATIONS completions each


def build_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level BPE (any text encodes) trained on the task repos, with TRL's Qwen3 template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    # the task repos only (not checks or classifiers, which change often): a stable vocabulary
    texts = [p.read_text(errors="replace") for p in sorted((ROOT / "task_repos").glob("*/repo/**/*.py"))]
    texts += [PROMPT, COMPLETION, *((ROOT / "sandbox_env" / f).read_text() for f in ("trl.py", "actions.py"))]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=2000, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                  additional_special_tokens=["<|im_start|>"])
    tok.add_tokens(MARKUP)  # single tokens that decoding keeps, as in Qwen's tokenizers
    tok.chat_template = qwen3_chat_template
    return tok


def fit_tool_call(model: Qwen2ForCausalLM, tok: PreTrainedTokenizerFast) -> float:
    """Fit the random model to answer each task's rendered episode prompt with COMPLETION.

    Only the completion's positions go through the output layer, so a step over a prompt of a
    few thousand tokens is cheap. Returns the last loss.
    """
    env = TriageToolEnv()
    # the tools as GRPOTrainer lists them (public functions of the class, by name): the prompt
    # rendered here must be the rollouts' prompt to the byte, or the fitted answer does not carry
    tools = [getattr(env, name) for name, _ in inspect.getmembers(type(env), inspect.isfunction)
             if name not in ("reset", "get_reward") and not name.startswith("_")]
    pairs = []
    for task in TASKS:
        messages = [{"role": "user", "content": PROMPT + env.reset(task=task)}]  # what TRL builds
        prompt = tok.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False,
                                         **CHAT_KWARGS)
        pairs.append((tok(prompt)["input_ids"], tok(COMPLETION)["input_ids"]))
    env._close()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for step in range(600):
        prompt_ids, target = pairs[step % len(pairs)]
        hidden = model.model(input_ids=torch.tensor([prompt_ids + target[:-1]])).last_hidden_state
        loss = torch.nn.functional.cross_entropy(model.lm_head(hidden[0, len(prompt_ids) - 1:]),
                                                 torch.tensor(target))
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step >= 10 * len(pairs) and loss.item() < 0.001:
            break
    return loss.item()


@pytest.fixture(scope="module")
def tiny(monkeymodule: pytest.MonkeyPatch) -> Iterator[tuple[Qwen2ForCausalLM, PreTrainedTokenizerFast]]:
    """The tokenizer and the fitted model, built once; each test trains its own copy."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # on a shared 2-core machine more threads make this several times slower
    torch.manual_seed(0)
    tok = build_tokenizer()
    model = Qwen2ForCausalLM(Qwen2Config(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8192,
        tie_word_embeddings=True, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id))
    loss = fit_tool_call(model, tok)
    assert loss < 0.01, f"the tiny model did not learn the tool call (loss {loss:.4f})"
    yield model, tok
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def monkeymodule() -> Iterator[pytest.MonkeyPatch]:
    """Module-wide environment: no hub (any request raises), in-process episodes, no LLM judge."""
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # read at call time, unlike the env var
    mp.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    for var in (*URL_ENV_VARS, "SANDBOX_ENV_JUDGE_MODEL"):
        mp.delenv(var, raising=False)
    mp.setenv("SANDBOX_ENV_TASK_ROOT", str(ROOT / "task_repos"))
    yield mp
    mp.undo()


@pytest.fixture(scope="module")
def server_url(monkeymodule: pytest.MonkeyPatch) -> Iterator[str]:
    proc, url = start_server(ROOT / "task_repos", "mock")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def active_sessions(url: str) -> int:
    return httpx.get(url + "/health").json()["active_sessions"]


def grpo_step(tiny: tuple[Qwen2ForCausalLM, PreTrainedTokenizerFast], out: Path,
              scored: list[list[tuple[str | None, bool, float]]]) -> GRPOTrainer:
    """One GRPO step on a copy of the fitted model; ``scored`` gets what the reward function saw."""
    model, tok = tiny

    def reward(environments: list[Any], **kwargs: Any) -> list[float | None]:
        values = reward_fn(environments, **kwargs)
        scored.append([(e.task, e.done, v) for e, v in zip(environments, values, strict=True)])
        return values

    rows = [{"prompt": [{"role": "user", "content": PROMPT}], "task": t} for t in TASKS]
    args = GRPOConfig(
        output_dir=str(out), max_steps=1, per_device_train_batch_size=ROLLOUTS,
        num_generations=NUM_GENERATIONS, max_completion_length=96, max_tool_calling_iterations=1,
        temperature=0.1,  # near-greedy, so the rollouts write the call the model was fitted to
        learning_rate=1e-4, beta=0.0, use_cpu=True, bf16=False, gradient_checkpointing=False,
        chat_template_kwargs=CHAT_KWARGS, logging_steps=1, report_to="none", save_strategy="no", seed=0)
    trainer = GRPOTrainer(model=copy.deepcopy(model), processing_class=tok, reward_funcs=reward,
                          train_dataset=Dataset.from_list(rows), args=args, environment_factory=TriageToolEnv)
    trainer.train()
    return trainer


def check_step(trainer: GRPOTrainer, scored: list[list[tuple[str | None, bool, float]]]) -> None:
    """The step happened, the rollouts called the tool, and the reward function saw the scores."""
    assert trainer.state.global_step == 1
    logged = trainer.state.log_history[0]
    assert logged["step"] == 1 and "loss" in logged and "entropy" in logged
    assert logged["tools/call_frequency"] > 0  # parsed tool calls per rollout, executed by TRL
    assert logged["tools/failure_frequency"] == 0  # none raised (a broken adapter shows up here)
    pool = trainer._environment_pool[None]
    assert len(pool) == ROLLOUTS and all(isinstance(e, TriageToolEnv) for e in pool)
    assert sorted(e.task for e in pool) == sorted(TASKS * NUM_GENERATIONS)  # reset(**row) read `task`
    called = [e for e in pool if e.done]
    assert called, "no rollout called submit_fix"
    for e in called:  # the tool call ran one step and ended the episode with its score
        assert e.observation is not None and e.observation.step_number == 1 and e.score == e.reward > 0
    assert len(scored) == 1 and len(scored[0]) == ROLLOUTS
    assert sorted(scored[0]) == sorted((e.task, e.done, e.reward) for e in pool)
    assert logged["reward"] == pytest.approx(sum(v for *_, v in scored[0]) / ROLLOUTS)


def test_grpo_step_in_process(tiny: tuple[Any, Any], tmp_path: Path) -> None:
    scored: list[list[tuple[str | None, bool, float]]] = []
    trainer = grpo_step(tiny, tmp_path, scored)
    check_step(trainer, scored)


def test_grpo_step_remote_and_sessions_freed(tiny: tuple[Any, Any], tmp_path: Path, server_url: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Over HTTP; TRL never closes its environments, dropping the trainer frees every session."""
    monkeypatch.setenv("SANDBOX_ENV_URL", server_url)
    before = active_sessions(server_url)
    scored: list[list[tuple[str | None, bool, float]]] = []
    trainer = grpo_step(tiny, tmp_path, scored)
    check_step(trainer, scored)
    assert active_sessions(server_url) == before + ROLLOUTS  # one episode per pooled instance
    del trainer
    gc.collect()
    assert active_sessions(server_url) == before  # at once, not after the idle timeout
