"""CI tiers: the heavy parametrized tests run a rotating slice in CI, the whole on request.

``selected_slice(spec)`` reads a slice spec: ``K/N`` runs the items whose index is K modulo N,
``all`` runs every item, ``auto`` runs slice (day number mod N)/N, so N consecutive CI days
cover every item. ``rotating(items, env, slices)`` applies the spec found in ``env``.

| variable | what it slices | auto |
|---|---|---|
| ADVERSARIAL_DOCKER_SLICE | the reward-hacking corpus in docker mode | 1/24 a day |
| ADVERSARIAL_PROCESS_SLICE | the corpus in process mode | 1/32 a day |
| SANDBOX_ENV_TASK_SLICE | the per-task runs with host torch and in process mode | 1/4 a day |
| SANDBOX_ENV_DOCKER_TASK_SLICE | tasks reproduced and fixed in docker (test_docker_tasks) | 1/2 a day |
| SANDBOX_ENV_DOCKER_LABEL_SLICE | labelled states verified in docker (test_docker_tasks) | 1/4 a day |
| SANDBOX_ENV_RUNSC_SLICE | the task verifications under gVisor (test_runsc) | 1/2 a day |
| SANDBOX_ENV_DOCKER_VARIANT_SLICE | certified variants, certified again (test_docker_tasks) | one a day |
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")
# a 24th of the docker corpus a day (5 episodes, ~2 min): CI stays under 45 min (1/16 took 198 s)
DOCKER_CORPUS_SLICES = 24


def selected_slice(spec: str, today: datetime.date | None = None, slices: int = 8,
                   name: str = "slice") -> tuple[int, int]:
    """``(k, n)``: run the items whose index is k modulo n (``all`` is ``(0, 1)``)."""
    if spec == "all":
        return 0, 1
    if spec == "auto":
        return (today or datetime.date.today()).toordinal() % slices, slices
    k, _, n = spec.partition("/")
    if not (k.isdigit() and n.isdigit() and 0 <= int(k) < int(n)):
        raise ValueError(f"{name}={spec!r}: expected all, auto or K/N with 0 <= K < N")
    return int(k), int(n)


def rotating(items: Sequence[T], env: str, slices: int) -> list[T]:
    """The items the spec in ``env`` (default auto) selects."""
    k, n = selected_slice(os.environ.get(env, "auto"), slices=slices, name=env)
    return [x for i, x in enumerate(items) if i % n == k]
