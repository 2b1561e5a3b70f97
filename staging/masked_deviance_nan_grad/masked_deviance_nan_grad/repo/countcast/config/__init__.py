"""Configuration: one flat :class:`JobConfig` (what a job file or ``--set`` edits), composed into
typed sections (:mod:`countcast.config.sections`) that the components read."""

from countcast.config.compose import Composed, compose
from countcast.config.job import JobConfig
from countcast.config.overrides import apply_overrides
from countcast.config.presets import PRESETS, preset

__all__ = ["Composed", "JobConfig", "PRESETS", "apply_overrides", "compose", "preset"]
