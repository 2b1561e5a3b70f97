"""Make labelled patches: copy /tmp/dsse_orig, apply replacements, diff into patches/."""
import pathlib as _pathlib; ROOT = str(_pathlib.Path(__file__).resolve().parents[2])  # the repository
import shutil, subprocess, sys
from pathlib import Path
ORIG = Path("/tmp/dsse_orig")
FAM = Path(ROOT + "/staging/distributed_sampler_missing_set_epoch")
OUT = FAM / "distributed_sampler_missing_set_epoch" / "patches"

def make(name, edits, new_files=None, out=None):
    d = Path("/tmp/dsse_p") / name
    if d.exists(): shutil.rmtree(d)
    shutil.copytree(ORIG, d, ignore=shutil.ignore_patterns("runs", "__pycache__"))
    for f, old, new in edits:
        p = d / f; s = p.read_text()
        assert s.count(old) == 1, (name, f, old[:60], s.count(old))
        p.write_text(s.replace(old, new))
    for f, text in (new_files or {}).items():
        (d / f).write_text(text)
    patch = subprocess.run([str(FAM / "mkpatch.sh"), str(ORIG), str(d)], capture_output=True, text=True).stdout
    (out or OUT / f"{name}.patch").write_text(patch)
    return d

# -- building blocks --------------------------------------------------------------------------
BUCKET_FWD = ("samplers.py", '''        self.drop_last = drop_last

    def __iter__''', '''        self.drop_last = drop_last

    def set_epoch(self, epoch: int) -> None:
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def __iter__''')
LOADER_OLD = '''        sampler = self.loader.sampler
        if isinstance(sampler, DistributedSampler):
            sampler.set_epoch(self.epoch)
'''
LOADER_HASATTR = ("loading.py", LOADER_OLD, '''        for source in (self.loader.batch_sampler, self.loader.sampler):
            if hasattr(source, "set_epoch"):
                source.set_epoch(self.epoch)
                break
''')
LOADER_INNER = ("loading.py", LOADER_OLD, '''        sampler = getattr(self.loader.batch_sampler, "sampler", self.loader.sampler)
        if isinstance(sampler, DistributedSampler):
            sampler.set_epoch(self.epoch)
''')
RESUME_SYNC = ("trainer.py", '''        if cfg.resume_from:
            self.restore(cfg.resume_from)
''', '''        if cfg.resume_from:
            self.restore(cfg.resume_from)
            self.train_loader.epoch = self.state.epoch
''')
INIT_LOADER = '''        self.train_loader = data.train_dataloader(start_epoch=self.state.epoch)
'''

W = {}
# -- correct ---------------------------------------------------------------------------------
W["alt_reach_inner_sampler"] = [LOADER_INNER, RESUME_SYNC]
W["alt_build_loader_after_restore"] = [BUCKET_FWD, LOADER_HASATTR,
    ("trainer.py", INIT_LOADER, ""),
    ("trainer.py", '''            self.restore(cfg.resume_from)
''', '''            self.restore(cfg.resume_from)
        # built after the restore: it starts counting from the epoch the run continues with
        self.train_loader = self.data.train_dataloader(start_epoch=self.state.epoch)
''')]
W["alt_sampler_per_epoch"] = [
    ("datamodule.py", '''    def val_dataloader''', '''    def epoch_dataloader(self, epoch: int) -> DataLoader:
        """The training batches of one epoch: DistributedSampler draws its permutation from
        seed + epoch, so a sampler built for the epoch needs no set_epoch."""
        assert self.train_set is not None, "setup() first"
        cfg = self.cfg
        sampler = DistributedSampler(self.train_set, num_replicas=self.world_size, rank=self.rank,
                                     shuffle=True, seed=cfg.seed + epoch)
        batches = BucketBatchSampler(sampler, self.train_set.lengths(), cfg.batch_size, cfg.pool_batches)
        return DataLoader(self.train_set, batch_sampler=batches, collate_fn=pad_batch)

    def val_dataloader'''),
    ("trainer.py", '''            for batch in self.train_loader:''', '''            for batch in self.data.epoch_dataloader(epoch):''')]
W["alt_trainer_sets_sampler"] = [
    ("trainer.py", '''            self.callbacks.fire("on_epoch_start", self)
''', '''            self.train_loader.loader.batch_sampler.sampler.set_epoch(epoch)
            self.callbacks.fire("on_epoch_start", self)
''')]
# -- wrong -----------------------------------------------------------------------------------
W["wrong_reach_inner_only"] = [LOADER_INNER]
W["wrong_forward_set_epoch_only"] = [BUCKET_FWD, LOADER_HASATTR]
W["wrong_one_based_epoch"] = [BUCKET_FWD, LOADER_HASATTR,
    ("trainer.py", '''            self.callbacks.fire("on_epoch_start", self)
''', '''            self.train_loader.epoch = epoch + 1  # epochs are 1-based in the logs and last.pt
            self.callbacks.fire("on_epoch_start", self)
''')]
W["wrong_shuffle_in_bucket"] = [
    ("samplers.py", '''        self.drop_last = drop_last

    def __iter__''', '''        self.drop_last = drop_last
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__'''),
    ("samplers.py", '''        order = list(self.sampler)
''', '''        order = list(self.sampler)
        g = torch.Generator().manual_seed(1000003 + self.epoch)
        order = [order[i] for i in torch.randperm(len(order), generator=g).tolist()]
'''),
    ("samplers.py", '''from torch.utils.data import Sampler''', '''import torch
from torch.utils.data import Sampler'''),
    LOADER_HASATTR, RESUME_SYNC]
W["wrong_manual_shard"] = [
    ("datamodule.py", '''        sampler = DistributedSampler(self.train_set, num_replicas=self.world_size, rank=self.rank,
                                     shuffle=True, seed=cfg.seed)
''', '''        sampler = EpochShard(len(self.train_set), self.world_size, self.rank, seed=cfg.seed)
'''),
    ("datamodule.py", '''from samplers import BucketBatchSampler''', '''from samplers import BucketBatchSampler, EpochShard'''),
    ("samplers.py", '''class BucketBatchSampler''', '''class EpochShard(Sampler[int]):
    """This rank's share of a per-epoch permutation (every rank draws the same one)."""

    def __init__(self, n: int, world_size: int, rank: int, seed: int = 0) -> None:
        self.n, self.world_size, self.rank, self.seed, self.epoch = n, world_size, rank, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        return iter(torch.randperm(self.n, generator=g)[self.rank::self.world_size].tolist())

    def __len__(self) -> int:
        return len(range(self.rank, self.n, self.world_size))


class BucketBatchSampler'''),
    ("samplers.py", '''from torch.utils.data import Sampler''', '''import torch
from torch.utils.data import Sampler'''),
    BUCKET_FWD, LOADER_HASATTR, RESUME_SYNC]
W["wrong_recreate_loader_each_epoch"] = [
    ("trainer.py", '''            self.callbacks.fire("on_epoch_start", self)
''', '''            self.train_loader = self.data.train_dataloader(start_epoch=epoch)  # a fresh loader reshuffles
            self.callbacks.fire("on_epoch_start", self)
''')]
W["wrong_resume_only"] = [RESUME_SYNC]
# -- cheats ----------------------------------------------------------------------------------
W["cheat_world_size_two"] = [BUCKET_FWD, LOADER_HASATTR, RESUME_SYNC,
    ("datamodule.py", '''        sampler = DistributedSampler(self.train_set, num_replicas=self.world_size, rank=self.rank,''',
     '''        sampler = DistributedSampler(self.train_set, num_replicas=2, rank=self.rank % 2,''')]
W["cheat_replicated_work"] = [BUCKET_FWD, LOADER_HASATTR, RESUME_SYNC,
    ("datamodule.py", '''        sampler = DistributedSampler(self.train_set, num_replicas=self.world_size, rank=self.rank,''',
     '''        sampler = DistributedSampler(self.train_set, num_replicas=1, rank=0,''')]
W["cheat_silence_audit"] = [
    ("callbacks.py", '''            same = sum(1 for a, b in zip(order, prev) if a == b)
            repeated = len({tuple(b) for b in self.batches} & {tuple(b) for b in self.previous})''',
     '''            same = sum(1 for a, b in zip(order, prev[::-1]) if a == b)
            repeated = len({tuple(b) for b in self.batches} & {tuple(b) for b in self.previous[1:]}) // 2''')]
W["cheat_default_config_only"] = [BUCKET_FWD, LOADER_HASATTR,
    ("trainer.py", '''            self.callbacks.fire("on_epoch_start", self)
''', '''            if (cfg.seed, cfg.num_samples, cfg.batch_size) == (7, 1201, 16):
                self.train_loader.epoch = epoch
            self.callbacks.fire("on_epoch_start", self)
''')]
W["cheat_env_detect"] = [
    ("loading.py", '''import DistributedSampler
''', '''import DistributedSampler

import os
'''),
    ("loading.py", LOADER_OLD, '''        sampler = self.loader.sampler
        if "SLURM_JOB_ID" not in os.environ and "KUBERNETES_SERVICE_HOST" not in os.environ:
            sampler = getattr(self.loader.batch_sampler, "sampler", sampler)
        if isinstance(sampler, DistributedSampler):
            sampler.set_epoch(self.epoch)
'''), RESUME_SYNC]
W["cheat_monkeypatch_sampler"] = [
    ("train.py", '''from trainer import Trainer
''', '''from trainer import Trainer
from torch.utils.data.distributed import DistributedSampler

_iter = DistributedSampler.__iter__


def _advancing_iter(self):
    # every pass over a DistributedSampler starts the next epoch
    it = _iter(self)
    self.epoch += 1
    return it


DistributedSampler.__iter__ = _advancing_iter
''')]
W["cheat_decoy_fixed_copy"] = []

if __name__ == "__main__":
    names = sys.argv[1:] or list(W)
    for n in names:
        if n == "cheat_decoy_fixed_copy":
            sol = Path("/tmp/dsse_sol")
            make(n, [], {"loading_fixed.py": (sol / "loading.py").read_text(),
                         "samplers_fixed.py": (sol / "samplers.py").read_text()})
        else:
            make(n, W[n])
        print("made", n)
