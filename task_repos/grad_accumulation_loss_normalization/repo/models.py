"""Model registry and the recurrent next-event model."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from corpus import PAD_ID

MODEL_REGISTRY: dict[str, Callable[..., nn.Module]] = {}


def register_model(name: str) -> Callable:
    def wrap(builder: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        MODEL_REGISTRY[name] = builder
        return builder
    return wrap


class GRULanguageModel(nn.Module):
    """Embedding -> one GRU layer -> vocabulary logits at every position (causal by construction)."""

    def __init__(self, vocab_size: int, embed_dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_dim, padding_idx=PAD_ID)
        self.rnn = nn.GRU(embed_dim, hidden_dim, batch_first=True)
        self.norm = nn.LayerNorm(hidden_dim)
        self.head = nn.Linear(hidden_dim, vocab_size)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.rnn(self.embed(input_ids))
        return self.head(self.norm(hidden))


@register_model("gru_lm")
def gru_lm(cfg) -> nn.Module:
    return GRULanguageModel(cfg.vocab_size, cfg.embed_dim, cfg.hidden_dim)


def build_model(cfg) -> nn.Module:
    if cfg.arch not in MODEL_REGISTRY:
        raise KeyError(f"unknown arch {cfg.arch!r}; registered: {sorted(MODEL_REGISTRY)}")
    return MODEL_REGISTRY[cfg.arch](cfg)
