"""Poisson GLM with categorical effects (the planners' linear baseline)."""

from __future__ import annotations

import math

import torch
from torch import nn

from countcast.config.sections import ModelSection
from countcast.models.base import CountModel
from countcast.models.factory import MODELS


@MODELS.register("glm", "linear")
class PoissonGLM(CountModel):
    def __init__(self, cardinalities: dict[str, int], num_features: int, mean_rate: float) -> None:
        super().__init__()
        self.effects = nn.ModuleDict({c: nn.Embedding(n, 1) for c, n in cardinalities.items()})
        for e in self.effects.values():
            nn.init.zeros_(e.weight)
        self.coef = nn.Linear(num_features, 1)
        nn.init.zeros_(self.coef.weight)
        with torch.no_grad():
            self.coef.bias.fill_(math.log(max(mean_rate, 1e-3)))

    @classmethod
    def from_config(cls, cfg: ModelSection, cardinalities, num_features, mean_rate):
        return cls(cardinalities, num_features, mean_rate)

    def linear_predictor(self, cat: torch.Tensor, num: torch.Tensor) -> torch.Tensor:
        eta = self.coef(num).squeeze(-1)
        for j, name in enumerate(self.effects):
            eta = eta + self.effects[name](cat[:, j]).squeeze(-1)
        return eta
