"""Multi-task network: a shared encoder, a classification head and a reconstruction head."""

from __future__ import annotations

import torch
from torch import nn

from config import Config


class MultiTaskNet(nn.Module):
    """Shared MLP encoder with two heads.

    * ``cls_head`` predicts the class logits (the main task).
    * ``recon_head`` reconstructs the input features from the shared representation
      (an auxiliary task that regularises the encoder).
    """

    def __init__(self, num_features: int, hidden_dim: int, num_classes: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(num_features, hidden_dim),
            nn.ReLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden_dim, hidden_dim),
            nn.ReLU(),
        )
        self.cls_head = nn.Linear(hidden_dim, num_classes)
        self.recon_head = nn.Linear(hidden_dim, num_features)

    def forward(self, x: torch.Tensor, with_recon: bool = False):
        """Return the logits, and the reconstruction when ``with_recon`` is set."""
        h = self.encoder(x)
        logits = self.cls_head(h)
        if with_recon:
            return logits, self.recon_head(h)
        return logits, None


def build_model(cfg: Config) -> MultiTaskNet:
    torch.manual_seed(cfg.seed)
    return MultiTaskNet(cfg.num_features, cfg.hidden_dim, cfg.num_classes, cfg.dropout)
