"""Training objectives on the log-rate ``eta`` (offset included) and the observed units ``y``."""

from countcast.losses import gaussian, poisson, tweedie  # noqa: F401  (registration)
from countcast.losses.base import LOSSES, Loss, build_loss

__all__ = ["LOSSES", "Loss", "build_loss"]
