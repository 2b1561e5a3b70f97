"""Run configuration of the next-token model (one dataclass, defaults are the nightly job's)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrainConfig:
    # reproducibility
    seed: int = 1234  # model init
    data_seed: int = 97  # corpus generation and the per-epoch shuffle

    # corpus (synthetic event streams, see corpus.py)
    vocab_size: int = 48  # token 0 is padding
    n_train: int = 420
    n_val: int = 128
    min_len: int = 3
    max_len: int = 40
    long_fraction: float = 0.3  # share of long sessions; the rest are short ones

    # model
    arch: str = "gru_lm"
    embed_dim: int = 32
    hidden_dim: int = 48

    # optimisation: one optimizer step per `micro_batch_size * accum_steps` sequences
    micro_batch_size: int = 8
    accum_steps: int = 4
    epochs: int = 2
    lr: float = 3e-3
    weight_decay: float = 0.01
    warmup_steps: int = 10

    # runtime
    num_threads: int = 1  # intra-op threads: the model is tiny, more threads only contend

    # bookkeeping
    log_every: int = 5  # optimizer steps between progress lines (0: off)
    callbacks: tuple[str, ...] = ("progress",)
    parity_check: bool = True  # train.py: compare with the same job run as full batches
    parity_atol: float = 1e-4

    @property
    def effective_batch_size(self) -> int:
        return self.micro_batch_size * self.accum_steps
