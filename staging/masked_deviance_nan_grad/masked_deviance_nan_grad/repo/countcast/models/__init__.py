"""Count models: ``forward(cat, num, offset) -> eta`` (the log-rate, offset included)."""

from countcast.models import glm, mlp  # noqa: F401  (registration)
from countcast.models.factory import MODELS, build_model

__all__ = ["MODELS", "build_model"]
