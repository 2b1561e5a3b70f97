"""Synthetic click-stream sessions: variable-length sequences of event ids and an intent label.

Event ids 1..vocab_size-1 (0 is padding). Three families of events (browse, compare, checkout) mark
the three intents; a session's intent is the family whose events it holds most of, with later events
weighted more (sessions drift towards their intent).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from config import TrainConfig

PAD_ID = 0


@dataclass
class Session:
    events: list[int]
    label: int


class SessionDataset(torch.utils.data.Dataset):
    def __init__(self, sessions: list[Session]) -> None:
        self.sessions = sessions

    def __len__(self) -> int:
        return len(self.sessions)

    def __getitem__(self, i: int) -> Session:
        return self.sessions[i]

    def lengths(self) -> list[int]:
        return [len(s.events) for s in self.sessions]


def _family(cfg: TrainConfig, ids: torch.Tensor) -> torch.Tensor:
    return (ids - 1) * cfg.n_classes // (cfg.vocab_size - 1)


def make_sessions(cfg: TrainConfig, n: int, g: torch.Generator) -> list[Session]:
    out = []
    for _ in range(n):
        length = int(torch.randint(cfg.min_len, cfg.max_len + 1, (1,), generator=g))
        intent = int(torch.randint(0, cfg.n_classes, (1,), generator=g))
        ids = torch.randint(1, cfg.vocab_size, (length,), generator=g)
        drift = torch.rand(length, generator=g) < torch.linspace(0.1, 0.6, length)
        lo = 1 + intent * (cfg.vocab_size - 1) // cfg.n_classes
        hi = 1 + (intent + 1) * (cfg.vocab_size - 1) // cfg.n_classes
        ids = torch.where(drift, torch.randint(lo, hi, (length,), generator=g), ids)
        weights = torch.linspace(0.5, 1.5, length)
        score = torch.zeros(cfg.n_classes).index_add_(0, _family(cfg, ids), weights)
        out.append(Session(ids.tolist(), int(score.argmax())))
    return out


def make_splits(cfg: TrainConfig) -> tuple[SessionDataset, SessionDataset]:
    g = torch.Generator().manual_seed(cfg.data_seed)
    return SessionDataset(make_sessions(cfg, cfg.n_train, g)), SessionDataset(make_sessions(cfg, cfg.n_val, g))
