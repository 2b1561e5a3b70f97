"""Knobs owned by the hidden check (they differ from the repo defaults on purpose)."""

KNOBS = {
    "world_size": 2,
    "steps": 20,
    "aux_every": 3,
    "seed": 1234,
    "data_seed": 4242,
    "num_samples": 512,
    "batch_size": 16,
    "lr": 0.1,
    "aux_weight": 0.5,
    "hidden_dim": 32,
    "timeout_s": 10.0,
}

AUX_PREFIX = "recon_head."
