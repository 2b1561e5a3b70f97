"""Loop callbacks, by name. The nightly job's list comes from :func:`build_callbacks`."""

from countcast.callbacks import diagnostics, early_stop, history, monitor, nonfinite, progress  # noqa: F401
from countcast.callbacks.base import CALLBACKS, Callback, build_callbacks

__all__ = ["CALLBACKS", "Callback", "build_callbacks"]
