"""Ticket classifiers: token ids (padded with 0) -> queue logits."""

from __future__ import annotations

import torch
from torch import nn

from config import TrainConfig
from registry import MODELS


@MODELS.register("bag_mlp")
class BagOfTokensClassifier(nn.Module):
    """Mean of the token embeddings (padding excluded), then a two-layer MLP."""

    def __init__(self, cfg: TrainConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.embed_dim, padding_idx=0)
        self.mlp = nn.Sequential(nn.Linear(cfg.embed_dim, cfg.hidden_dim), nn.GELU(),
                                 nn.Linear(cfg.hidden_dim, cfg.num_classes))

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        pooled = self.embed(tokens).sum(1) / lengths.clamp(min=1).unsqueeze(1).to(torch.float32)
        return self.mlp(pooled)


@MODELS.register("bag_linear")
class BagOfTokensLinear(nn.Module):
    """The baseline: mean token embedding, one linear layer."""

    def __init__(self, cfg: TrainConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.embed_dim, padding_idx=0)
        self.head = nn.Linear(cfg.embed_dim, cfg.num_classes)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        pooled = self.embed(tokens).sum(1) / lengths.clamp(min=1).unsqueeze(1).to(torch.float32)
        return self.head(pooled)


def build_model(cfg: TrainConfig) -> nn.Module:
    return MODELS.get(cfg.model)(cfg)
