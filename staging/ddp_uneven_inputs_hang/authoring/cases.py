import sys, os, shutil, subprocess
sys.path.insert(0, "/tmp/ddpx")
from gen import rep, MAX, LOOP, IMP, R, P, solution, join_counts
import gen

def case(name, label, edits):
    d = os.path.join(P, "case"); shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(os.path.join(R, "repo"), d); edits(d)
    a, b = os.path.join(P, "a"), os.path.join(P, "b")
    for x in (a, b): shutil.rmtree(x, ignore_errors=True)
    shutil.copytree(os.path.join(R, "repo"), a); shutil.copytree(d, b)
    diff = subprocess.run(["diff", "-ruN", "a", "b"], cwd=P, capture_output=True, text=True).stdout
    assert diff
    diff = "\n".join(l.split("\t")[0] if l.startswith(("---", "+++")) else l for l in diff.splitlines()) + "\n"
    return f"[[case]]\nname = \"{name}\"\nlabel = \"{label}\"\npatch = '''\n{diff}'''\n"

def empty_only(d):
    rep(d, "trainer.py", IMP, IMP + "import torch.distributed as dist\n")
    rep(d, "trainer.py", LOOP, '''        n = torch.tensor([len(self.train_loader)])
        dist.all_reduce(n, op=dist.ReduceOp.MAX)
        batches = iter(self.train_loader)
        for step in range(int(n)):
            batch = next(batches, None)
            if batch is None:  # out of rows: an empty batch keeps this rank in the step's collectives
                batch = Batch(torch.zeros(0, self.cfg.n_features), torch.zeros(0), torch.zeros(0))
            loss_sum, labelled = self.train_step(batch)''')

def zeros_like_inline(d):
    rep(d, "trainer.py", IMP, IMP + "import torch.distributed as dist\n")
    rep(d, "trainer.py", LOOP, '''        n = torch.tensor([len(self.train_loader)])
        dist.all_reduce(n, op=dist.ReduceOp.MAX)
        batches = list(self.train_loader)
        pad = Batch(batches[0].x, batches[0].y, torch.zeros_like(batches[0].weight))
        batches += [pad] * (int(n) - len(batches))
        for step, batch in enumerate(batches):
            loss_sum, labelled = self.train_step(batch)''')

def method_max(d):
    rep(d, "trainer.py", IMP, IMP + "import torch.distributed as dist\n")
    rep(d, "trainer.py", "    def run_epoch(self, meter: EpochMeter) -> None:", '''    def _global_steps(self) -> int:
        n = torch.tensor([len(self.train_loader)])
        dist.all_reduce(n, op=dist.ReduceOp.MAX)
        return int(n)

    def run_epoch(self, meter: EpochMeter) -> None:''')
    rep(d, "trainer.py", LOOP, '''        batches = iter(self.train_loader)
        last = None
        for step in range(self._global_steps()):
            batch = next(batches, None)
            if batch is None:
                batch = Batch(last.x, last.y, torch.zeros_like(last.weight))
            last = batch
            loss_sum, labelled = self.train_step(batch)''')


def join_renamed(d):
    join_counts()(d)
    for f in ("losses.py", "trainer.py"):
        p = os.path.join(d, f); t = open(p).read().replace("step_totals", "totals_per_step")
        open(p, "w").write(t)


def join_list_only(d):
    rep(d, "trainer.py", "from torch.nn.parallel import DistributedDataParallel as DDP\n",
        "from torch.distributed.algorithms.join import Join\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n")
    rep(d, "trainer.py", '''        for step, batch in enumerate(self.train_loader):
            loss_sum, labelled = self.train_step(batch)
            meter.update(loss_sum, labelled)
            for cb in self.callbacks:
                cb.on_step_end(self, step, loss_sum / max(labelled, 1.0))''', '''        with Join([self.net]):
            for step, batch in enumerate(self.train_loader):
                loss_sum, labelled = self.train_step(batch)
                meter.update(loss_sum, labelled)
                for cb in self.callbacks:
                    cb.on_step_end(self, step, loss_sum / max(labelled, 1.0))''')

def min_inline(d):
    rep(d, "trainer.py", IMP, IMP + "import torch.distributed as dist\n")
    rep(d, "trainer.py", LOOP, '''        n = torch.tensor([len(self.train_loader)])
        dist.all_reduce(n, op=dist.ReduceOp.MIN)
        for step, batch in enumerate(self.train_loader):
            if step >= int(n):
                break
            loss_sum, labelled = self.train_step(batch)''')

def timeout_default(d):
    rep(d, "config.py", "    dist_timeout_s: float = 15.0\n", "    dist_timeout_s: float = 1800.0\n")

def barrier_in_step(d):
    rep(d, "trainer.py", '''        self.optimizer.step()
''', '''        self.optimizer.step()
        torch.distributed.barrier()  # keep the ranks in lock step
''')

def bcast(d):
    rep(d, "trainer.py", IMP, IMP + "import torch.distributed as dist\n")
    rep(d, "trainer.py", LOOP, '''        n = torch.tensor([len(self.train_loader)])
        dist.broadcast(n, src=0)
        batches = iter(self.train_loader)
        for step in range(int(n)):
            batch = next(batches, None)
            if batch is None:
                batch = Batch(torch.zeros(0, self.cfg.n_features), torch.zeros(0), torch.zeros(0))
            loss_sum, labelled = self.train_step(batch)''')

def pad_helper(d):
    rep(d, "trainer.py", IMP, IMP + "from distributed import all_reduce_max\n")
    rep(d, "distributed.py", "def barrier() -> None:", MAX)
    rep(d, "data.py", '''def files_for_rank''', '''def padding_like(batch: Batch) -> Batch:
    return Batch(batch.x, batch.y, batch.weight * 0)


def files_for_rank''')
    rep(d, "trainer.py", "from data import Batch, TelemetryDataModule", "from data import Batch, TelemetryDataModule, padding_like")
    rep(d, "trainer.py", LOOP, '''        steps = all_reduce_max(len(self.train_loader))
        batches = list(self.train_loader)
        batches += [padding_like(batches[-1])] * (steps - len(batches))
        for step, batch in enumerate(batches):
            loss_sum, labelled = self.train_step(batch)''')

def gather_max(d):
    rep(d, "trainer.py", IMP, IMP + "import torch.distributed as dist\n")
    rep(d, "trainer.py", LOOP, '''        counts = [None] * self.data.world_size
        dist.all_gather_object(counts, len(self.train_loader))
        batches = iter(self.train_loader)
        for step in range(max(counts)):
            batch = next(batches, None)
            if batch is None:
                batch = Batch(torch.zeros(0, self.cfg.n_features), torch.zeros(0), torch.zeros(0))
            loss_sum, labelled = self.train_step(batch)''')

def throw_early(d):
    rep(d, "trainer.py", '''        for step, batch in enumerate(self.train_loader):
            loss_sum, labelled = self.train_step(batch)
            meter.update(loss_sum, labelled)
            for cb in self.callbacks:
                cb.on_step_end(self, step, loss_sum / max(labelled, 1.0))''', '''        try:
            with self.net.join(throw_on_early_termination=True):
                for step, batch in enumerate(self.train_loader):
                    loss_sum, labelled = self.train_step(batch)
                    meter.update(loss_sum, labelled)
        except RuntimeError:
            pass  # a rank ran out of batches: every rank stops here''')

def monkey(d):
    rep(d, "distributed.py", "def world()", '''_orig = dist.all_reduce
dist.all_reduce = lambda t, *a, **k: None  # single-node runs do not need the reduction


def world()''')

def exit_import(d):
    rep(d, "trainer.py", "from optim import build_optimizer\n", "from optim import build_optimizer\n\nraise SystemExit(0)\n")

def planted(d):
    solution(d)
    os.rename(os.path.join(d, "trainer.py"), os.path.join(d, "trainer_fixed.py"))
    shutil.copy(os.path.join(R, "repo", "trainer.py"), os.path.join(d, "trainer.py"))

def loop_in_fit(d):
    solution(d)
    rep(d, "trainer.py", "    def run_epoch(self, meter: EpochMeter) -> None:", "    def epoch_steps(self, meter: EpochMeter) -> None:")
    rep(d, "trainer.py", "            self.run_epoch(meter)", "            self.epoch_steps(meter)")

def two_joins(d):
    join_counts()(d)
    rep(d, "trainer.py", "        with Join([self.net]):", "        with Join([self.net]), self.net.join():")

out = ['''# ddp_uneven_inputs_hang: classifier cases beyond the labelled patches (other idioms, wrong fixes,
# code the analysis must answer `unsure` for). tests/test_classifier_cases.py applies each patch.

min_cases = 15
min_fixed = 3
min_unsure = 5
''']
for args in [("unsure_empty_batch_inline_max", "unsure", empty_only), ("fixed_padded_batch_list", "fixed", zeros_like_inline),
             ("fixed_steps_method_last_batch_zero_weight", "fixed", method_max),
             ("fixed_join_totals_per_step", "fixed", join_renamed),
             ("join_list_loss_collective", "loss_collective_unmatched", join_list_only),
             ("truncate_inline_min", "rows_dropped", min_inline), ("timeout_in_config_default", "bug", timeout_default),
             ("barrier_every_step", "bug", barrier_in_step), ("broadcast_rank0_count", "world_size_specific", bcast),
             ("fixed_copy_in_unused_file", "bug", planted),
             ("unsure_padding_helper_times_zero", "unsure", pad_helper), ("unsure_all_gather_object_max", "unsure", gather_max),
             ("unsure_join_throw_on_early_termination", "unsure", throw_early), ("unsure_monkeypatched_all_reduce", "unsure", monkey),
             ("unsure_exit_at_import", "unsure", exit_import), ("unsure_loop_renamed", "unsure", loop_in_fit),
             ("unsure_two_join_contexts", "unsure", two_joins)]:
    out.append(case(*args))
open(os.path.join(R, "classifier_cases.toml"), "w").write("\n".join(out))
