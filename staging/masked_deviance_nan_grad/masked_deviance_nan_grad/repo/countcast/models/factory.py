"""Model registry and construction."""

from __future__ import annotations

from countcast.config.sections import ModelSection
from countcast.registry import Registry

MODELS: Registry = Registry("model")


def build_model(cfg: ModelSection, cardinalities: dict[str, int], num_features: int, mean_rate: float):
    return MODELS.get(cfg.name).from_config(cfg, cardinalities, num_features, mean_rate)
