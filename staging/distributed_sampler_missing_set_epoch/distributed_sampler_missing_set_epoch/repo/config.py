"""Configuration of the ticket-router training job (one dataclass, overridable from the CLI)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass
class TrainConfig:
    # reproducibility
    seed: int = 7  # model init and the sampler's shuffling
    data_seed: int = 1234  # the synthetic ticket corpus

    # data
    num_samples: int = 1201  # training tickets
    num_val: int = 256
    vocab_size: int = 512
    num_classes: int = 6
    min_len: int = 4
    max_len: int = 48

    # model
    model: str = "bag_mlp"
    embed_dim: int = 32
    hidden_dim: int = 64

    # optimisation
    epochs: int = 4
    batch_size: int = 16  # per rank
    pool_batches: int = 4  # length bucketing: batches per sorted pool
    lr: float = 3e-3
    weight_decay: float = 0.01
    warmup_steps: int = 20

    # outputs and resuming
    out_dir: str = "runs/ticket-router"
    resume_from: str = ""  # a last.pt written by an earlier run: continue from its epoch

    # distributed (one process per rank, gloo on CPU)
    world_size: int = 2
    master_addr: str = "127.0.0.1"
    master_port: int = 0  # 0: train.py picks a free port
    backend: str = "gloo"
    pg_timeout_s: float = 60.0

    # logging and callbacks
    log_every: int = 0  # steps between progress lines (0: per epoch only)
    callbacks: tuple[str, ...] = ("progress", "data_audit", "last_checkpoint")

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in asdict(self).items() if k != "callbacks")


def config_from_dict(values: dict) -> TrainConfig:
    known = {f.name for f in fields(TrainConfig)}
    kept = {k: (tuple(v) if k == "callbacks" else v) for k, v in values.items() if k in known}
    return TrainConfig(**kept)
