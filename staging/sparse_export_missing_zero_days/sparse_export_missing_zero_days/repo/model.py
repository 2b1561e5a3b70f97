"""DemandNet: a small MLP over history features, weekday, promotion and store / item embeddings; it
predicts the log of the expected units of a store-item-day."""

from __future__ import annotations

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, width_in: int, width: int, dropout: float) -> None:
        super().__init__()
        self.linear = nn.Linear(width_in, width)
        self.norm = nn.LayerNorm(width)
        self.act = nn.GELU()
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.act(self.norm(self.linear(x))))


class DemandNet(nn.Module):
    def __init__(self, n_history: int, n_stores: int, n_items: int, emb_dim: int, hidden_dim: int, depth: int,
                 dropout: float, base_rate: float) -> None:
        super().__init__()
        self.store_emb = nn.Embedding(n_stores, emb_dim)
        self.item_emb = nn.Embedding(n_items, emb_dim)
        width = n_history + 7 + 1 + 2 * emb_dim
        blocks = []
        for _ in range(depth):
            blocks.append(Block(width, hidden_dim, dropout))
            width = hidden_dim
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(width, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.constant_(self.head.bias, float(torch.log(torch.tensor(base_rate))))

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        x = torch.cat([batch["history"], nn.functional.one_hot(batch["weekday"], 7).float(),
                       batch["promo"].unsqueeze(-1), self.store_emb(batch["store"]), self.item_emb(batch["item"])],
                      dim=-1)
        return self.head(self.blocks(x)).squeeze(-1)


def build_model(cfg, n_history: int, n_stores: int, n_items: int, base_rate: float) -> DemandNet:
    return DemandNet(n_history, n_stores, n_items, cfg.emb_dim, cfg.hidden_dim, cfg.depth, cfg.dropout, base_rate)
