"""Knobs owned by the hidden check (shared by check.py and make_reference.py).

The seed and sizes differ from the repo's defaults, so numbers printed by a run of
``python train.py`` (or hard-coded into the workspace) cannot match the reference.
"""

WORLD_SIZE = 2
PG_TIMEOUT_S = 10  # process-group timeout: a one-sided collective fails after ~10 s
DRIVER_WALL_S = 60  # hard wall for the whole 2-rank driver run (a hang gets killed)
RUN_WALL_S = 60  # hard wall for the agent's own `python train.py`

# TrainConfig overrides applied by the driver (world_size / port / timeout added there)
TRAIN_OVERRIDES = {
    "seed": 20611,
    "epochs": 2,
    "train_samples": 1536,
    "val_samples": 384,
    "batch_size": 24,
    "log_every": 25,
}

LOSS_ATOL = 1e-5  # per-epoch global mean losses vs the reference
PARAM_RTOL = 1e-4  # final-parameter fingerprints vs the reference
PARAM_ATOL = 1e-6
RANK_ATOL = 1e-9  # fingerprints of rank 0 vs rank 1
