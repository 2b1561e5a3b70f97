"""The session encoder: event embeddings -> encoder blocks -> masked mean pooling -> intent logits."""

from __future__ import annotations

import torch
from torch import nn

from config import TrainConfig
from layers import EncoderBlock
from position import RelativePositionBias
from registry import MODELS


class SessionEncoder(nn.Module):
    def __init__(self, cfg: TrainConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=0)
        self.rel_bias = RelativePositionBias(cfg.n_heads, cfg.rel_buckets, cfg.rel_max_distance)
        self.blocks = nn.ModuleList(EncoderBlock(cfg.d_model, cfg.n_heads, cfg.ff_mult) for _ in range(cfg.depth))
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.n_classes)

    def forward(self, events: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.embed(events)
        bias = self.rel_bias(events.shape[1])
        for block in self.blocks:
            x = block(x, mask, bias)
        keep = mask.unsqueeze(-1).to(x.dtype)
        pooled = (self.norm(x) * keep).sum(dim=1) / keep.sum(dim=1)
        return self.head(pooled)


@MODELS.register("session_encoder")
def session_encoder(cfg: TrainConfig) -> nn.Module:
    return SessionEncoder(cfg)


def build_model(cfg: TrainConfig) -> nn.Module:
    return MODELS.get(cfg.model)(cfg)
