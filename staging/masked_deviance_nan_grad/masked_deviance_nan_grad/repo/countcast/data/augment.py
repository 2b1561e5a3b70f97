"""Training-time augmentation of count targets.

Binomial thinning: a thinned row keeps each of its units with probability ``keep``, as if the
store had been open for a share ``keep`` of the day; the row's log-exposure offset gets
``log(keep)`` so the model still learns the full-day rate. It regularises the ensemble towards
the low-volume days the planners care about.
"""

from __future__ import annotations

import math

import torch

from countcast.config.sections import AugmentSection
from countcast.registry import Registry

AUGMENTS: Registry = Registry("augmentation")


class Augment:
    def __call__(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return batch


@AUGMENTS.register("none", "identity")
class NoAugment(Augment):
    def __init__(self, cfg: AugmentSection | None = None) -> None:
        pass


@AUGMENTS.register("thinning", "binomial_thinning")
class BinomialThinning(Augment):
    def __init__(self, cfg: AugmentSection) -> None:
        self.prob = cfg.thin_prob
        self.keep = cfg.thin_keep
        self.log_keep = math.log(cfg.thin_keep)

    def __call__(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if self.prob <= 0.0 or self.keep >= 1.0:
            return batch
        y = batch["y"]
        chosen = torch.rand(y.shape) < self.prob
        thinned = torch.binomial(y, torch.full_like(y, self.keep))
        return {
            **batch,
            "y": torch.where(chosen, thinned, y),
            "offset": batch["offset"] + chosen.float() * self.log_keep,
        }


def build_augment(cfg: AugmentSection) -> Augment:
    return AUGMENTS.build(cfg.name, cfg)
