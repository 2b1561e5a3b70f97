"""Run configuration for the telemetry fault classifier."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Config:
    """Hyper-parameters and runtime settings.

    The model is always trained through ``torch.compile``. The serving team exports the
    compiled forward as ONE graph (their latency budget and the export tooling both assume
    it), so we compile with ``fullgraph=True``: a graph break is a hard error here, not a
    silent slowdown.
    """

    # data
    seed: int = 1234
    num_features: int = 24
    num_classes: int = 5
    train_samples: int = 2048
    val_samples: int = 512
    batch_size: int = 64

    # model
    width: int = 64
    expansion: int = 2
    depth: int = 3
    max_update: float = 4.0  # largest magnitude a residual update may add to the stream

    # optimisation
    epochs: int = 2
    max_steps: int = 0  # 0 = no cap; otherwise stop after this many optimizer steps
    lr: float = 3e-3
    weight_decay: float = 1e-4
    log_every: int = 10

    # compilation
    compile: bool = True
    fullgraph: bool = True
    # "inductor" on the perf boxes; "aot_eager" keeps dev/CI runs free of a C++ toolchain
    # while still tracing exactly what production traces.
    backend: str = "aot_eager"
