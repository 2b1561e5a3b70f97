"""Forecasting models, built by name from the registry."""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from config import TrainConfig

MODELS: dict[str, Callable[[TrainConfig], nn.Module]] = {}


def register(name: str):
    def wrap(fn: Callable[[TrainConfig], nn.Module]) -> Callable[[TrainConfig], nn.Module]:
        MODELS[name] = fn
        return fn
    return wrap


class WindowMLP(nn.Module):
    """Next-value regressor over a window of past values."""

    def __init__(self, window: int, hidden_dim: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(window, hidden_dim),
            nn.GELU(),
            nn.Linear(hidden_dim, hidden_dim),
            nn.GELU(),
            nn.Linear(hidden_dim, 1),
        )

    def forward(self, x):
        return self.net(x).squeeze(-1)


@register("mlp")
def _mlp(cfg: TrainConfig) -> nn.Module:
    return WindowMLP(cfg.window, cfg.hidden_dim)


def build_model(cfg: TrainConfig) -> nn.Module:
    try:
        return MODELS[cfg.arch](cfg)
    except KeyError:
        raise ValueError(f"unknown arch {cfg.arch!r}; known: {sorted(MODELS)}") from None
