"""Author helper: write checks/legacy/{last,best}.pt with the ORIGINAL repo's own save code: the run
of the default config (6 epochs planned), pre-empted after epoch 3 (last week's run)."""
import os
import shutil
import sys
import tempfile
import types
from pathlib import Path

here = Path(__file__).resolve().parent / "weights_only_load_rejects_checkpoint"
sys.path.insert(0, str(here / "repo"))
import config, data, seeding, trainer  # noqa: E401,E402

# run as the job runs, from a job dir of its own with the default relative ckpt_dir: the checkpoints
# hold the run dir as a path, and no path of this machine may end up in them
final = here / "checks" / "legacy"
job = Path(tempfile.mkdtemp(prefix="job-"))
os.chdir(job)
out = job / "checkpoints"
cfg = config.TrainConfig(restore_best=False)
seeding.seed_everything(cfg.seed)
tr = trainer.Trainer(cfg, *data.make_splits(cfg))
logger = next(c for c in tr.callbacks if c.name == "logger")
orig = type(logger).on_epoch_end


def preempt(self, t, metrics):
    orig(self, t, metrics)
    t.should_stop = t.epoch >= 3


logger.on_epoch_end = types.MethodType(preempt, logger)
tr.fit()
final.mkdir(parents=True, exist_ok=True)
for name in ("last.pt", "best.pt"):
    shutil.copyfile(out / name, final / name)
shutil.rmtree(job)
print(sorted(p.name for p in final.iterdir()), tr.history.rows[-1])
