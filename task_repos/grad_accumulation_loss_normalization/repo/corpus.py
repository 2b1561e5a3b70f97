"""Synthetic event-stream corpus: sessions of tokens drawn from a fixed random Markov chain.

Sessions are ragged: most are short (a few events), a minority are long, as in the real
clickstream export this stands in for.
"""

from __future__ import annotations

import torch

PAD_ID = 0


class MarkovCorpus:
    def __init__(self, vocab_size: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        self.vocab_size = vocab_size
        logits = torch.randn(vocab_size - 1, vocab_size - 1, generator=g) * 2.5
        self.transitions = torch.softmax(logits, dim=-1)
        self.start = torch.softmax(torch.randn(vocab_size - 1, generator=g), dim=-1)
        self.generator = g

    def session_length(self, min_len: int, max_len: int, long_fraction: float) -> int:
        g = self.generator
        if torch.rand((), generator=g).item() < long_fraction:
            lo = max(min_len, max_len // 2)
        else:
            lo, max_len = min_len, max(min_len, min(max_len, 3 * min_len))
        return int(torch.randint(lo, max_len + 1, (), generator=g).item())

    def sample(self, length: int) -> list[int]:
        g = self.generator
        tok = int(torch.multinomial(self.start, 1, generator=g).item())
        out = [tok + 1]
        for _ in range(length - 1):
            tok = int(torch.multinomial(self.transitions[tok], 1, generator=g).item())
            out.append(tok + 1)
        return out

    def sessions(self, n: int, min_len: int, max_len: int, long_fraction: float) -> list[list[int]]:
        return [self.sample(self.session_length(min_len, max_len, long_fraction)) for _ in range(n)]


def build_corpus(cfg) -> tuple[list[list[int]], list[list[int]]]:
    """(train sessions, validation sessions) for a config."""
    corpus = MarkovCorpus(cfg.vocab_size, cfg.data_seed)
    train = corpus.sessions(cfg.n_train, cfg.min_len, cfg.max_len, cfg.long_fraction)
    val = corpus.sessions(cfg.n_val, cfg.min_len, cfg.max_len, cfg.long_fraction)
    return train, val
