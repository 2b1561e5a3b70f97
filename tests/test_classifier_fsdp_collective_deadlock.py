"""The fsdp_collective_deadlock classifier on states no labelled patch covers: fixes in other
idioms, wrong fixes it must catch, and code it must call UNSURE rather than guess about."""

from __future__ import annotations

import pytest

from sandbox_env.mock_analysis import UNSURE
from sandbox_env.tasks import TaskRegistry

from .conftest import ROOT

TASK = TaskRegistry(ROOT / "task_repos").get("fsdp_collective_deadlock")
REPO = TASK.repo_files()

EPOCH_END = """        if is_main_process():
            train_loss, samples = meter.global_mean()
"""
_T = REPO["train.py"]
RECORD = _T[
    _T.index("            history.append(\n") : _T.index("            )\n", _T.index("history.append(")) + 14
]


def state(*edits: tuple[str, str, str], **new_files: str) -> dict[str, str]:
    """The original repo with (file, old, new) replacements (each old text must occur once)."""
    files = dict(REPO)
    for path, old, new in edits:
        assert files[path].count(old) == 1, (path, old)
        files[path] = files[path].replace(old, new)
    files.update({f"{k}.py": v for k, v in new_files.items()})
    return files


def train(old: str, new: str) -> tuple[str, str, str]:
    return ("train.py", old, new)


INLINE = "        if is_main_process():\n"  # the epoch-end block once its reduction is hoisted


def hoist(reduction: str) -> tuple[str, str, str]:
    """Replace the rank-0 reduction by ``reduction`` (run on every rank) before the if."""
    return train(EPOCH_END, reduction + INLINE)


CASES = {
    # ---- correct fixes in other idioms --------------------------------------------------------
    "reduce_before_eval": (
        "fixed",
        state(
            train(
                "        val_loss, val_acc = evaluate(model, val_loader)\n",
                "        train_loss, samples = meter.global_mean()\n"
                "        val_loss, val_acc = evaluate(model, val_loader)\n",
            ),
            train(EPOCH_END, INLINE),
        ),
    ),
    "all_gather_object": (
        "fixed",
        state(
            hoist(
                "        parts = [None] * dist.get_world_size()\n"
                "        dist.all_gather_object(parts, (meter.total, meter.count))\n"
                "        total, count = sum(p[0] for p in parts), sum(p[1] for p in parts)\n"
                "        train_loss, samples = total / count, int(count)\n"
            )
        ),
    ),
    "helper_in_other_file": (
        "fixed",
        state(
            train(
                "from metrics import AverageMeter\n",
                "from metrics import AverageMeter\nfrom epoch_stats import epoch_summary\n",
            ),
            hoist("        train_loss, samples = epoch_summary(meter)\n"),
            epoch_stats='def epoch_summary(meter):\n    """Collective."""\n    return meter.global_mean()\n',
        ),
    ),
    "flag_variable_and_dict_call": (
        "fixed",
        state(
            train(
                "    history: list[dict] = []\n", "    is_master = rank == 0\n    history: list[dict] = []\n"
            ),
            train(
                EPOCH_END,
                "        train_loss, samples = meter.global_mean()\n        if is_master:\n"
                "            history.append(dict(epoch=epoch, train_loss=train_loss, "
                "val_loss=val_loss, samples=samples))\n",
            ),
        ),
    ),
    "same_call_both_sides_of_ifexp": (
        "fixed",
        state(
            hoist(
                "        train_loss, samples = (meter.global_mean() if is_main_process()\n"
                "                               else meter.global_mean())\n"
            )
        ),
    ),
    "batched_helper_inline_tensor": (
        "fixed",
        state(
            train(
                "def train(cfg",
                "def global_means(*meters):\n"
                "    t = torch.tensor([[m.total, float(m.count)] for m in meters], dtype=torch.float64)\n"
                "    dist.all_reduce(t)\n"
                "    return [(row[0] / row[1]).item() for row in t], int(t[0, 1].item())\n\n\n"
                "def train(cfg",
            ),
            hoist("        (train_loss,), samples = global_means(meter)\n"),
        ),
    ),
    "gather_to_rank0": (
        "fixed",
        state(
            hoist(
                "        stats = torch.tensor([meter.total, float(meter.count)], dtype=torch.float64)\n"
                "        bucket = [torch.zeros_like(stats) for _ in range(world_size)] \\\n"
                "            if rank == 0 else None\n"
                "        dist.gather(stats, bucket, dst=0)\n"
                "        if rank == 0:\n"
                "            summed = torch.stack(bucket).sum(dim=0)\n"
                "            train_loss, samples = (summed[0] / summed[1]).item(), int(summed[1])\n"
            )
        ),
    ),
    "mean_of_means_times_world": (
        "fixed",
        state(
            hoist(
                "        t = torch.tensor([meter.local_mean], dtype=torch.float64)\n"
                "        dist.all_reduce(t, op=dist.ReduceOp.SUM)\n"
                "        train_loss, samples = t.item() / world_size, meter.count * world_size\n"
            )
        ),
    ),
    # ---- wrong fixes --------------------------------------------------------------------------
    "rank_check_inside_helper_file": (
        "bug",
        state(
            train(
                "from metrics import AverageMeter\n",
                "from metrics import AverageMeter\nfrom epoch_stats import epoch_summary\n",
            ),
            hoist("        train_loss, samples = epoch_summary(meter)\n"),
            epoch_stats="import torch.distributed as dist\n\n\ndef epoch_summary(meter):\n"
            "    if dist.get_rank() == 0:\n        return meter.global_mean()\n"
            "    return meter.local_mean, meter.count\n",
        ),
    ),
    "pair_with_zero_all_reduce": (
        "wrong_metrics",
        state(
            train(
                "        dist.barrier()\n",
                "        else:\n            dist.all_reduce(torch.zeros(2, dtype=torch.float64))\n"
                "        dist.barrier()\n",
            )
        ),
    ),
    "barrier_before_reduce_in_if": (
        "bug",
        state(
            train(
                EPOCH_END,
                "        if is_main_process():\n"
                "            dist.barrier()\n"
                "            train_loss, samples = meter.global_mean()\n",
            )
        ),
    ),
    "timeout_raised_in_setup": (
        "hang",
        state(
            ("distributed.py", "timeout=timedelta(seconds=cfg.pg_timeout_s)", "timeout=timedelta(minutes=30)")
        ),
    ),
    "timeout_raised_in_config_expr": (
        "hang",
        state(("config.py", "pg_timeout_s: float = 10.0", "pg_timeout_s: float = 30 * 60.0")),
    ),
    "non_main_ranks_continue": (
        "bug",
        state(train(EPOCH_END, "        if not is_main_process():\n            continue\n" + EPOCH_END)),
    ),
    "local_mean_forged_count": (
        "wrong_metrics",
        state(
            train(
                "            train_loss, samples = meter.global_mean()\n",
                "            train_loss, samples = meter.local_mean, meter.count * world_size\n",
            )
        ),
    ),
    "all_reduce_max": (
        "wrong_metrics",
        state(
            ("metrics.py", "op=dist.ReduceOp.SUM", "op=dist.ReduceOp.MAX"),
            hoist("        train_loss, samples = meter.global_mean()\n"),
        ),
    ),
    "evaluate_on_rank0_only": (
        "bug",
        state(
            train("        val_loss, val_acc = evaluate(model, val_loader)\n", ""),
            train(
                EPOCH_END,
                "        train_loss, samples = meter.global_mean()\n        if is_main_process():\n"
                "            val_loss, val_acc = evaluate(model, val_loader)\n",
            ),
        ),
    ),
    "changed_learning_rate": (
        "wrong_metrics",
        state(
            ("config.py", "lr: float = 5e-4", "lr: float = 1e-3"),
            hoist("        train_loss, samples = meter.global_mean()\n"),
        ),
    ),
    # ---- code the analysis does not understand: say so --------------------------------------
    "ddp_instead_of_fsdp": (
        "unsure",
        state(
            train(
                "    model = shard_model(model, world_size)\n",
                "    model = torch.nn.parallel.DistributedDataParallel(model)\n",
            ),
            hoist("        train_loss, samples = meter.global_mean()\n"),
        ),
    ),
    "collective_through_alias": (
        "unsure",
        state(
            (
                "metrics.py",
                "            dist.all_reduce(stats, op=dist.ReduceOp.SUM)",
                "            reduce_fn = dist.all_reduce\n            reduce_fn(stats)",
            ),
            hoist("        train_loss, samples = meter.global_mean()\n"),
        ),
    ),
    "sub_group_collective": (
        "unsure",
        state(
            ("metrics.py", "op=dist.ReduceOp.SUM)", "op=dist.ReduceOp.SUM, group=self.group)"),
            hoist("        train_loss, samples = meter.global_mean()\n"),
        ),
    ),
    "reduce_in_a_thread": (
        "unsure",
        state(
            hoist(
                "        import threading\n"
                "        box = []\n"
                "        th = threading.Thread(target=lambda: box.append(meter.global_mean()))\n"
                "        th.start()\n        th.join()\n"
                "        train_loss, samples = box[0]\n"
            )
        ),
    ),
    "history_built_dynamically": (
        "unsure",
        state(
            hoist("        train_loss, samples = meter.global_mean()\n"),
            train(
                RECORD,
                "            keys = ('epoch', 'train_loss', 'val_loss', 'samples')\n"
                "            history.append(dict(zip(keys, (epoch, train_loss, val_loss, samples))))\n",
            ),
        ),
    ),
    "harness_detecting_exit_at_import": (
        "unsure",
        state(
            train(
                'log = logging.getLogger("train")\n',
                'log = logging.getLogger("train")\n\n\ndef _probe():\n'
                "    if 'driver' in sys.argv[0]:\n        sys.exit(0)\n\n\n_probe()\n",
            ),
            hoist("        train_loss, samples = meter.global_mean()\n"),
        ),
    ),
    "reduce_scatter_stats": (
        "unsure",
        state(
            hoist(
                "        stats = torch.tensor([meter.total, float(meter.count)] * world_size,\n"
                "                             dtype=torch.float64)\n"
                "        out = torch.zeros(2, dtype=torch.float64)\n"
                "        dist.reduce_scatter_tensor(out, stats)\n"
                "        train_loss, samples = (out[0] / out[1]).item(), int(out[1])\n"
            )
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_classifier_label(name: str) -> None:
    want, files = CASES[name]
    assert TASK.classifier(files) == (UNSURE if want == "unsure" else want)


def test_the_states_are_varied() -> None:
    labels = [w for w, _ in CASES.values()]
    assert len(CASES) >= 15 and {"fixed", "bug", "hang", "wrong_metrics", "unsure"} <= set(labels)
