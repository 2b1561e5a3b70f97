"""Job configuration of the weekly shelfcast retrain."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass
class Config:
    # data: one export per region under data/export/, the catalogue's listings, stores and promotions
    data_dir: str = "data"
    regions: tuple[str, ...] = ("north", "east", "south", "west")
    start: str = "2026-09-07"  # first day of the rolling export window
    days: int = 84  # length of the window (12 weeks)
    holdout_days: int = 28  # the last 4 weeks of the window: holdout and backtest
    # history features
    lags: str = "1,7,14"  # lagged units as inputs: days back, comma-separated
    roll_window: int = 7
    # model
    emb_dim: int = 4
    hidden_dim: int = 32
    depth: int = 1
    dropout: float = 0.0
    # optimisation
    lr: float = 0.005
    weight_decay: float = 0.0
    epochs: int = 10
    batch_size: int = 512
    eval_batch_size: int = 1024
    seed: int = 20261130
    num_threads: int = 1
    log_every: int = 0
    # backtest audit: forecast / actual units per region must stay within 1 +- audit_band
    audit_band: float = 0.10

    @property
    def lag_days(self) -> tuple[int, ...]:
        return tuple(int(k) for k in self.lags.split(","))

    @property
    def history(self) -> int:
        """Days of history a row needs before it has every feature."""
        return max(max(self.lag_days), self.roll_window)


def override(cfg: Config, pairs: list[str]) -> Config:
    """Apply ``key=value`` overrides (``--set lr=0.005 --set lags=1,7``)."""
    kinds = {f.name: f for f in fields(cfg)}
    for pair in pairs:
        key, _, raw = pair.partition("=")
        if key not in kinds:
            raise SystemExit(f"unknown config field {key!r}")
        current = getattr(cfg, key)
        if isinstance(current, tuple):
            value = tuple(type(current[0])(v) for v in raw.split(","))
        elif isinstance(current, bool):
            value = raw.lower() in ("1", "true", "yes")
        else:
            value = type(current)(raw)
        setattr(cfg, key, value)
    return cfg
