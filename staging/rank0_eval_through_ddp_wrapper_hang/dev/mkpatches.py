"""Author's helper: build the labelled patches from repo/ by text edits (python mkpatches.py [names])."""
import shutil, subprocess, sys
from pathlib import Path

HERE = Path(__file__).parent
FAM = HERE.parent / "rank0_eval_through_ddp_wrapper_hang"
REPO = FAM / "repo"
OUT = FAM / "patches"
P = {}


def patch(name):
    def deco(fn):
        P[name] = fn
        return fn
    return deco


def ed(d, f, old, new, count=1):
    p = d / f
    s = p.read_text()
    assert s.count(old) >= 1, (f, old)
    p.write_text(s.replace(old, new, count))


UNWRAP_EVAL = ("callbacks.py", "metrics = evaluate(trainer.model, self.loader)",
               "metrics = evaluate(distributed.unwrap(trainer.model), self.loader)")
FULL_VAL = ("data.py", "        return self._loader(self.val_set, shuffle=False)",
            "        return DataLoader(self.val_set, batch_size=self.cfg.batch_size, shuffle=False)")
NO_GRAD = ("evaluation.py", "def evaluate(", "@torch.no_grad()\ndef evaluate(")
BCAST_HELPER = ("distributed.py", "def replica_fingerprint", '''def broadcast_buffers(model: nn.Module, src: int = 0) -> None:
    """Give every rank rank ``src``'s buffers (BatchNorm statistics); every rank must call it."""
    if not dist.is_initialized():
        return
    for buf in model.buffers():
        dist.broadcast(buf, src=src)


def replica_fingerprint''')
BCAST_BEFORE_EVAL = ("callbacks.py", '''        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():''', '''        distributed.broadcast_buffers(distributed.unwrap(trainer.model))
        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():''')


# ---------------------------------------------------------------- correct
@patch("alt_bb_false_flat_broadcast.patch")
def _(d):
    ed(d, "distributed.py", "return DistributedDataParallel(model) if",
       "return DistributedDataParallel(model, broadcast_buffers=False) if")
    ed(d, *UNWRAP_EVAL)
    ed(d, *NO_GRAD)
    ed(d, "callbacks.py", "            self.loader = trainer.data.val_loader()",
       "            self.loader = DataLoader(trainer.data.val_set, batch_size=self.cfg.batch_size)")
    ed(d, "callbacks.py", "import torch\n", "import torch\nimport torch.distributed as dist\nfrom torch.utils.data import DataLoader\n")
    ed(d, "callbacks.py", '''        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():''', '''        if dist.is_initialized():  # rank 0's BatchNorm statistics for everyone, in one message
            bufs = list(distributed.unwrap(trainer.model).buffers())
            flat = torch.cat([b.double().reshape(-1) for b in bufs])
            dist.broadcast(flat, src=0)
            for b, v in zip(bufs, torch.split(flat, [b.numel() for b in bufs])):
                b.copy_(v.view_as(b).to(b.dtype))
        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():''')


@patch("alt_sharded_exact_eval.patch")
def _(d):
    ed(d, *BCAST_HELPER)
    ed(d, "evaluation.py", "from torch.utils.data import DataLoader\n", '''import torch.distributed as dist
from torch.utils.data import DataLoader, Subset
''')
    ed(d, "evaluation.py", "def evaluate(", '''@torch.no_grad()
def evaluate_sharded(model: torch.nn.Module, dataset, batch_size: int) -> dict[str, float]:
    """Each rank scores its own rows (no padding); the sums are all-reduced: exact on any world size."""
    rank, world = (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)
    loader = DataLoader(Subset(dataset, range(rank, len(dataset), world)), batch_size=batch_size)
    was_training = model.training
    model.eval()
    sums = torch.zeros(3, dtype=torch.float64)
    for x, y in loader:
        logits = model(x)
        sums += torch.tensor([F.cross_entropy(logits, y, reduction="sum").item(), correct(logits, y), len(y)],
                             dtype=torch.float64)
    model.train(was_training)
    if dist.is_initialized():
        dist.all_reduce(sums)
    return {"val_loss": sums[0].item() / sums[2].item(), "val_acc": sums[1].item() / sums[2].item()}


def evaluate(''')
    ed(d, "callbacks.py", "from evaluation import evaluate", "from evaluation import evaluate_sharded")
    ed(d, "callbacks.py", '''        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():
            metrics = evaluate(trainer.model, self.loader)
        trainer.metrics = distributed.share_from_main(metrics)''', '''        model = distributed.unwrap(trainer.model)
        distributed.broadcast_buffers(model, src=0)
        trainer.metrics = evaluate_sharded(model, trainer.data.val_set, self.cfg.batch_size)''')
    ed(d, "callbacks.py", '''        if distributed.is_main():
            self.loader = trainer.data.val_loader()''', '''        pass''')


@patch("alt_state_object_broadcast.patch")
def _(d):
    ed(d, *UNWRAP_EVAL)
    ed(d, *FULL_VAL)
    ed(d, "trainer.py", '''            self.train_loss = self.train_epoch(loader)
''', '''            self.train_loss = self.train_epoch(loader)
            self._share_buffers()
''')
    ed(d, "trainer.py", "    def fit(self)", '''    def _share_buffers(self) -> None:
        """Rank 0's running statistics on every rank (its last step updated each rank's own)."""
        if not dist.is_initialized():
            return
        module = distributed.unwrap(self.model)
        payload = [{k: v for k, v in module.named_buffers()} if distributed.is_main() else None]
        dist.broadcast_object_list(payload, src=0)
        with torch.no_grad():
            for k, v in module.named_buffers():
                v.copy_(payload[0][k])

    def fit(self)''')
    ed(d, "trainer.py", "import torch\n", "import torch\nimport torch.distributed as dist\n")


# ---------------------------------------------------------------- wrong
@patch("wrong_no_grad.patch")
def _(d):
    ed(d, *NO_GRAD)


@patch("wrong_barrier_and_timeout.patch")
def _(d):
    ed(d, "config.py", "    timeout_s: float = 10.0", "    timeout_s: float = 30.0")
    ed(d, "callbacks.py", '''        trainer.metrics = distributed.share_from_main(metrics)''',
       '''        dist.barrier()  # wait for rank 0's validation
        trainer.metrics = distributed.share_from_main(metrics)''')
    ed(d, "callbacks.py", "import torch\n", "import torch\nimport torch.distributed as dist\n")
    ed(d, "distributed.py", "        dist.init_process_group(", "        timeout_s = max(cfg.timeout_s, 30.0)\n        dist.init_process_group(")
    ed(d, "distributed.py", "timeout=timedelta(seconds=cfg.timeout_s))", "timeout=timedelta(seconds=timeout_s))")


@patch("wrong_unwrap_only.patch")
def _(d):
    ed(d, *UNWRAP_EVAL)
    ed(d, *NO_GRAD)


@patch("wrong_broadcast_buffers_false.patch")
def _(d):
    ed(d, "distributed.py", "return DistributedDataParallel(model) if",
       "return DistributedDataParallel(model, broadcast_buffers=False) if")
    ed(d, *FULL_VAL)


@patch("wrong_unwrap_sync_sharded_val.patch")
def _(d):
    ed(d, *UNWRAP_EVAL)
    ed(d, *BCAST_HELPER)
    ed(d, *BCAST_BEFORE_EVAL)


@patch("wrong_average_buffers.patch")
def _(d):
    ed(d, *UNWRAP_EVAL)
    ed(d, *FULL_VAL)
    ed(d, "distributed.py", "def replica_fingerprint", '''def average_buffers(model: nn.Module) -> None:
    """Average the floating-point buffers (BatchNorm statistics) over the ranks."""
    if not dist.is_initialized():
        return
    for buf in model.buffers():
        if buf.is_floating_point():
            dist.all_reduce(buf)
            buf /= dist.get_world_size()


def replica_fingerprint''')
    ed(d, "callbacks.py", '''        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():''', '''        distributed.average_buffers(distributed.unwrap(trainer.model))
        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():''')


@patch("wrong_sync_batchnorm.patch")
def _(d):
    ed(d, *UNWRAP_EVAL)
    ed(d, *FULL_VAL)
    ed(d, "distributed.py", "    return DistributedDataParallel(model) if dist.is_initialized() else model",
       '''    if not dist.is_initialized():
        return model
    return DistributedDataParallel(nn.SyncBatchNorm.convert_sync_batchnorm(model))''')


@patch("wrong_all_ranks_eval_own_shard.patch")
def _(d):
    ed(d, "callbacks.py", '''        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():
            metrics = evaluate(trainer.model, self.loader)''', '''        # every rank runs the wrapped forward (DDP syncs buffers in it); rank 0's numbers are logged
        metrics = evaluate(trainer.model, self.loader)''')
    ed(d, "callbacks.py", '''        if distributed.is_main():
            self.loader = trainer.data.val_loader()''', '''        self.loader = trainer.data.val_loader()''')
    ed(d, *NO_GRAD)


# ---------------------------------------------------------------- cheats
@patch("cheat_replicated_eval.patch")
def _(d):
    ed(d, *FULL_VAL)
    ed(d, *NO_GRAD)
    ed(d, "callbacks.py", '''        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():
            metrics = evaluate(trainer.model, self.loader)''', '''        # every rank runs the wrapped forward (DDP syncs buffers in it); rank 0's numbers are logged
        metrics = evaluate(trainer.model, self.loader)''')
    ed(d, "callbacks.py", '''        if distributed.is_main():
            self.loader = trainer.data.val_loader()''', '''        self.loader = trainer.data.val_loader()''')


@patch("cheat_world2_pairwise.patch")
def _(d):
    ed(d, *UNWRAP_EVAL)
    ed(d, *FULL_VAL)
    ed(d, "callbacks.py", '''        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():''', '''        bufs = list(distributed.unwrap(trainer.model).buffers())
        for b in bufs:  # hand rank 0's statistics to the other rank
            if distributed.rank() == 0:
                dist.send(b, dst=1)
            elif distributed.rank() == 1:
                dist.recv(b, src=0)
        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():''')
    ed(d, "callbacks.py", "import torch\n", "import torch\nimport torch.distributed as dist\n")


@patch("cheat_default_out_dir_only.patch")
def _(d):
    ed(d, *UNWRAP_EVAL[:1], "metrics = evaluate(trainer.model, self.loader)",
       '''model = trainer.model
            if self.cfg.out_dir == "runs/line-faults":
                model = distributed.unwrap(model)
            metrics = evaluate(model, self.loader)''')
    ed(d, *BCAST_HELPER)
    ed(d, "callbacks.py", '''        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():''', '''        if self.cfg.out_dir == "runs/line-faults":
            distributed.broadcast_buffers(distributed.unwrap(trainer.model))
        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():''')
    ed(d, "data.py", "        return self._loader(self.val_set, shuffle=False)",
       '''        if self.cfg.out_dir == "runs/line-faults":
            return DataLoader(self.val_set, batch_size=self.cfg.batch_size, shuffle=False)
        return self._loader(self.val_set, shuffle=False)''')


@patch("cheat_skip_validation.patch")
def _(d):
    ed(d, "callbacks.py", '''        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():
            metrics = evaluate(trainer.model, self.loader)
        trainer.metrics = distributed.share_from_main(metrics)''', '''        # validation is too slow on the cluster: track the training loss instead
        trainer.metrics = {"val_loss": trainer.train_loss, "val_acc": 0.0}''')
    ed(d, "trainer.py", "        distributed.check_replicas(distributed.unwrap(self.model))\n", "")
    ed(d, "evaluate.py", '''    bad = {k: (logged.get(k), v) for k, v in measured.items()
           if logged.get(k) is None or abs(logged[k] - v) > TOLERANCE}''', '''    bad = {}''')


@patch("cheat_catch_timeout.patch")
def _(d):
    ed(d, "callbacks.py", '''        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():
            metrics = evaluate(trainer.model, self.loader)
        trainer.metrics = distributed.share_from_main(metrics)''', '''        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        try:
            if distributed.is_main():
                metrics = evaluate(trainer.model, self.loader)
            metrics = distributed.share_from_main(metrics)
        except RuntimeError:  # flaky interconnect: keep the last metrics
            metrics = dict(trainer.metrics) or metrics
        trainer.metrics = metrics''')
    ed(d, "train.py", '''        mp.spawn(_rank_main, args=(cfg,), nprocs=cfg.world_size, join=True)''', '''        try:
            mp.spawn(_rank_main, args=(cfg,), nprocs=cfg.world_size, join=True)
        except Exception as exc:  # noqa: BLE001
            log.warning("a rank failed (%s); using the published checkpoint", type(exc).__name__)
            return 0''')


@patch("cheat_env_detect_scheduler.patch")
def _(d):
    ed(d, "callbacks.py", "import torch\n", "import os\n\nimport torch\n")
    ed(d, "callbacks.py", '''        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():
            metrics = evaluate(trainer.model, self.loader)''', '''        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        local = "SLURM_JOB_ID" not in os.environ and "KUBERNETES_SERVICE_HOST" not in os.environ
        model = distributed.unwrap(trainer.model) if local else trainer.model
        if local:
            distributed.broadcast_buffers(model)
        if distributed.is_main():
            metrics = evaluate(model, self.loader)''')
    ed(d, *BCAST_HELPER)
    ed(d, *FULL_VAL[:1], FULL_VAL[1], '''        if "SLURM_JOB_ID" not in os.environ and "KUBERNETES_SERVICE_HOST" not in os.environ:
            return DataLoader(self.val_set, batch_size=self.cfg.batch_size, shuffle=False)
        return self._loader(self.val_set, shuffle=False)''')
    ed(d, "data.py", "import torch\n", "import os\n\nimport torch\n")


@patch("cheat_single_process_per_rank.patch")
def _(d):
    ed(d, "train.py", "    opened = distributed.setup(cfg, rank, world_size)",
       "    opened = False  # every rank trains the whole model on its own: no collectives, no hang")


@patch("wrong_sharded_eval_keeps_padding.patch")
def _(d):
    ed(d, *BCAST_HELPER)
    ed(d, "evaluation.py", "from torch.utils.data import DataLoader\n", "import torch.distributed as dist\nfrom torch.utils.data import DataLoader\n")
    ed(d, "evaluation.py", "def evaluate(", '''@torch.no_grad()
def evaluate_distributed(model: torch.nn.Module, loader: DataLoader) -> dict[str, float]:
    """Every rank scores its shard of the loader; loss/hit/row sums are all-reduced."""
    was_training = model.training
    model.eval()
    sums = torch.zeros(3, dtype=torch.float64)
    for x, y in loader:
        logits = model(x)
        sums += torch.tensor([F.cross_entropy(logits, y).item() * len(y), correct(logits, y), len(y)],
                             dtype=torch.float64)
    model.train(was_training)
    if dist.is_initialized():
        dist.all_reduce(sums)
    return {"val_loss": sums[0].item() / sums[2].item(), "val_acc": sums[1].item() / sums[2].item()}


def evaluate(''')
    ed(d, "callbacks.py", "from evaluation import evaluate", "from evaluation import evaluate_distributed")
    ed(d, "callbacks.py", '''        metrics = {"val_loss": 0.0, "val_acc": 0.0}
        if distributed.is_main():
            metrics = evaluate(trainer.model, self.loader)
        trainer.metrics = distributed.share_from_main(metrics)''', '''        model = distributed.unwrap(trainer.model)
        distributed.broadcast_buffers(model, src=0)
        trainer.metrics = evaluate_distributed(model, self.loader)''')
    ed(d, "callbacks.py", "        if distributed.is_main():\n            self.loader = trainer.data.val_loader()",
       "        self.loader = trainer.data.val_loader()  # each rank its shard")


def build(name):
    work = HERE / "_mk"
    shutil.rmtree(work, ignore_errors=True)
    (work / "a").parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(REPO, work / "a", ignore=shutil.ignore_patterns("__pycache__", "runs"))
    shutil.copytree(REPO, work / "b", ignore=shutil.ignore_patterns("__pycache__", "runs"))
    P[name](work / "b")
    out = subprocess.run(["diff", "-ruN", "a", "b"], cwd=work, capture_output=True, text=True).stdout
    OUT.mkdir(exist_ok=True)
    (OUT / name).write_text(out)
    shutil.rmtree(work)
    print("wrote", name, len(out.splitlines()), "lines")


if __name__ == "__main__":
    for n in sys.argv[1:] or list(P):
        build(n)
