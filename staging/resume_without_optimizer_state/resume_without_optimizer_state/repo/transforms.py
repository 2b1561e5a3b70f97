"""Per-window normalisation: inputs and target are scaled by the window's mean level."""

from __future__ import annotations

import torch


class WindowTransform:
    def __init__(self, normalize: bool = True, eps: float = 1e-3) -> None:
        self.normalize = normalize
        self.eps = eps

    def __call__(self, window: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.normalize:
            return window, target
        scale = window.abs().mean().clamp_min(self.eps)
        return window / scale, target / scale
