"""The churn scorer and its registered architectures."""

from __future__ import annotations

from torch import nn

from config import TrainConfig
from layers import FeatureModule, ResidualBlock
from registry import MODELS


class ChurnScorer(nn.Module):
    def __init__(self, n_features: int, n_classes: int, hidden_dim: int, depth: int, residual: bool) -> None:
        super().__init__()
        self.feature_module = FeatureModule(n_features, hidden_dim)
        if residual:
            self.blocks = nn.Sequential(*[ResidualBlock(hidden_dim) for _ in range(depth)])
        else:
            self.blocks = nn.Sequential(*[nn.Sequential(nn.Linear(hidden_dim, hidden_dim), nn.BatchNorm1d(hidden_dim),
                                                        nn.ReLU()) for _ in range(depth)])
        self.head = nn.Linear(hidden_dim, n_classes)

    def forward(self, x):
        return self.head(self.blocks(self.feature_module(x)))


@MODELS.register("resmlp")
def resmlp(cfg: TrainConfig) -> ChurnScorer:
    return ChurnScorer(cfg.n_features, cfg.n_classes, cfg.hidden_dim, cfg.depth, residual=True)


@MODELS.register("mlp")
def mlp(cfg: TrainConfig) -> ChurnScorer:
    return ChurnScorer(cfg.n_features, cfg.n_classes, cfg.hidden_dim, cfg.depth, residual=False)


def build_model(cfg: TrainConfig) -> ChurnScorer:
    return MODELS.get(cfg.arch)(cfg)
