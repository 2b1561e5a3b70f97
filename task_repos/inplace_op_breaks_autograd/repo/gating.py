"""Gate helpers of the residual blocks."""

from __future__ import annotations

import torch


def squash_gate(logits: torch.Tensor, floor: float) -> torch.Tensor:
    """Sigmoid gate kept inside [floor, 1 - floor]: a block never shuts its branch off completely
    (nor lets it through unscaled), which keeps deep stacks trainable from the first step."""
    gate = torch.sigmoid(logits)
    if floor > 0:
        gate.mul_(1.0 - 2.0 * floor).add_(floor)
    return gate
