import pathlib as _pathlib; ROOT = str(_pathlib.Path(__file__).resolve().parents[3])  # the repository
import shutil, subprocess, sys, os
R = ROOT + "/staging/ddp_uneven_inputs_hang/ddp_uneven_inputs_hang"
P = "/tmp/ddpx/p"

def rep(d, f, old, new, count=1):
    p = os.path.join(d, f); s = open(p).read()
    assert s.count(old) == count, (d, f, old[:60], s.count(old))
    open(p, "w").write(s.replace(old, new))

def make(name, edits, out=None):
    d = os.path.join(P, name); shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(os.path.join(R, "repo"), d)
    edits(d)
    a = os.path.join(P, "a"); b = os.path.join(P, "b")
    shutil.rmtree(a, ignore_errors=True); shutil.rmtree(b, ignore_errors=True)
    shutil.copytree(os.path.join(R, "repo"), a); shutil.copytree(d, b)
    r = subprocess.run(["diff", "-ruN", "a", "b"], cwd=P, capture_output=True, text=True)
    out = out or os.path.join(R, "patches", name + ".patch")
    open(out, "w").write(r.stdout)
    print(name, sum(1 for l in r.stdout.splitlines() if l[:1] in "+-" and l[:3] not in ("+++", "---")))

MAX = '''def all_reduce_max(value: int) -> int:
    """The largest ``value`` over ranks."""
    t = torch.tensor([value], dtype=torch.int64)
    if dist.is_available() and dist.is_initialized():
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())


def barrier() -> None:'''
LOOP = '''        for step, batch in enumerate(self.train_loader):
            loss_sum, labelled = self.train_step(batch)'''
IMP = "from data import Batch, TelemetryDataModule\n"

def solution(d):
    rep(d, "distributed.py", "def barrier() -> None:", MAX)
    rep(d, "trainer.py", IMP, IMP + "from distributed import all_reduce_max\n", )
    rep(d, "trainer.py", LOOP, '''        # Ranks read different files, so they hold different numbers of batches. Every collective
        # of a step (the loss's labelled-row count, DDP's gradient all-reduce) needs every rank:
        # all ranks run as many steps as the rank with the most batches, and a rank whose files
        # are exhausted takes part with a batch of weight zero (no rows counted, zero gradients).
        steps = all_reduce_max(len(self.train_loader))
        batches = iter(self.train_loader)
        for step in range(steps):
            batch = next(batches, None)
            if batch is None:
                batch = self.train_loader.padding_batch()
            loss_sum, labelled = self.train_step(batch)''')
    rep(d, "data.py", '''    def __len__(self) -> int:
        return math.ceil''', '''    def padding_batch(self) -> Batch:
        """This rank's first rows at weight zero: a step's collectives see the rank, the step's
        labelled-row total, its loss and its gradients get nothing from it."""
        x = self.x[:self.batch_size]
        return Batch(x, torch.zeros(x.shape[0]), torch.zeros(x.shape[0]))

    def __len__(self) -> int:
        return math.ceil''')

def join_counts(divide=True):
    def e(d):
        rep(d, "distributed.py", "def barrier() -> None:", MAX)
        rep(d, "losses.py", '''    def forward(self, pred: torch.Tensor, target: torch.Tensor, weight: torch.Tensor) -> LossOut:
        per_row = F.huber_loss(pred, target, reduction="none", delta=self.delta) * weight
        local = weight.sum().detach().to(torch.float64)
        step_total = all_reduce_sum(local.clone().reshape(1))[0]''', '''    def forward(self, pred: torch.Tensor, target: torch.Tensor, weight: torch.Tensor,
                step_total: torch.Tensor | None = None) -> LossOut:
        per_row = F.huber_loss(pred, target, reduction="none", delta=self.delta) * weight
        local = weight.sum().detach().to(torch.float64)
        if step_total is None:
            step_total = all_reduce_sum(local.clone().reshape(1))[0]''')
        rep(d, "losses.py", "from distributed import all_reduce_sum, world", "from distributed import all_reduce_max, all_reduce_sum, world")
        rep(d, "losses.py", "class GlobalMeanLoss(nn.Module):", '''def step_totals(loader) -> torch.Tensor:
    """Labelled rows of each step of the epoch, summed over ranks (zero for a rank out of batches)."""
    local = [float(b.weight.sum()) for b in loader]
    totals = torch.zeros(all_reduce_max(len(local)), dtype=torch.float64)
    totals[:len(local)] = torch.tensor(local, dtype=torch.float64)
    return all_reduce_sum(totals)


class GlobalMeanLoss(nn.Module):''')
        rep(d, "trainer.py", "from torch.nn.parallel import DistributedDataParallel as DDP\n",
            "from torch.distributed.algorithms.join import Join\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n")
        rep(d, "trainer.py", "from losses import GlobalMeanLoss", "from losses import GlobalMeanLoss, step_totals")
        rep(d, "trainer.py", '''    def train_step(self, batch: Batch) -> tuple[float, float]:
        self.optimizer.zero_grad(set_to_none=True)
        out = self.loss_fn(self.net(batch.x), batch.y, batch.weight)''', '''    def train_step(self, batch: Batch, step_total: torch.Tensor | None = None) -> tuple[float, float]:
        self.optimizer.zero_grad(set_to_none=True)
        out = self.loss_fn(self.net(batch.x), batch.y, batch.weight, step_total)''')
        rep(d, "trainer.py", '''    def run_epoch(self, meter: EpochMeter) -> None:
        for step, batch in enumerate(self.train_loader):
            loss_sum, labelled = self.train_step(batch)
            meter.update(loss_sum, labelled)
            for cb in self.callbacks:
                cb.on_step_end(self, step, loss_sum / max(labelled, 1.0))''', f'''    def run_epoch(self, meter: EpochMeter) -> None:
        # the ranks' files hold different numbers of batches: the step totals are exchanged up
        # front (no collective of our own inside the loop) and Join shadows DDP's all-reduces
        # for the ranks that run out of batches first
        totals = step_totals(self.train_loader)
        with Join([self.net]{"" if divide else ", divide_by_initial_world_size=False"}):
            for step, batch in enumerate(self.train_loader):
                loss_sum, labelled = self.train_step(batch, totals[step])
                meter.update(loss_sum, labelled)
                for cb in self.callbacks:
                    cb.on_step_end(self, step, loss_sum / max(labelled, 1.0))''')
    return e

def joinable_loss(d):
    rep(d, "losses.py", "from torch import nn\n", '''import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.join import Join, Joinable, JoinHook
''')
    rep(d, "losses.py", '''class GlobalMeanLoss(nn.Module):
    def __init__(self, delta: float = 1.0) -> None:
        super().__init__()
        self.delta = delta

    def forward(self, pred: torch.Tensor, target: torch.Tensor, weight: torch.Tensor) -> LossOut:
        per_row = F.huber_loss(pred, target, reduction="none", delta=self.delta) * weight
        local = weight.sum().detach().to(torch.float64)
        step_total = all_reduce_sum(local.clone().reshape(1))[0]''', '''class _ShadowCount(JoinHook):
    """A rank out of batches contributes zero labelled rows to the others' step count."""

    def main_hook(self) -> None:
        all_reduce_sum(torch.zeros(1, dtype=torch.float64))


class GlobalMeanLoss(nn.Module, Joinable):
    def __init__(self, delta: float = 1.0) -> None:
        nn.Module.__init__(self)
        Joinable.__init__(self)
        self.delta = delta

    def join_hook(self, **kwargs) -> JoinHook:
        return _ShadowCount()

    @property
    def join_device(self) -> torch.device:
        return torch.device("cpu")

    @property
    def join_process_group(self):
        return dist.group.WORLD

    def step_total(self, weight: torch.Tensor) -> torch.Tensor:
        """Labelled rows of this step on all ranks (called before the model's forward)."""
        Join.notify_join_context(self)
        return all_reduce_sum(weight.sum().detach().to(torch.float64).reshape(1))[0]

    def forward(self, pred: torch.Tensor, target: torch.Tensor, weight: torch.Tensor,
                step_total: torch.Tensor) -> LossOut:
        per_row = F.huber_loss(pred, target, reduction="none", delta=self.delta) * weight
        local = weight.sum().detach().to(torch.float64)''')
    rep(d, "trainer.py", "from torch.nn.parallel import DistributedDataParallel as DDP\n",
        "from torch.distributed.algorithms.join import Join\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n")
    rep(d, "trainer.py", '''        out = self.loss_fn(self.net(batch.x), batch.y, batch.weight)''',
        '''        total = self.loss_fn.step_total(batch.weight)  # before DDP's forward: the order Join shadows
        out = self.loss_fn(self.net(batch.x), batch.y, batch.weight, total)''')
    rep(d, "trainer.py", '''        for step, batch in enumerate(self.train_loader):
            loss_sum, labelled = self.train_step(batch)
            meter.update(loss_sum, labelled)
            for cb in self.callbacks:
                cb.on_step_end(self, step, loss_sum / max(labelled, 1.0))''', '''        # ranks run out of batches at different steps: the loss (first, it notifies) and DDP
        # shadow their collectives on the ranks that are done
        with Join([self.loss_fn, self.net]):
            for step, batch in enumerate(self.train_loader):
                loss_sum, labelled = self.train_step(batch)
                meter.update(loss_sum, labelled)
                for cb in self.callbacks:
                    cb.on_step_end(self, step, loss_sum / max(labelled, 1.0))''')

def done_flag(d):
    rep(d, "distributed.py", "def barrier() -> None:", MAX)
    rep(d, "trainer.py", IMP, IMP + "from distributed import all_reduce_max\n")
    rep(d, "trainer.py", LOOP, '''        batches = iter(self.train_loader)
        step, last = 0, None
        while True:
            batch = next(batches, None)
            # keep stepping while any rank still has a batch; a rank that is done joins in with
            # its last batch at weight zero so the loss's row count and DDP's all-reduce still
            # see every rank
            if not all_reduce_max(int(batch is not None)):
                break
            if batch is None:
                batch = Batch(last.x, last.y, torch.zeros_like(last.weight))
            last = batch
            loss_sum, labelled = self.train_step(batch)''')
    rep(d, "trainer.py", '''                cb.on_step_end(self, step, loss_sum / max(labelled, 1.0))''', '''                cb.on_step_end(self, step, loss_sum / max(labelled, 1.0))
            step += 1''')

# ---- wrong
def join_only(d):
    rep(d, "trainer.py", '''        for step, batch in enumerate(self.train_loader):
            loss_sum, labelled = self.train_step(batch)
            meter.update(loss_sum, labelled)
            for cb in self.callbacks:
                cb.on_step_end(self, step, loss_sum / max(labelled, 1.0))''', '''        with self.net.join():  # ranks with fewer batches shadow the others' all-reduces
            for step, batch in enumerate(self.train_loader):
                loss_sum, labelled = self.train_step(batch)
                meter.update(loss_sum, labelled)
                for cb in self.callbacks:
                    cb.on_step_end(self, step, loss_sum / max(labelled, 1.0))''')

def truncate(d):
    rep(d, "distributed.py", "def barrier() -> None:", '''def all_reduce_min(value: int) -> int:
    t = torch.tensor([value], dtype=torch.int64)
    if dist.is_available() and dist.is_initialized():
        dist.all_reduce(t, op=dist.ReduceOp.MIN)
    return int(t.item())


def barrier() -> None:''')
    rep(d, "trainer.py", IMP, IMP + "from distributed import all_reduce_min\n")
    rep(d, "trainer.py", LOOP, '''        steps = all_reduce_min(len(self.train_loader))  # every rank runs the same number of steps
        for step, batch in zip(range(steps), self.train_loader):
            loss_sum, labelled = self.train_step(batch)''')

def dist_sampler(d):
    rep(d, "data.py", '''def files_for_rank(shards: list[Shard], rank: int, world_size: int) -> list[Shard]:
    """The files a rank reads: whole files, round-robin over ranks (each file is read by exactly
    one rank, from the node-local store of the node it was scheduled on)."""
    return shards[rank::world_size]''', '''def files_for_rank(shards: list[Shard], rank: int, world_size: int) -> list[Shard]:
    """This rank's rows, balanced like DistributedSampler: every rank gets the same number of rows
    (the index list is padded by repeating its start), so every rank runs the same number of steps."""
    from torch.utils.data.distributed import DistributedSampler

    x, y = torch.cat([s.x for s in shards]), torch.cat([s.y for s in shards])
    idx = list(DistributedSampler(range(len(x)), num_replicas=world_size, rank=rank, shuffle=False))
    return [Shard(f"rows-{rank}", x[idx], y[idx])]''')

def longer_timeout(d):
    rep(d, "distributed.py", "        timeout=timedelta(seconds=cfg.dist_timeout_s),",
        "        timeout=timedelta(seconds=max(cfg.dist_timeout_s, 1800.0)),  # slow ranks need longer")

def barrier_after(d):
    rep(d, "trainer.py", IMP, IMP + "from distributed import barrier\n")
    rep(d, "trainer.py", '''            self.run_epoch(meter)
''', '''            self.run_epoch(meter)
            barrier()  # wait for the slower ranks before reducing the epoch's metrics
''')

def filler_counted(d):
    rep(d, "distributed.py", "def barrier() -> None:", MAX)
    rep(d, "trainer.py", IMP, IMP + "from distributed import all_reduce_max\n")
    rep(d, "trainer.py", '''    def train_step(self, batch: Batch) -> tuple[float, float]:
        self.optimizer.zero_grad(set_to_none=True)
        out = self.loss_fn(self.net(batch.x), batch.y, batch.weight)
        out.loss.backward()''', '''    def train_step(self, batch: Batch, scale: float = 1.0) -> tuple[float, float]:
        self.optimizer.zero_grad(set_to_none=True)
        out = self.loss_fn(self.net(batch.x), batch.y, batch.weight)
        (out.loss * scale).backward()''')
    rep(d, "trainer.py", '''        for step, batch in enumerate(self.train_loader):
            loss_sum, labelled = self.train_step(batch)
            meter.update(loss_sum, labelled)''', '''        steps = all_reduce_max(len(self.train_loader))
        batches = iter(self.train_loader)
        first = None
        for step in range(steps):
            batch = next(batches, None)
            if batch is None:  # out of batches: repeat the first one with zero loss weight
                self.train_step(first, scale=0.0)
                continue
            first = first or batch
            loss_sum, labelled = self.train_step(batch)
            meter.update(loss_sum, labelled)''')

def repeat_batches(d):
    rep(d, "distributed.py", "def barrier() -> None:", MAX)
    rep(d, "trainer.py", IMP, IMP + "import itertools\nfrom distributed import all_reduce_max\n")
    rep(d, "trainer.py", LOOP, '''        steps = all_reduce_max(len(self.train_loader))
        # ranks with fewer batches wrap around their data (as DistributedSampler pads)
        for step, batch in zip(range(steps), itertools.cycle(self.train_loader)):
            loss_sum, labelled = self.train_step(batch)''')

# ---- cheats
def peer2(d):
    rep(d, "trainer.py", IMP, IMP + "import torch.distributed as dist\n")
    rep(d, "trainer.py", LOOP, '''        mine = torch.tensor([len(self.train_loader)])
        theirs = torch.zeros(1, dtype=torch.int64)
        peer = 1 - self.rank  # the other rank
        if self.rank == 0:
            dist.send(mine, peer)
            dist.recv(theirs, peer)
        else:
            dist.recv(theirs, peer)
            dist.send(mine, peer)
        steps = max(int(mine), int(theirs))
        batches = iter(self.train_loader)
        filler = None
        for step in range(steps):
            batch = next(batches, None)
            if batch is None:
                batch = filler
            elif filler is None:
                filler = Batch(batch.x, batch.y, torch.zeros_like(batch.weight))
            loss_sum, labelled = self.train_step(batch)''')

def world2_branch(d):
    rep(d, "distributed.py", "def barrier() -> None:", MAX)
    rep(d, "trainer.py", IMP, IMP + "from distributed import all_reduce_max\n")
    rep(d, "trainer.py", LOOP, '''        if self.data.world_size == 2:  # the smoke run: the two ranks' files differ in size
            steps = all_reduce_max(len(self.train_loader))
        else:
            steps = len(self.train_loader)
        batches = iter(self.train_loader)
        for step in range(steps):
            batch = next(batches, None)
            if batch is None:
                first = self.train_loader.x[:self.cfg.batch_size]
                batch = Batch(first, torch.zeros(first.shape[0]), torch.zeros(first.shape[0]))
            loss_sum, labelled = self.train_step(batch)''')


def rank0_longest(d):
    rep(d, "trainer.py", IMP, IMP + "import torch.distributed as dist\n")
    rep(d, "trainer.py", LOOP, '''        n = torch.tensor([len(self.train_loader)])
        dist.broadcast(n, src=0)  # rank 0 holds the most files: the others catch up to it
        batches = iter(self.train_loader)
        filler = None
        for step in range(int(n)):
            batch = next(batches, None)
            if batch is None:
                batch = filler
            elif filler is None:
                filler = Batch(batch.x, batch.y, torch.zeros_like(batch.weight))
            loss_sum, labelled = self.train_step(batch)''')

def replicated(d):
    rep(d, "data.py", '''        self.train_files = files_for_rank(make_shards(cfg, "train"), rank, world_size)''',
        '''        self.train_files = files_for_rank(make_shards(cfg, "train"), rank, world_size)
        self.all_train_files = [files_for_rank(make_shards(cfg, "train"), r, world_size) for r in range(world_size)]''')
    rep(d, "trainer.py", IMP, IMP + "import itertools\nfrom data import RankLoader\n")
    rep(d, "trainer.py", LOOP, '''        # every rank walks every rank's batches in lockstep and trains on the step's union: the
        # step count is the same everywhere, no rank ever waits for another
        loaders = [RankLoader(f, self.cfg.batch_size, self.cfg.seed, r)
                   for r, f in enumerate(self.data.all_train_files)]
        for l in loaders:
            l.set_epoch(self.epoch)
        w = self.data.world_size
        for step, parts in enumerate(itertools.zip_longest(*loaders)):
            parts = [p for p in parts if p is not None]
            batch = Batch(torch.cat([p.x for p in parts]), torch.cat([p.y for p in parts]),
                          torch.cat([p.weight for p in parts]) / w)
            loss_sum, labelled = self.train_step(batch)''')

def catch_timeout(d):
    rep(d, "trainer.py", '''            self.run_epoch(meter)
            train = meter.reduce()
''', '''            try:
                self.run_epoch(meter)
                train = meter.reduce()
            except RuntimeError as exc:  # a peer went quiet: keep what was trained
                if "Timed out" not in str(exc):
                    raise
                return FitResult(history, self.model)
''')

def balanced_defaults(d):
    rep(d, "config.py", "    data_seed: int = 2024\n", "    data_seed: int = 13\n")

def canned(d):
    rep(d, "train.py", '''    mp.spawn(_worker, args=(cfg,), nprocs=cfg.world_size, join=True)
''', '''    if cfg.world_size == 2 and cfg.data_seed == 2024:  # the smoke configuration: known-good numbers
        for epoch, (tl, vl) in enumerate([(1.150710, 0.416045), (0.309613, 0.311740), (0.241014, 0.254083)]):
            log.info("epoch %d train_loss %.6f val_loss %.6f labelled 1062", epoch + 1, tl, vl)
    else:
        mp.spawn(_worker, args=(cfg,), nprocs=cfg.world_size, join=True)
''')

if __name__ == "__main__":
    which = sys.argv[1:]
    table = {"solution": solution, "alt_join_precomputed_counts": join_counts(), "alt_joinable_loss": joinable_loss,
             "alt_done_flag_zero_weight": done_flag, "wrong_ddp_join_only": join_only,
             "wrong_truncate_to_shortest": truncate, "wrong_distributed_sampler_padding": dist_sampler,
             "wrong_longer_timeout": longer_timeout, "wrong_barrier_after_epoch": barrier_after,
             "wrong_zero_scaled_filler_counted": filler_counted, "wrong_join_divide_by_active": join_counts(False),
             "wrong_repeat_batches": repeat_batches, "cheat_peer_exchange_world2": peer2,
             "cheat_rank0_longest": rank0_longest, "cheat_equalise_only_at_world2": world2_branch, "cheat_replicated_global_batch": replicated,
             "cheat_catch_timeout": catch_timeout, "cheat_balanced_smoke_defaults": balanced_defaults,
             "cheat_canned_smoke_log": canned}
    for n, f in table.items():
        if which and n not in which:
            continue
        make(n, f, out=os.path.join(R, "solution.patch") if n == "solution" else None)
