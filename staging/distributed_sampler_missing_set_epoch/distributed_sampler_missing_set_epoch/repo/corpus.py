"""The ticket corpus: token-id sequences of varying length, each routed to one queue.

The smoke corpus is synthetic (the production export has the same shape): every queue has a
handful of keyword tokens, and about a sixth of a ticket's tokens are keywords of its queue.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.data import Dataset

KEYWORDS_PER_QUEUE = 8


@dataclass
class Ticket:
    ticket_id: int
    tokens: torch.Tensor  # int64, no padding
    queue: int


def make_tickets(n: int, cfg, seed: int, first_id: int = 0) -> list[Ticket]:
    g = torch.Generator().manual_seed(seed)
    keywords = torch.randperm(cfg.vocab_size - 1, generator=torch.Generator().manual_seed(cfg.data_seed))
    keywords = (keywords[: cfg.num_classes * KEYWORDS_PER_QUEUE] + 1).view(cfg.num_classes, KEYWORDS_PER_QUEUE)
    lengths = torch.randint(cfg.min_len, cfg.max_len + 1, (n,), generator=g).tolist()
    queues = torch.randint(0, cfg.num_classes, (n,), generator=g).tolist()
    out = []
    for i, (length, queue) in enumerate(zip(lengths, queues)):
        tokens = torch.randint(1, cfg.vocab_size, (length,), generator=g)
        k = max(1, length // 6)
        where = torch.randperm(length, generator=g)[:k]
        tokens[where] = keywords[queue][torch.randint(0, KEYWORDS_PER_QUEUE, (k,), generator=g)]
        out.append(Ticket(first_id + i, tokens, queue))
    return out


class TicketDataset(Dataset):
    def __init__(self, tickets: list[Ticket]) -> None:
        self.tickets = tickets

    def __len__(self) -> int:
        return len(self.tickets)

    def __getitem__(self, index: int) -> dict:
        t = self.tickets[index]
        return {"id": t.ticket_id, "tokens": t.tokens, "label": t.queue}

    def lengths(self) -> list[int]:
        return [len(t.tokens) for t in self.tickets]
