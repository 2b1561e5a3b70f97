"""Named presets: partial overrides on top of :class:`JobConfig`'s defaults.

``nightly`` is the production job (the defaults); ``smoke`` is the CI smoke test; ``glm`` is the
linear baseline the planners compare against.
"""

from __future__ import annotations

from dataclasses import replace

from countcast.config.job import JobConfig

PRESETS: dict[str, dict] = {
    "nightly": {},
    "smoke": {"members": 2, "epochs": 1, "items": 16, "eval_every": 0},
    "glm": {"model": "glm", "lr": 0.05, "members": 3},
    "wide": {"hidden_dim": 64, "depth": 3, "dropout": 0.1},
}


def preset(name: str, **extra) -> JobConfig:
    if name not in PRESETS:
        raise SystemExit(f"unknown preset {name!r}; known: {', '.join(sorted(PRESETS))}")
    return replace(JobConfig(), **{**PRESETS[name], **extra})
