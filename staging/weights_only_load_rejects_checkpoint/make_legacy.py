"""Author helper: write checks/legacy/{last,best}.pt with the ORIGINAL repo's own save code: the run
of the default config (6 epochs planned), pre-empted after epoch 3 (last week's run)."""
import sys
import types
from pathlib import Path

here = Path(__file__).resolve().parent / "weights_only_load_rejects_checkpoint"
sys.path.insert(0, str(here / "repo"))
import config, data, seeding, trainer  # noqa: E401,E402

out = here / "checks" / "legacy"
out.mkdir(parents=True, exist_ok=True)
cfg = config.TrainConfig(ckpt_dir=str(out), restore_best=False)
seeding.seed_everything(cfg.seed)
tr = trainer.Trainer(cfg, *data.make_splits(cfg))
logger = next(c for c in tr.callbacks if c.name == "logger")
orig = type(logger).on_epoch_end


def preempt(self, t, metrics):
    orig(self, t, metrics)
    t.should_stop = t.epoch >= 3


logger.on_epoch_end = types.MethodType(preempt, logger)
tr.fit()
for p in sorted(out.iterdir()):
    if p.name not in ("last.pt", "best.pt"):
        p.unlink()
print(sorted(p.name for p in out.iterdir()), tr.history.rows[-1])
