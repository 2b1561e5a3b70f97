"""Embeddings of the categorical columns, concatenated."""

from __future__ import annotations

import torch
from torch import nn

from countcast.data.schema import CATEGORICAL
from countcast.nn.init import init_embedding


class CategoricalEmbeddings(nn.Module):
    def __init__(self, cardinalities: dict[str, int], dim: int) -> None:
        super().__init__()
        self.names = list(CATEGORICAL)
        self.tables = nn.ModuleDict({c: nn.Embedding(cardinalities[c], dim) for c in self.names})
        for emb in self.tables.values():
            init_embedding(emb)
        self.out_dim = dim * len(self.names)

    def forward(self, cat: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.tables[c](cat[:, j]) for j, c in enumerate(self.names)], dim=1)
