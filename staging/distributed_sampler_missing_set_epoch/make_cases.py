import sys, tempfile
from pathlib import Path
sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
import make_patches as mk
from make_patches import BUCKET_FWD, LOADER_HASATTR, LOADER_INNER, LOADER_OLD, RESUME_SYNC, INIT_LOADER
FIT_LOOP = ('trainer.py', '''            self.callbacks.fire("on_epoch_start", self)
''')
def at_epoch_start(code):
    return (FIT_LOOP[0], FIT_LOOP[1], code + FIT_LOOP[1])
DS = '''        sampler = DistributedSampler(self.train_set, num_replicas=self.world_size, rank=self.rank,
                                     shuffle=True, seed=cfg.seed)
'''
C = [
 ("fixed_direct_attribute_chain", "fixed", "EpochLoader sets the epoch on self.loader.batch_sampler.sampler; the loader's counter synced after the restore",
  [("loading.py", LOADER_OLD, '''        self.loader.batch_sampler.sampler.set_epoch(self.epoch)
'''), RESUME_SYNC]),
 ("fixed_rebuild_in_restore", "fixed", "set_epoch forwarded through the bucket sampler; Trainer.restore rebuilds the training loader from the restored epoch",
  [BUCKET_FWD, LOADER_HASATTR, ("trainer.py", '''        self.history = list(ckpt["history"])
''', '''        self.history = list(ckpt["history"])
        self.train_loader = self.data.train_dataloader(start_epoch=self.state.epoch)
''')]),
 ("fixed_assign_epoch_each_epoch", "fixed", "set_epoch forwarded; the trainer assigns the loader's epoch from the loop variable at every epoch start",
  [BUCKET_FWD, LOADER_HASATTR, at_epoch_start('''            self.train_loader.epoch = epoch
''')]),
 ("fixed_rebuild_after_restore_keep_init", "fixed", "the loader reaches the inner sampler; fit rebuilds the loader after the restore (the one built in __init__ stays for fresh runs)",
  [LOADER_INNER, ("trainer.py", '''            self.restore(cfg.resume_from)
''', '''            self.restore(cfg.resume_from)
            self.train_loader = self.data.train_dataloader(start_epoch=self.state.epoch)
''')]),
 ("bug_hasattr_on_loader_sampler", "bug", "EpochLoader asks hasattr(loader.sampler, 'set_epoch') instead of isinstance: still the DataLoader's SequentialSampler",
  [("loading.py", LOADER_OLD, '''        if hasattr(self.loader.sampler, "set_epoch"):
            self.loader.sampler.set_epoch(self.epoch)
''')]),
 ("bug_bucket_forward_not_called", "bug", "BucketBatchSampler gets a forwarding set_epoch, but nothing calls it (the loader still looks at loader.sampler)",
  [BUCKET_FWD, RESUME_SYNC]),
 ("resume_synced_too_early", "resume_replays", "set_epoch forwarded; the loader's epoch is synced in __init__, before fit() restores last.pt",
  [BUCKET_FWD, LOADER_HASATTR, ("trainer.py", INIT_LOADER, INIT_LOADER + '''        self.train_loader.epoch = self.state.epoch
''')]),
 ("wrong_one_based_set_epoch_call", "wrong_order", "set_epoch forwarded; the trainer calls train_loader.set_epoch(epoch + 1) (1-based) every epoch",
  [BUCKET_FWD, LOADER_HASATTR, ("loading.py", '''    def __len__''', '''    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__'''), at_epoch_start('''            self.train_loader.set_epoch(epoch + 1)
''')]),
 ("replicated_with_fix", "replicated", "the reference fix with DistributedSampler(num_replicas=1, rank=0)",
  [BUCKET_FWD, LOADER_HASATTR, RESUME_SYNC, ("datamodule.py", DS, DS.replace("num_replicas=self.world_size, rank=self.rank", "num_replicas=1, rank=0"))]),
 ("unsure_epoch_from_global_step", "unsure", "the epoch derived from the restored global step (global_step // len(loader)): right, but not a form the analysis follows",
  [BUCKET_FWD, LOADER_HASATTR, at_epoch_start('''            self.train_loader.epoch = self.state.global_step // len(self.train_loader)
''')]),
 ("unsure_drop_last", "unsure", "the fix plus DistributedSampler(drop_last=True): a keyword the analysis does not model",
  [BUCKET_FWD, LOADER_HASATTR, RESUME_SYNC, ("datamodule.py", DS, DS.replace("seed=cfg.seed)", "seed=cfg.seed, drop_last=True)"))]),
 ("unsure_other_seed", "unsure", "the fix with DistributedSampler(seed=cfg.seed * 2 + 1)",
  [BUCKET_FWD, LOADER_HASATTR, RESUME_SYNC, ("datamodule.py", DS, DS.replace("seed=cfg.seed)", "seed=cfg.seed * 2 + 1)"))]),
 ("unsure_scaled_epoch", "unsure", "the loader's epoch set to 2 * epoch each epoch",
  [BUCKET_FWD, LOADER_HASATTR, at_epoch_start('''            self.train_loader.epoch = 2 * epoch
''')]),
 ("unsure_loader_sampler_call", "unsure", "the trainer calls train_loader.loader.sampler.set_epoch(epoch) (the DataLoader's SequentialSampler has none: an AttributeError)",
  [at_epoch_start('''            self.train_loader.loader.sampler.set_epoch(epoch)
''')]),
 ("unsure_exit_at_import", "unsure", "raise SystemExit(0) at import of trainer.py (no recorded state has that behaviour)",
  [("trainer.py", '''from schedules import linear_warmup
''', '''from schedules import linear_warmup

raise SystemExit(0)
''')]),
]
out = ['''# distributed_sampler_missing_set_epoch: classifier cases beyond the labelled patches (other idioms,
# wrong fixes, code the analysis must answer `unsure` for). tests/test_classifier_cases.py applies each patch.

min_cases = 15
min_fixed = 3
min_unsure = 5
''']
for name, label, why, edits in C:
    tmp = Path(tempfile.mkdtemp()) / "p.patch"
    mk.make("case_" + name, edits, out=tmp)
    text = tmp.read_text()
    assert "'''" not in text
    out.append(f"\n[[case]]\nname = \"{name}\"\nlabel = \"{label}\"\nnote = \"{why}\"\npatch = '''\n{text}'''\n")
(mk.FAM / "distributed_sampler_missing_set_epoch" / "classifier_cases.toml").write_text("".join(out))
print(len(C))
