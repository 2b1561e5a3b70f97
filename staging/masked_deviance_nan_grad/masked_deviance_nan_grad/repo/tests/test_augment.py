import math

import torch

from countcast.config import compose, preset
from countcast.data.augment import build_augment


def test_thinning_offsets_and_counts():
    torch.manual_seed(0)
    cfg = compose(preset("nightly", thin_prob=1.0, thin_keep=0.5))
    aug = build_augment(cfg.augment)
    y = torch.full((1000,), 10.0)
    out = aug({"y": y, "offset": torch.zeros(1000), "cat": torch.zeros(1000, 3, dtype=torch.long),
               "num": torch.zeros(1000, 3)})
    assert bool((out["y"] <= y).all())
    assert abs(float(out["y"].mean()) - 5.0) < 0.3
    assert torch.allclose(out["offset"], torch.full((1000,), math.log(0.5)))


def test_no_thinning_is_identity():
    cfg = compose(preset("nightly", thin_prob=0.0))
    batch = {"y": torch.arange(5.0), "offset": torch.zeros(5)}
    assert build_augment(cfg.augment)(batch) is batch
