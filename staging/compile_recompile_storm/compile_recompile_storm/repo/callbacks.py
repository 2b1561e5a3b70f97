"""Trainer callbacks: progress logging and the compile budget."""

from __future__ import annotations

from compile_utils import graphs_compiled
from config import TrainConfig
from registry import CALLBACKS
from utils import get_logger

log = get_logger("train")


class Callback:
    def on_fit_start(self, trainer) -> None:
        pass

    def on_step_end(self, trainer, loss: float) -> None:
        pass

    def on_validation_end(self, trainer, metrics: dict[str, float]) -> None:
        pass

    def on_fit_end(self, trainer) -> None:
        pass


@CALLBACKS.register("log")
class LogProgress(Callback):
    def __init__(self, cfg: TrainConfig) -> None:
        self.every = cfg.log_every

    def on_step_end(self, trainer, loss: float) -> None:
        if self.every and trainer.step % self.every == 0:
            log.info("step %d loss %.4f", trainer.step, loss)

    def on_validation_end(self, trainer, metrics: dict[str, float]) -> None:
        log.info("epoch %d train_loss %.6f val_loss %.6f val_acc %.4f", trainer.epoch,
                 trainer.history[-1]["train_loss"], metrics["val_loss"], metrics["val_acc"])


@CALLBACKS.register("compile_budget")
class CompileBudget(Callback):
    """Fails the job when training compiled more graphs than the budget (a recompilation regression)."""

    def __init__(self, cfg: TrainConfig) -> None:
        self.enabled = cfg.compile
        self.budget = cfg.max_graphs
        self.start = 0

    def on_fit_start(self, trainer) -> None:
        self.start = graphs_compiled()

    def on_fit_end(self, trainer) -> None:
        if not self.enabled:
            return
        n = graphs_compiled() - self.start
        log.info("compiled %d graph(s) in %d steps (budget %d)", n, trainer.step, self.budget)
        if n > self.budget:
            raise RuntimeError(f"compile budget exceeded: {n} graphs compiled, budget {self.budget}")


def build_callbacks(cfg: TrainConfig, names: tuple[str, ...] = ("log", "compile_budget")) -> list[Callback]:
    return [CALLBACKS.get(n)(cfg) for n in names]
