"""MLP on embeddings + numeric features, with a log link."""

from __future__ import annotations

import torch
from torch import nn

from countcast.config.sections import ModelSection
from countcast.models.base import CountModel
from countcast.models.embeddings import CategoricalEmbeddings
from countcast.models.factory import MODELS
from countcast.nn.init import init_output
from countcast.nn.layers import Dense, ResidualDense


@MODELS.register("mlp")
class CountMLP(CountModel):
    def __init__(self, cardinalities: dict[str, int], num_features: int, mean_rate: float,
                 hidden_dim: int = 32, depth: int = 2, act: str = "silu", embed_dim: int = 4,
                 dropout: float = 0.0, residual: bool = False) -> None:
        super().__init__()
        self.embed = CategoricalEmbeddings(cardinalities, embed_dim)
        d_in = self.embed.out_dim + num_features
        blocks: list[nn.Module] = [Dense(d_in, hidden_dim, act, dropout)]
        for _ in range(depth - 1):
            blocks.append(ResidualDense(hidden_dim, act, dropout) if residual else Dense(hidden_dim, hidden_dim, act, dropout))
        self.body = nn.Sequential(*blocks)
        self.out = nn.Linear(hidden_dim, 1)
        init_output(self.out, mean_rate)

    @classmethod
    def from_config(cls, cfg: ModelSection, cardinalities, num_features, mean_rate):
        return cls(cardinalities, num_features, mean_rate, hidden_dim=cfg.hidden_dim, depth=cfg.depth,
                   act=cfg.activation, embed_dim=cfg.embed_dim, dropout=cfg.dropout)

    def linear_predictor(self, cat: torch.Tensor, num: torch.Tensor) -> torch.Tensor:
        h = torch.cat([self.embed(cat), num], dim=1)
        return self.out(self.body(h)).squeeze(-1)


@MODELS.register("resmlp")
class ResidualCountMLP(CountMLP):
    @classmethod
    def from_config(cls, cfg: ModelSection, cardinalities, num_features, mean_rate):
        return cls(cardinalities, num_features, mean_rate, hidden_dim=cfg.hidden_dim, depth=cfg.depth,
                   act=cfg.activation, embed_dim=cfg.embed_dim, dropout=cfg.dropout, residual=True)
