"""Group a flat :class:`JobConfig` into sections and check it."""

from __future__ import annotations

from dataclasses import dataclass, fields

from countcast.config.job import JobConfig
from countcast.config.sections import (
    AugmentSection,
    DataSection,
    EnsembleSection,
    ModelSection,
    OptimSection,
    TrainSection,
)


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Composed:
    job: JobConfig
    data: DataSection
    augment: AugmentSection
    model: ModelSection
    optim: OptimSection
    train: TrainSection
    ensemble: EnsembleSection


_RENAMED = {"augment": "name", "model": "name", "optimizer": "name", "loss": "loss"}


def _section(cls, job: JobConfig, rename: dict[str, str] | None = None):
    rename = rename or {}
    values = {}
    for f in fields(cls):
        src = next((k for k, v in rename.items() if v == f.name), f.name)
        values[f.name] = getattr(job, src)
    return cls(**values)


def compose(job: JobConfig) -> Composed:
    validate(job)
    return Composed(
        job=job,
        data=_section(DataSection, job),
        augment=_section(AugmentSection, job, {"augment": "name"}),
        model=_section(ModelSection, job, {"model": "name"}),
        optim=_section(OptimSection, job, {"optimizer": "name"}),
        train=_section(TrainSection, job),
        ensemble=_section(EnsembleSection, job),
    )


def validate(job: JobConfig) -> None:
    problems = []
    if job.members < 1:
        problems.append("members must be >= 1")
    if not 0.0 < job.bag_fraction <= 1.0:
        problems.append("bag_fraction must be in (0, 1]")
    if not 0.0 < job.holdout_fraction < 1.0:
        problems.append("holdout_fraction must be in (0, 1)")
    if not 0.0 <= job.thin_prob <= 1.0 or not 0.0 < job.thin_keep <= 1.0:
        problems.append("thin_prob must be in [0, 1] and thin_keep in (0, 1]")
    if job.batch_size < 1 or job.epochs < 1:
        problems.append("batch_size and epochs must be >= 1")
    if job.eval_every < 0 or job.log_every < 0:
        problems.append("eval_every and log_every must be >= 0")
    if job.grad_clip < 0:
        problems.append("grad_clip must be >= 0 (0 disables clipping)")
    if problems:
        raise ConfigError("invalid job config: " + "; ".join(problems))
