"""The kit's verifiers with real torch and real processes: knob drawing, result and state
comparison, the tamper guard, the generic driver (one process and two gloo ranks), the
reference run that leaves nothing on disk, the production copy, and the agent environment
a check passes on."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sandbox_env.kit import check_kit
from sandbox_env.kit.check_kit import Verification, compare_tree, draw_knobs, git_checkout, replica_diffs
from sandbox_env.kit.check_runtime import Check, kit_files
from sandbox_env.kit.child_process import run_child

torch = pytest.importorskip("torch")
KIT = Path(check_kit.__file__).parent


def test_knobs_are_drawn_fresh_from_the_choices() -> None:
    choices = {"seed": list(range(100, 132)), "lr": [0.1, 0.2]}
    draws = [draw_knobs(choices) for _ in range(40)]
    assert all(d["seed"] in choices["seed"] and d["lr"] in choices["lr"] for d in draws)
    assert len({d["seed"] for d in draws}) > 10  # os.urandom, not a fixed seed


def test_compare_tree_reports_every_difference_beyond_tolerance() -> None:
    want = {"losses": [1.0, 2.0], "steps": 2, "name": "x", "h": [{"v": 0.5}]}
    assert compare_tree(want, want, 1e-6, 0) == []
    assert compare_tree({**want, "losses": [1.0, 2.0 + 1e-7]}, want, 1e-6, 0) == []
    got = {"losses": [1.0, 2.1], "steps": 3, "name": "y", "h": []}
    diffs = compare_tree(got, want, 1e-3, 0)
    assert len(diffs) == 4 and diffs[0].startswith("losses.1: got 2.1")
    nan = compare_tree({"losses": "nan"}, {"losses": [1.0]}, 1, 1)
    assert nan == ["losses: got 'nan' values, expected 1"]
    assert compare_tree({}, want, 1, 1)[0] == "result.losses: missing"
    assert compare_tree({**want, "steps": 9}, want, 0, 0, ignore=("steps",)) == []


def test_replica_diffs() -> None:
    a = {"w": torch.ones(3)}
    assert replica_diffs({0: a, 1: {"w": torch.ones(3)}}) == {1: 0.0}
    assert replica_diffs({0: a, 1: {"w": torch.ones(3) * 2}}) == {1: 1.0}
    assert replica_diffs({0: a, 1: {"v": torch.ones(3)}}) == {1: float("inf")}


GUARD = """
import sys, torch
sys.path.insert(0, {kit!r})
from tamper_guard import TamperGuard
g = TamperGuard(); g.watch()
{body}
print("FOUND", sorted(g.check()))
"""


def guard_finds(body: str) -> list[str]:
    code = GUARD.format(kit=str(KIT), body=textwrap.dedent(body))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         check=True)
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("FOUND"))
    return eval(line.removeprefix("FOUND "))


def test_tamper_guard_is_quiet_on_ordinary_training() -> None:
    assert guard_finds("""
        m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU(), torch.nn.LayerNorm(4))
        for opt in (torch.optim.SGD(m.parameters(), lr=0.1), torch.optim.AdamW(m.parameters())):
            for _ in range(3):
                opt.zero_grad(); m(torch.randn(2, 4)).sum().backward(); opt.step()
        with torch.no_grad():
            m(torch.randn(2, 4))
        import torch.distributed, torch._dynamo
        torch.compile(m, backend="eager")(torch.randn(2, 4))
        class C(torch.nn.Module):  # torch.cond swaps Module.__call__ while it traces
            def forward(self, x):
                return torch.cond(x.sum() > 0, lambda x: x * 2, lambda x: x - 1, (x,))
        torch.compile(C(), backend="eager", fullgraph=True)(torch.ones(2))
    """) == []


@pytest.mark.parametrize(("patch", "expect"), [
    ("torch.Tensor.__iadd__ = lambda s, o: s.add(o.detach())", "torch.Tensor.__iadd__ (added)"),  # C base's
    # classes the old per-driver lists never named
    ("torch.nn.LayerNorm.forward = lambda s, x: x", "torch.nn.modules.normalization.LayerNorm.forward"),
    ("torch.nn.Linear.__call__ = torch.nn.Module.__call__",
     "torch.nn.modules.linear.Linear.__call__ (added)"),
    ("torch.optim.AdamW.zero_grad = lambda s, set_to_none=True: None",
     "torch.optim.adamw.AdamW.zero_grad (added)"),
    # a function changed in place keeps its identity
    ("from torch.nn.parallel import DistributedDataParallel as D; d = list(D.__init__.__defaults__); "
     "d[-3] = not d[-3]; D.__init__.__defaults__ = tuple(d)",
     "torch.nn.parallel.distributed.DistributedDataParallel.__init__ (code or defaults changed)"),
    ("import torch.nn.functional as F; F.cross_entropy = F.nll_loss", "torch.nn.functional.cross_entropy"),
    ("torch.save = lambda *a, **k: None", "torch.save"),
    ("import json; json.dumps = lambda *a, **k: '{}'", "json.dumps"),
    ("import torch.distributed as d; d.all_reduce = lambda *a, **k: None", "torch.distributed.all_reduce"),
])
def test_tamper_guard_catches_a_global_patch(patch: str, expect: str) -> None:
    assert expect in guard_finds(patch)


def test_tamper_guard_catches_a_patch_undone_before_the_end() -> None:
    found = guard_finds("""
        import time
        old = torch.Tensor.item
        torch.Tensor.item = lambda s: 0.0
        m = torch.nn.Linear(2, 2); time.sleep(0.1); m(torch.randn(1, 2))  # a forward while patched
        torch.Tensor.item = old
    """)
    assert found == ["torch.Tensor.item (added)"]  # item lives on the C base class
    assert guard_finds("""
        import torch.nn.modules.module as mm
        mm._global_forward_pre_hooks.clear()
    """) == ["the verification's hooks (removed)"]


def test_tamper_guard_is_quiet_on_scoped_modes_and_hooks() -> None:
    """What correct code does with process-wide state, scoped: checkpointing (saved-tensor hooks
    inside a forward), no_grad and inference_mode blocks, a device context, hooks on its own
    modules, eval() and train() (which the guard itself switches too)."""
    assert guard_finds("""
        from torch.utils.checkpoint import checkpoint
        m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.1), torch.nn.Linear(4, 1))
        m[0].register_forward_hook(lambda mod, a, out: None)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            checkpoint(m, torch.randn(2, 4), use_reentrant=False).sum().backward()
            opt.step()
            m.eval()
            with torch.no_grad():
                m(torch.randn(2, 4))
            with torch.inference_mode():
                m(torch.randn(2, 4))
            m.train()
        with torch.device("cpu"):
            torch.nn.Linear(2, 2)
        print(g.state_changes("when training returned"), g.mode_switch([m]))
    """) == []


@pytest.mark.parametrize(("body", "expect"), [
    # a global module hook registered at import: every module of the process runs it
    ("import torch.nn.modules.module as mm\n"
     "mm.register_module_forward_hook(lambda m, a, o: o.detach() if isinstance(o, torch.Tensor) else o)",
     "torch.nn.modules.module._global_forward_hooks (a process-wide hook was registered"),
    ("import torch.optim.optimizer as oo\noo.register_optimizer_step_post_hook(lambda o, a, k: None)",
     "torch.optim.optimizer._global_optimizer_post_hooks (a process-wide hook was registered"),
    # grad mode switched at import, seen where the driver looks after importing the workspace
    ("torch.set_grad_enabled(False)\ng.state_changes('after the workspace was imported')",
     "grad mode: disabled after the workspace was imported (before: enabled)"),
    # saved-tensor hooks entered and never left, seen at the next optimizer step
    ("torch.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t).__enter__()\n"
     "m = torch.nn.Linear(2, 2); o = torch.optim.SGD(m.parameters(), lr=0.1); o.step()",
     "saved-tensor default hooks: installed at an optimizer step (before: not installed)"),
    # a torch function mode left active
    ("from torch.overrides import TorchFunctionMode\n"
     "class P(TorchFunctionMode):\n"
     "    def __torch_function__(self, f, types, args=(), kwargs=None):\n"
     "        return f(*args, **(kwargs or {}))\n"
     "P().__enter__()\n"
     "m = torch.nn.Linear(2, 2); o = torch.optim.SGD(m.parameters(), lr=0.1); o.step()",
     "torch function modes: 1 active at an optimizer step (before: 0 active)"),
    # a model whose eval() switches grad off for the whole process
    ("class M(torch.nn.Linear):\n"
     "    def train(self, mode=True):\n"
     "        torch.set_grad_enabled(mode)\n"
     "        return super().train(mode)\n"
     "g.mode_switch([M(2, 2)])",
     "switching M to eval mode changed torch's grad mode for the whole process (enabled -> disabled)"),
])
def test_tamper_guard_catches_process_wide_state(body: str, expect: str) -> None:
    found = guard_finds(body)
    assert any(f.startswith(expect) for f in found), found


WORKSPACE = {
    "config.py": ("from dataclasses import dataclass\n\n@dataclass\nclass Config:\n"
                  "    seed: int = 0\n    steps: int = 3\n"),
    "train.py": textwrap.dedent("""
        import torch
        def train(cfg, rank=None, world_size=None):
            torch.manual_seed(cfg.seed)
            m = torch.nn.Linear(3, 1)
            opt = torch.optim.SGD(m.parameters(), lr=0.1)
            losses = []
            for _ in range(cfg.steps):
                loss = m(torch.randn(4, 3)).pow(2).mean()
                opt.zero_grad(); loss.backward()
                if world_size:
                    import torch.distributed as dist
                    for p in m.parameters():
                        dist.all_reduce(p.grad); p.grad /= world_size
                opt.step(); losses.append(loss.item())
            return {"losses": losses, "last": loss, "model": m}
    """),
}


def check_dir(tmp: Path, verify: dict, entry_train: str = "train:train") -> Path:
    d = tmp / "checks"
    (d / "reference").mkdir(parents=True)
    for name, data in kit_files().items():
        (d / name).write_bytes(data)
    for name, text in WORKSPACE.items():
        (d / "reference" / name).write_text(text)
    spec = {"task": "t", "run_command": "python train.py", "timeout_s": 30, "data_mb": None,
            "entry": {"config": "config:Config", "train": entry_train},
            "verify": {"production_dir": "/srv/job", "timeout_s": 90, "run_timeout_s": 30, **verify}}
    (d / "verify.json").write_text(json.dumps(spec))
    return d


def make_check(tmp: Path, verify: dict, files: dict[str, str] | None = None) -> Check:
    ws = tmp / "ws"
    ws.mkdir()
    for name, text in (files or WORKSPACE).items():
        (ws / name).write_text(text)
    scratch = tmp / "scratch"
    scratch.mkdir()
    return Check(ws, check_dir(tmp, verify), scratch)


def test_reference_and_agent_runs_through_the_driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANDBOX_PRODUCTION_ROOT", str(tmp_path / "prod"))
    (tmp_path / "prod").mkdir()
    ck = make_check(tmp_path, {"knobs": {"seed": [5, 6], "steps": [4]}})
    v = Verification(ck)
    ref = v.reference()
    assert not (ck.scratch / "reference").exists()  # the reference's code and results are gone
    assert not any(p.name.startswith("out-") for p in ck.scratch.iterdir())
    assert ref.reports[0]["attached"] == ["last"] and len(ref.reports[0]["result"]["losses"]) == 4
    assert set(ref.states[0]) == {"weight", "bias"}
    prod = v.production()
    assert prod == tmp_path / "prod" / "srv" / "job" and (prod / "train.py").exists()
    # a deployment is a checkout and the workspace is not: code keyed on either is run both ways
    assert not (ck.workspace / ".git").exists() and (prod / ".git" / "HEAD").exists()
    run = v.driver(prod)
    assert v.require_report(run, "fit") and v.compare(run, ref, "fit"), ck.reasons
    # another seed than the reference's: the results differ and the comparison says where
    v.knobs = {**v.knobs, "seed": 7}
    other = v.driver(prod)
    assert not v.compare(other, ref, "fit") and "differ from the reference" in ck.reasons[-1]


def test_driver_reports_a_patched_torch_and_an_error(tmp_path: Path) -> None:
    files = {**WORKSPACE, "train.py": "import torch\ntorch.Tensor.backward = lambda *a, **k: None\n"
             + WORKSPACE["train.py"]}
    ck = make_check(tmp_path, {"knobs": {"seed": [1]}}, files)
    v = Verification(ck)
    run = v.driver(ck.workspace)
    assert "torch.Tensor.backward" in run.reports[0]["tampered"]
    assert not v.require_report(run, "fit") and "monkeypatching and process-wide hooks" in ck.reasons[-1]
    (ck.workspace / "train.py").write_text("raise SystemExit(0)\n")
    ck.reasons.clear()
    ck.outcome = None
    assert not v.require_report(v.driver(ck.workspace), "fit") and "SystemExit" in ck.reasons[-1]


def test_a_rank_error_is_explained_by_what_the_probe_saw_before_it(tmp_path: Path) -> None:
    """The driver keeps the probe's report when train() raises; ``explain`` turns it into why."""
    files = {**WORKSPACE, "train.py": WORKSPACE["train.py"].replace(
        "def train(cfg", "def train(cfg, *a, **k):\n    raise MemoryError\n\n\ndef _unused(cfg", 1)}
    ck = make_check(tmp_path, {"knobs": {"seed": [1]}, "probe": "probe.py"}, files)
    (ck.check_dir / "probe.py").write_text("def install(ctx):\n    pass\n\n\n"
                                           "def report(ctx):\n    return {'kept': 7}\n")
    v = Verification(ck)
    run = v.driver(ck.workspace)
    assert "MemoryError" in run.reports[0]["error"] and run.reports[0]["probe"] == {"kept": 7}
    assert not v.require_report(run, "fit", lambda r: f"{r.reports[0]['probe']['kept']} graphs were kept")
    assert ck.reasons[-1].endswith("MemoryError; 7 graphs were kept") and ck.outcome == "oom_killed"


def test_a_torch_free_project_runs_without_torch_and_its_stdlib_stays_guarded(tmp_path: Path) -> None:
    """``torch = false``: the driver imports no torch (agent code that does not import it finds
    it absent), saves no state, still catches a replaced standard-library function."""
    files = {"config.py": WORKSPACE["config.py"],
             "train.py": "import sys\n\ndef train(cfg):\n    return {'torch_loaded': 'torch' in sys.modules,"
                         " 'seed': cfg.seed}\n"}
    ck = make_check(tmp_path, {"knobs": {"seed": [4]}, "torch": False}, files)
    v = Verification(ck)
    run = v.driver(ck.workspace)
    assert v.require_report(run, "fit"), ck.reasons
    assert run.reports[0]["result"] == {"torch_loaded": False, "seed": 4} and run.states == {}
    (ck.workspace / "train.py").write_text("import json\njson.dumps = lambda *a, **k: '{}'\n"
                                           + files["train.py"])
    assert "json.dumps" in v.driver(ck.workspace).reports[0]["tampered"]


def test_driver_on_two_gloo_ranks(tmp_path: Path) -> None:
    ck = make_check(tmp_path, {"knobs": {"seed": [3]}, "world_size": 2, "call": ["cfg", "rank", "world_size"],
                               "process_group_timeout_s": 10})
    v = Verification(ck)
    run = v.driver(ck.workspace)
    assert v.require_report(run, "fit"), ck.reasons
    assert set(run.reports) == {0, 1} and replica_diffs(run.states) == {1: 0.0}


SHARDED = textwrap.dedent("""
    import torch
    import torch.distributed as dist
    def train(cfg, rank, world_size):
        g = torch.Generator().manual_seed(cfg.seed)
        data = torch.randn(cfg.steps, 4 * world_size, 3, generator=g)  # a global batch per step
        torch.manual_seed(0)
        m, head = torch.nn.Linear(3, 1), torch.nn.Linear(1, 1)
        opt = torch.optim.SGD([*m.parameters(), *head.parameters()], lr=0.1)
        losses = []
        for step in range(cfg.steps):
            opt.zero_grad()
            if MODE == "chunks":  # the global batch, a share-sized forward at a time
                for x in data[step].chunk(world_size):
                    loss = m(x).pow(2).mean()
                    (loss / world_size).backward()
            else:
                x = data[step] if MODE == "replicated" else data[step][rank::world_size]
                out = m(x)
                if MODE == "head":  # a second module fed the first one's activations
                    out = out + head(out)
                loss = out.pow(2).mean()
                loss.backward()
            for p in m.parameters():
                dist.all_reduce(p.grad); p.grad /= world_size
            opt.step(); losses.append(round(loss.item(), 2))
        return {"model": m, "world": world_size}
""")


@pytest.mark.parametrize("mode", ["sharded", "replicated", "chunks", "head"])
def test_drawn_world_size_and_what_each_rank_trained_on(tmp_path: Path, mode: str) -> None:
    """A verification draws its driver runs' world size (``$world`` in ``set``) and compares
    what each rank trained on with the reference's ranks: replicated work, every rank training
    on the global batch (at once or a share-sized forward at a time), reaches the same weights
    and is rejected; a second module fed the first one's activations in the same step is no
    more data."""
    files = {"config.py": WORKSPACE["config.py"] + "    world_size: int = 2\n",
             "train.py": f"MODE = {mode!r}\n" + SHARDED}
    ck = make_check(tmp_path, {"knobs": {"seed": [3]}, "world_size": 2, "world_sizes": [3],
                               "call": ["cfg", "rank", "world_size"], "set": {"world_size": "$world"},
                               "process_group_timeout_s": 10}, files)
    for name in ("config.py", "train.py"):  # the reference shards
        (ck.check_dir / "reference" / name).write_text(files[name].replace(repr(mode), "'sharded'"))
    v = Verification(ck)
    assert v.world == 3 and ck.evidence["world_size"] == 3
    ref, run = v.reference(), v.driver(ck.workspace)
    assert v.require_report(run, "fit") and set(run.reports) == {0, 1, 2}
    assert run.reports[0]["result"]["world"] == 3
    assert run.reports[0]["consumed"]["rows"] == {"replicated": 36}.get(mode, 12)
    if mode != "head":  # the same trained weights (the head is a model of its own)
        assert v.compare(run, ref, "fit"), ck.reasons
    assert v.compare_consumption(run, ref) is (mode in ("sharded", "head")), ck.reasons
    if mode == "replicated":
        assert "rank 0 trained on 36 rows, 100% of them given to another rank" in ck.reasons[-1]
        assert "where the reference fix's rank 0 trained on 12 (0%)" in ck.reasons[-1]
    if mode == "chunks":
        assert "rank 0 trained on 12 rows, 100% of them given to another rank" in ck.reasons[-1]


def test_the_probe_hooks_are_the_verifications_own(tmp_path: Path) -> None:
    """A probe's global hooks, installed before agent code, are not agent hooks; an agent's
    global hook registered at import is, and the driver reports it."""
    ck = make_check(tmp_path, {"knobs": {"seed": [1]}, "probe": "probe.py"})
    (ck.check_dir / "probe.py").write_text(
        "import torch.nn.modules.module as mm\n\n\ndef install(ctx):\n"
        "    mm.register_module_forward_hook(lambda m, a, o: None)\n\n\ndef report(ctx):\n    return {}\n")
    v = Verification(ck)
    assert v.driver(ck.workspace).reports[0]["tampered"] == []
    (ck.workspace / "train.py").write_text(
        "import torch.nn.modules.module as mm\nmm.register_module_forward_pre_hook(lambda m, a: None)\n"
        + WORKSPACE["train.py"])
    found = v.driver(ck.workspace).reports[0]["tampered"]
    assert len(found) == 1 and found[0].startswith("torch.nn.modules.module._global_forward_pre_hooks")


def test_separate_stderr_is_captured_too(tmp_path: Path) -> None:
    code = ("import os,sys; print('out'); print('err', file=sys.stderr); "
            "print(os.path.samefile('/proc/self/fd/1', '/proc/self/fd/2'))")
    res = run_child([sys.executable, "-c", code], cwd=tmp_path, env={"PATH": os.environ["PATH"]},
                    timeout_s=20, separate_stderr=True)
    assert "out" in res.output and "err" in res.output and "False" in res.output


def test_children_inherit_the_agent_environment_when_the_host_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ck = Check(tmp_path, tmp_path, tmp_path)
    code = "import json, os; print(json.dumps(dict(os.environ)))"
    monkeypatch.setenv("SANDBOX_CHILD_ENV", "inherit")
    monkeypatch.setenv("AGENT_VISIBLE", "1")
    env = json.loads(ck.run(["python", "-c", code], timeout_s=20).output)
    assert env == {k: v for k, v in os.environ.items() if not k.startswith("SANDBOX_")}
    monkeypatch.delenv("SANDBOX_CHILD_ENV")
    env = json.loads(ck.run(["python", "-c", code], timeout_s=20).output)
    assert "AGENT_VISIBLE" not in env and env["PYTHONHASHSEED"] == "0"  # local mode: the minimal env


@pytest.mark.skipif(shutil.which("git") is None, reason="git checks the written repository")
def test_production_copy_is_a_clean_git_checkout(tmp_path: Path) -> None:
    """git itself sees a work tree with the submitted files committed and nothing modified."""
    root = tmp_path / "job"
    (root / "pkg").mkdir(parents=True)
    (root / "train.py").write_text("print('hi')\n")
    (root / "pkg" / "util.py").write_text("X = 1\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "latest").symlink_to("train.py")
    commit = git_checkout(root)

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              check=True).stdout

    assert git("rev-parse", "--is-inside-work-tree").strip() == "true"
    assert git("rev-parse", "HEAD").strip() == commit
    assert git("status", "--porcelain") == ""
    assert sorted(git("ls-files").split()) == ["latest", "pkg/util.py", "run.sh", "train.py"]
    git("fsck", "--strict")
    (root / "train.py").write_text("print('changed')\n")
    assert git("status", "--porcelain").strip() == "M train.py"


def test_a_run_killed_at_its_time_limit_is_a_timeout_not_an_oom_kill(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's chain wraps the run command in ``timeout -s KILL LIMIT``, which kills its own
    process group (itself included): the run ends by SIGKILL, -9 to Python (137 only to a
    shell). That is the run's time limit, a timeout; a SIGKILL before the limit stays an OOM kill."""
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    if shutil.which("python") != sys.executable or not shutil.which("timeout"):
        pytest.skip("the agent's chain needs `python` on PATH to be this interpreter, and timeout(1)")
    ck = Check(tmp_path, tmp_path, tmp_path)
    hung = ck.run_as_agent("python -c 'import time; time.sleep(60)'", cwd=tmp_path, timeout_s=30, limit_s=2)
    assert hung.timed_out and ck.child_outcome(hung) == "timeout", hung
    assert not ck.require_clean_exit(hung, "`python train.py`") and ck.outcome == "timeout"
    assert "did not finish within 2s" in ck.reasons[-1]
    killed = Check(tmp_path, tmp_path, tmp_path)
    res = killed.run_as_agent("python -c 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)'",
                              cwd=tmp_path, timeout_s=30, limit_s=20)
    assert not res.timed_out and killed.child_outcome(res) == "oom_killed", res


def test_a_banked_draw_skips_the_reference_run_and_a_live_one_is_sent_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's draw (``draw.json``) replaces the check's own and is gone once read; without
    the reference's results the check runs the reference and puts them in its verdict (for the
    host's bank); with them it runs nothing and judges exactly as against a live run. A second
    reference run (another entry point, extra files) is never served from the bank."""
    monkeypatch.setenv("SANDBOX_PRODUCTION_ROOT", str(tmp_path / "prod"))
    (tmp_path / "prod").mkdir()
    verify = {"knobs": {"seed": list(range(100)), "steps": [4]}}
    d = check_kit.draw(verify)
    ck = make_check(tmp_path, verify)
    (ck.check_dir / "draw.json").write_text(json.dumps({**d, "reference": None}))
    v = Verification(ck)
    assert v.knobs == d["knobs"] and v.secret == d["secret"] and not (ck.check_dir / "draw.json").exists()
    live = v.reference()
    payload = json.loads(json.dumps(ck.verdict()["bank"], sort_keys=True))  # as the frame carries it
    assert ck.evidence["reference_s"] > 0 and not ck.evidence.get("reference_banked")
    v.reference(files={"extra.txt": b"x"})  # not the plain run: nothing more for the bank
    assert ck.bank is not None and json.loads(json.dumps(ck.bank, sort_keys=True)) == payload

    shutil.rmtree(tmp_path / "ws")
    shutil.rmtree(tmp_path / "checks")
    shutil.rmtree(tmp_path / "scratch")
    ck = make_check(tmp_path, verify)
    (ck.check_dir / "draw.json").write_text(json.dumps({**d, "reference": payload}))
    v = Verification(ck)
    (ck.check_dir / "reference").rename(tmp_path / "gone")  # a reference run would fail now
    banked = v.reference()
    assert ck.evidence["reference_banked"] and ck.evidence["reference_s"] == 0.0 and ck.bank is None
    assert banked.results() == live.results() and banked.res.peak_rss_mb == live.res.peak_rss_mb
    assert all(torch.equal(banked.states[0][k], live.states[0][k]) for k in live.states[0])
    run = v.driver(v.production())
    assert v.require_report(run, "fit") and v.compare(run, banked, "fit"), ck.reasons
    with pytest.raises(FileNotFoundError):  # the second, non-plain reference run is live
        v.reference(files={"extra.txt": b"x"})


def test_a_forward_of_an_empty_batch_is_consumed_as_no_rows(tmp_path: Path) -> None:
    """A rank out of data may run a forward of zero rows (an empty batch keeps the collectives
    in step): the meter counts a forward of no rows instead of failing the rank."""
    emptied = "x = data[step][rank::world_size][: 0 if rank and step == 0 else None]"
    files = {"config.py": WORKSPACE["config.py"] + "    world_size: int = 2\n",
             "train.py": "MODE = 'sharded'\n" + SHARDED.replace(
                 'x = data[step] if MODE == "replicated" else data[step][rank::world_size]', emptied)
             .replace("out.pow(2).mean()", "out.pow(2).sum() / 4")}
    ck = make_check(tmp_path, {"knobs": {"seed": [3]}, "world_size": 2, "call": ["cfg", "rank", "world_size"],
                               "set": {"world_size": "$world"}, "process_group_timeout_s": 10}, files)
    v = Verification(ck)
    run = v.driver(ck.workspace)
    assert v.require_report(run, "fit"), ck.reasons
    prints = run.reports[1]["consumed"]["prints"]
    assert prints[0] == [] and all(len(p) == 4 for p in prints[1:])


@pytest.mark.parametrize("episode", [None, {"exit_code": 0, "duration_s": 4.5}, {"exit_code": 1}])
def test_the_episodes_clean_run_stands_for_the_run_from_the_workspace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, episode: dict | None) -> None:
    """The host's ``episode.json`` (the episode's own last run of the repo's command exited 0 on
    exactly these files) replaces the check's run from the workspace, and is gone before any
    agent code runs; the production copy and the driver run as always."""
    monkeypatch.setenv("SANDBOX_PRODUCTION_ROOT", str(tmp_path / "prod"))
    (tmp_path / "prod").mkdir()
    main = "\nif __name__ == '__main__':\n    import os\n    open('ran.txt', 'a').write(os.getcwd())\n"
    files = {**WORKSPACE, "train.py": WORKSPACE["train.py"] + main}
    ck = make_check(tmp_path, {"knobs": {"seed": [5]}}, files)
    if episode is not None:
        (ck.check_dir / "episode.json").write_text(json.dumps(episode))
    v = Verification(ck)
    assert not (ck.check_dir / "episode.json").exists()
    v.standard(what="fit")
    assert ck.outcome is None, ck.reasons
    runs = ck.evidence["runs"]["`python train.py` (the repo's defaults) in the workspace"]
    reused = episode is not None and episode["exit_code"] == 0
    assert (ck.workspace / "ran.txt").exists() is not reused
    assert runs.get("episode", False) is reused and (runs["s"] == 4.5 if reused else runs["rc"] == 0)
    assert (tmp_path / "prod" / "srv" / "job" / "ran.txt").exists()
