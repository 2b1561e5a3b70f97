"""Check-owned knobs shared by check.py and make_reference.py (stdlib only)."""

# RLIMIT_DATA for every child run (same as task.toml [limits] data_mb). The fixed repo peaks
# at ~430 MB of data segment with 1 thread (~475 MB with 2); the unfixed one needs >1.2 GB.
DATA_CAP_MB = 700
# Peak RSS budget, measured from outside (wait4). Fixed runs peak at ~505 MB RSS.
RSS_BUDGET_MB = 700

# Config used by the driver: same data/model sizes as the repo defaults (so the memory
# behaviour is the one the agent saw), a seed and epoch count of the check's own.
CONFIG = {
    "seed": 20917,
    "epochs": 2,
    "n_features": 64,
    "n_train": 131072,
    "n_val": 393216,
    "noise_std": 0.1,
    "hidden_dim": 128,
    "train_batch_size": 1024,
    "eval_batch_size": 16384,
    "lr": 0.002,
    "weight_decay": 0.0001,
    "log_every": 32,
}

VAL_TOL = 1e-4     # per-epoch validation loss, absolute
TRAIN_TOL = 1e-4   # per-epoch mean training loss, absolute
MAX_LIVE_GRAPHS = 4  # forward graphs alive at once; a correct loop keeps at most 2
DRIVER_TIMEOUT_S = 120
RUN_TIMEOUT_S = 120
