"""What a member's training loop exposes to callbacks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class TrainingDiverged(RuntimeError):
    """A member's training produced non-finite values; the nightly job fails fast on it."""


@dataclass
class StepRecord:
    step: int
    epoch: int
    loss: float
    grad_norm: float
    lr: float


@dataclass
class TrainState:
    member: int
    total_steps: int
    step: int = 0
    epoch: int = 0
    last: StepRecord | None = None
    history: list[StepRecord] = field(default_factory=list)
    metrics: dict[str, list[float]] = field(default_factory=dict)
    stop: bool = False

    def record(self, rec: StepRecord) -> None:
        self.last = rec
        self.history.append(rec)

    def log_metric(self, name: str, value: float) -> None:
        self.metrics.setdefault(name, []).append(value)


@dataclass
class LoopContext:
    """Everything a callback may look at: the state and the loop's components."""

    state: TrainState
    model: Any
    optimizer: Any
    holdout: Any
    config: Any
