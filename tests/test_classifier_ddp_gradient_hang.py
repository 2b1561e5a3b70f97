# ruff: noqa: E501 - the cases are source edits, one per line
"""The ddp_gradient_hang mock classifier on states no recording covers: correct fixes in other
idioms, wrong fixes, and valid code it must answer UNSURE for rather than guess."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox_env.mock_analysis import UNSURE
from sandbox_env.tasks import TaskRegistry

ROOT = Path(__file__).resolve().parents[1] / "task_repos"
DDP = "        ddp_model = DDP(model)\n"
FWD = "            logits, recon = ddp_model(x, with_recon=with_recon)\n"
LOSS = ("            loss = cls_loss\n            if with_recon:\n                recon_loss = F.mse_loss(recon, x)\n"
        "                loss = loss + cfg.aux_weight * recon_loss\n")
BWD = "            loss.backward()\n"
FU = "        ddp_model = DDP(model, find_unused_parameters=True)\n"
AVG = ("def average_gradients(model, world_size):\n    for p in model.parameters():\n"
       "        if p.grad is not None:\n            dist.all_reduce(p.grad)\n            p.grad /= world_size\n\n\n"
       "def train(")
TOUCH = "            loss = loss + 0.0 * sum(p.sum() for p in ddp_model.parameters())\n"

CASES = {
    # -- correct fixes in other idioms
    "find_unused_via_local": ("fixed", [(DDP, "        fu = True\n        ddp_model = DDP(model, find_unused_parameters=fu)\n")]),
    "find_unused_via_kwargs_dict": ("fixed", [(DDP, "        kw = {'find_unused_parameters': True}\n"
                                                    "        ddp_model = DDP(model, **kw)\n")]),
    "ddp_factory_helper": ("fixed", [("def train(", "def wrap(m):\n    return DDP(m, find_unused_parameters=True)\n\n\n"
                                                    "def train("), (DDP, "        ddp_model = wrap(model)\n")]),
    "zero_weight_by_float_flag": ("fixed", [(FWD, FWD.replace("with_recon=with_recon", "with_recon=True")),
                                            (LOSS, "            recon_loss = F.mse_loss(recon, x)\n"
                                                   "            loss = cls_loss + cfg.aux_weight * float(with_recon) * recon_loss\n")]),
    "zero_weight_in_loss_helper": ("fixed", [("def train(", "def total_loss(out, x, y, on, cfg):\n    logits, recon = out\n"
                                              "    w = cfg.aux_weight if on else 0.0\n"
                                              "    return F.cross_entropy(logits, y) + w * F.mse_loss(recon, x)\n\n\n"
                                              "def train("),
                                             (FWD, "            out = ddp_model(x, with_recon=True)\n            logits = out[0]\n"),
                                             (LOSS, "            loss = total_loss(out, x, y, with_recon, cfg)\n")]),
    "touch_all_params_off_steps": ("fixed", [(LOSS, LOSS + "            else:\n    " + TOUCH)]),
    "manual_allreduce_avg_op": ("fixed", [(DDP, "        ddp_model = model\n"),
                                          (BWD, BWD + "            for p in model.parameters():\n"
                                                      "                if p.grad is not None:\n"
                                                      "                    dist.all_reduce(p.grad, op=dist.ReduceOp.AVG)\n")]),
    "ignore_head_and_allreduce_it": ("fixed", [
        (DDP, "        DDP._set_params_and_buffers_to_ignore_for_rank(model, ['recon_head.weight', 'recon_head.bias'])\n" + DDP),
        (BWD, BWD + "            for p in model.recon_head.parameters():\n                if p.grad is not None:\n"
                    "                    dist.all_reduce(p.grad)\n                    p.grad /= world_size\n")]),
    # -- wrong fixes
    "no_sync_on_off_steps": ("replicas_diverge", [
        (FWD, "            ctx = ddp_model.no_sync() if not with_recon else contextlib.nullcontext()\n"
              "            with ctx:\n    " + FWD),
        ("import argparse\n", "import argparse\nimport contextlib\n")]),
    "forward_through_module": ("replicas_diverge", [(FWD, FWD.replace("ddp_model(", "ddp_model.module("))]),
    "ignore_head_without_allreduce": ("replicas_diverge", [
        (DDP, "        DDP._set_params_and_buffers_to_ignore_for_rank(model, ['recon_head.weight', 'recon_head.bias'])\n" + DDP)]),
    "manual_allreduce_summed": ("wrong_metrics", [(DDP, "        ddp_model = model\n"),
                                                  ("def train(", AVG.replace("            p.grad /= world_size\n", "")),
                                                  (BWD, BWD + "            average_gradients(model, world_size)\n")]),
    "manual_zero_grads_for_head": ("bug", [(BWD, "            for p in model.recon_head.parameters():\n"
                                                  "                p.grad = torch.zeros_like(p)\n" + BWD)]),
    "adam_with_find_unused": ("wrong_metrics", [(DDP, FU), ("torch.optim.SGD(", "torch.optim.Adam(")]),
    "head_computed_returned_conditionally": ("bug", [
        ("        if with_recon:\n            return logits, self.recon_head(h)\n",
         "        r = self.recon_head(h)\n        if with_recon:\n            return logits, r\n")]),
    "momentum_with_find_unused": ("wrong_metrics", [(DDP, FU), ("lr=cfg.lr)", "lr=cfg.lr, momentum=0.9)")]),
    # -- valid code the analysis cannot judge: UNSURE
    "touch_params_on_rank0_only": (UNSURE, [(LOSS, LOSS + "            if rank == 0 and not with_recon:\n    " + TOUCH)]),
    "find_unused_from_env": (UNSURE, [(DDP, "        ddp_model = DDP(model, find_unused_parameters=bool(os.environ.get('FU')))\n")]),
    "harness_detection": (UNSURE, [(DDP, "        if 'driver' in sys.argv[0]:\n    " + FU + "        else:\n    " + DDP),
                                   ("import argparse\n", "import argparse\nimport sys\n")]),
    "flattened_allreduce": (UNSURE, [(DDP, "        ddp_model = model\n"),
                                     (BWD, BWD + "            flat = torch.cat([p.grad.flatten() for p in model.parameters()])\n"
                                                 "            dist.all_reduce(flat)\n")]),
    "grad_clipping": (UNSURE, [(DDP, FU), (BWD, BWD + "            torch.nn.utils.clip_grad_norm_(ddp_model.parameters(), 1.0)\n")]),
    "unknown_step_condition_in_loss": (UNSURE, [(LOSS, LOSS + "            if step > 5:\n    " + TOUCH)]),
}


@pytest.fixture(scope="module")
def task():
    return TaskRegistry(ROOT).get("ddp_gradient_hang")


@pytest.mark.parametrize("name", sorted(CASES))
def test_state_gets_its_label(task, name: str) -> None:
    want, edits = CASES[name]
    files = dict(task.repo_files())
    for old, new in edits:
        path = "model.py" if "self.recon_head" in old else "train.py"
        assert files[path].count(old) == 1, (name, old)
        files[path] = files[path].replace(old, new)
        compile(files[path], path, "exec")
    assert task.classifier(files) == want


def test_the_case_mix() -> None:
    labels = [want for want, _ in CASES.values()]
    assert len(CASES) >= 15 and labels.count("fixed") >= 5 and labels.count(UNSURE) >= 4
