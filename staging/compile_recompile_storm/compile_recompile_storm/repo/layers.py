"""Encoder building blocks: masked self-attention with a shared relative position bias."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class MaskedSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) * (d // self.n_heads) ** -0.5 + bias
        scores = scores.masked_fill(~key_mask[:, None, None, :], float("-inf"))
        attn = scores.softmax(dim=-1)
        return self.out((attn @ v).transpose(1, 2).reshape(b, t, d))


class FeedForward(nn.Module):
    def __init__(self, d_model: int, mult: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_model, mult * d_model)
        self.fc2 = nn.Linear(mult * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class EncoderBlock(nn.Module):
    def __init__(self, d_model: int, n_heads: int, ff_mult: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = MaskedSelfAttention(d_model, n_heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff = FeedForward(d_model, ff_mult)

    def forward(self, x: torch.Tensor, key_mask: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), key_mask, bias)
        return x + self.ff(self.norm2(x))
