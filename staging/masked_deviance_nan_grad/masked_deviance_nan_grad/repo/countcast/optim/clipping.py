"""Gradient norm measurement and clipping."""

from __future__ import annotations

import torch


def clip_gradients(parameters, max_norm: float) -> float:
    """Clip the global gradient norm to ``max_norm`` (0: measure only). Returns the norm before
    clipping."""
    params = [p for p in parameters if p.grad is not None]
    if not params:
        return 0.0
    if max_norm > 0:
        return float(torch.nn.utils.clip_grad_norm_(params, max_norm))
    return float(torch.linalg.vector_norm(torch.stack([p.grad.detach().norm() for p in params])))
