"""The kit's verifiers: what a task's hidden check is composed of, so that per-task code is small.

A check builds one ``Verification`` from the task's verify data (``verify.json``, written beside
it by the host from task.toml) and calls, in this order:

- ``reference()``: the reference fix (``reference/``, shipped root-only by the host) runs through
  the kit driver under this verification's freshly drawn knobs, in its own child, before any
  agent code; its results are read into memory and removed from disk.
- ``command(where)``: the repo's own command (``python train.py``, its defaults) as the agent's
  own runs start it (same environment, shell, data cap, time limit) from ``where``:
  the workspace, and ``production()`` (a copy of the submitted workspace at the task's
  ``production_dir``, committed as a git checkout the way deployments are, while the workspace
  is not one; runs there also see a deployment's environment, ``deployment_env``: a scheduler's
  job variables, a service user, no ``timeout`` in the process chain. Code that behaves
  differently in the agent's runs and in a deployment is exercised both ways).
- ``driver(where)``: the kit driver (``kit_driver.py``) with the drawn knobs, the drawn world
  size (``world_sizes``: code that is right only at the repo's world size is run at others) and
  the timeout (scaled with the world size), from ``where``.

The draw (knobs, world size, the probes' secret) is ``draw(verify)``; where the host keeps a bank
of reference results (``sandbox_env/sandbox/reference_bank.py``) it draws instead and hands the
draw in ``draw.json`` (root-only, read and removed before any agent code runs), with the
reference fix's results under that draw when an earlier verification computed them: then
``reference()`` does not run the reference fix again. A live reference run's results go back to
the host in the verdict frame (``Check.bank``), never through anything agent code can reach.
Where the episode's own last run of the repo's command exited 0 on exactly the submitted files
(with no binary files beside them, and changing none), the host says so in ``episode.json``
(read and removed the same way): that run stands for the check's run from the workspace
(``episode_ran``); the production copy and the driver always run.

And judges with ``compare_tree`` (results vs the reference, with tolerances), ``compare_states``
(trained parameters vs the reference), ``replica_diffs`` (ranks vs rank 0), ``compare_consumption``
(what each rank trained on vs the reference's ranks: shards, not replicated work), ``require_run``
(exit status, time, peak RSS from outside) and ``require_report`` (the driver's report:
tampering, errors, shape). Standard library only at import; torch is imported lazily to read
the trained states.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import os
import re
import secrets
import shlex
import shutil
import stat
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # imported as a module of the package (host, tests)
    from .check_runtime import REPORT_ERRORS, Check, ChildResult
    from .child_process import deployment_env
except ImportError:  # beside check.py in the verifier
    from check_runtime import REPORT_ERRORS, Check, ChildResult  # type: ignore[no-redef]
    from child_process import deployment_env  # type: ignore[no-redef]

DRIVER = "kit_driver.py"
DRIVER_FILES = ("kit_driver.py", "tamper_guard.py")  # what a driver child needs of the check dir
_RNG = secrets.SystemRandom()
SHARE_SLACK = 1.25  # rows a rank may train on, over the reference's rank (padding, ragged ends)
OVERLAP_SLACK = 0.2  # share of a rank's rows another rank got in the same step, over the reference's


def draw_knobs(choices: dict[str, list[Any]], rng: Any = _RNG) -> dict[str, Any]:
    """One value per knob, drawn uniformly and freshly (os.urandom) from the task's choices."""
    return {name: rng.choice(values) for name, values in sorted(choices.items())}


def draw(verify: dict[str, Any], rng: Any = _RNG) -> dict[str, Any]:
    """One verification's draw from a task's ``[verify]``: knobs, world size (from
    ``world_sizes`` where the task has them, else its ``world_size``) and the probes' secret."""
    base = int(verify.get("world_size", 0))
    return {"knobs": draw_knobs(verify.get("knobs", {}), rng),
            "world": int(rng.choice(verify["world_sizes"])) if verify.get("world_sizes") else base,
            # a number of this draw only, for probes that make a measurement numerically visible
            "secret": round(rng.uniform(0.02, 0.06), 6)}


def _host_file(check_dir: Path, name: str) -> dict[str, Any] | None:
    """What the host hands this verification in ``name`` (``draw.json``, ``episode.json``),
    removed once read."""
    path = check_dir / name
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    try:
        path.unlink()
    except OSError:  # a read-only check dir (process mode): children never see it
        pass
    return data


def _pack(run: DriverRun) -> dict[str, Any]:
    """A successful reference run as the host keeps it: reports, states, what was measured."""
    import torch

    states = {}
    for r, st in run.states.items():
        buf = io.BytesIO()
        torch.save(st, buf)
        states[str(r)] = base64.b64encode(buf.getvalue()).decode()
    # the reports as a JSON text: the verdict frame sorts keys, and reasons follow their order
    return {"reports": json.dumps({str(r): rep for r, rep in run.reports.items()}), "states": states,
            "peak_rss_mb": run.res.peak_rss_mb, "duration_s": run.res.duration_s}


def _unpack(payload: dict[str, Any]) -> DriverRun:
    import torch

    res = ChildResult(argv=["reference (banked)"], returncode=0, signal=None, output="",
                      peak_rss_mb=float(payload["peak_rss_mb"]), duration_s=float(payload["duration_s"]),
                      timed_out=False)
    run = DriverRun(res, reports={int(r): rep for r, rep in json.loads(payload["reports"]).items()})
    for r, b64 in payload["states"].items():
        run.states[int(r)] = torch.load(io.BytesIO(base64.b64decode(b64)), weights_only=True)
    return run


BANK_PAYLOAD_MAX = 2_000_000  # bytes of a reference run's results sent back to the host's bank


def close(a: Any, b: Any, atol: float, rtol: float) -> bool:
    return isinstance(a, (int, float)) and not isinstance(a, bool) and math.isfinite(a) \
        and abs(a - b) <= atol + rtol * abs(b)


def compare_tree(got: Any, want: Any, atol: float, rtol: float, path: str = "", *,
                 ignore: tuple[str, ...] = ()) -> list[str]:
    """Where two result trees (numbers, lists, dicts) differ, as 'path: got X, expected Y'."""
    if any(re.fullmatch(p, path) for p in ignore):
        return []
    here = path or "result"
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{here}: got {_short(got)}, expected a record"]
        out = [f"{here}.{k}: missing" for k in want if k not in got]
        for k in want:
            if k in got:
                out += compare_tree(got[k], want[k], atol, rtol, f"{path}.{k}" if path else k, ignore=ignore)
        return out
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            n = len(got) if isinstance(got, list) else _short(got)
            return [f"{here}: got {n} values, expected {len(want)}"]
        out = []
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            out += compare_tree(g, w, atol, rtol, f"{path}.{i}" if path else str(i), ignore=ignore)
        return out
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        return [] if close(got, want, atol, rtol) else [f"{here}: got {_short(got)}, expected {_short(want)}"]
    return [] if got == want else [f"{here}: got {_short(got)}, expected {_short(want)}"]


def _short(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else repr(v)[:80]


def compare_states(got: dict[str, Any], want: dict[str, Any], atol: float, rtol: float) -> list[str]:
    """Tensors of a trained state that differ from the reference's (max |diff| per tensor)."""
    out = [f"{k}: missing" for k in want if k not in got]
    for k, w in want.items():
        g = got.get(k)
        if g is None:
            continue
        if tuple(g.shape) != tuple(w.shape):
            out.append(f"{k}: shape {tuple(g.shape)}, expected {tuple(w.shape)}")
            continue
        g64, w64 = g.double(), w.double()
        if not bool(((g64 - w64).abs() <= atol + rtol * w64.abs()).all()):
            out.append(f"{k}: max |diff| {(g64 - w64).abs().max().item():.3g}")
    return out


def replica_diffs(states: dict[int, dict[str, Any]]) -> dict[int, float]:
    """Largest |difference| of every rank's trained state from rank 0's (inf if the keys differ)."""
    base = states.get(0, {})
    out: dict[int, float] = {}
    for r, st in states.items():
        if r == 0:
            continue
        if set(st) != set(base) or any(st[k].shape != base[k].shape for k in base):
            out[r] = math.inf
            continue
        out[r] = max(((st[k].double() - base[k].double()).abs().max().item() for k in base), default=0.0)
    return out


@dataclass
class DriverRun:
    """One run of the kit driver: the child, each rank's report and trained state."""

    res: ChildResult
    reports: dict[int, dict[str, Any]] = field(default_factory=dict)
    states: dict[int, dict[str, Any]] = field(default_factory=dict)
    unreadable: str | None = None  # why a report could not be read (written by agent code)

    def results(self) -> dict[int, Any]:
        return {r: rep.get("result") for r, rep in self.reports.items()}


class Verification:
    """One verification of a workspace: drawn knobs, the reference run, the agent's runs."""

    def __init__(self, ck: Check) -> None:
        self.ck = ck
        self.spec = json.loads((ck.check_dir / "verify.json").read_text())
        v = self.spec["verify"]
        banked = _host_file(ck.check_dir, "draw.json")
        self.episode_run = _host_file(ck.check_dir, "episode.json")
        drawn = banked or draw(v)
        self.drawn, self.entry, self.referenced = drawn, dict(self.spec["entry"]), False
        self.knobs, self.world = dict(drawn["knobs"]), int(drawn["world"])
        self.secret = float(drawn["secret"])
        self.banked_reference = (banked or {}).get("reference")  # the reference's results under this draw
        self.bank_wanted = banked is not None and not self.banked_reference
        base = int(v.get("world_size", 0))
        self.time_scale = max(1.0, self.world / base) if base else 1.0
        self.private = ck.private_dir or ck.scratch / "private"
        self.private.mkdir(mode=0o700, exist_ok=True)
        self.pristine = self.private / "workspace"
        shutil.copytree(ck.workspace, self.pristine, symlinks=True)
        self.fresh = [Path(p) for p in os.environ.get("SANDBOX_FRESH_DIRS", "").split(":") if p]
        self.runs = 0
        self.deployment = deployment_env(v["production_dir"], self.world)
        ck.evidence["knobs"] = self.knobs
        if v.get("world_sizes"):
            ck.evidence["world_size"] = self.world
        ck.evidence["deployment_env"] = sorted(self.deployment)

    # -- children ---------------------------------------------------------------------------
    def _fresh(self) -> None:
        """Every agent run starts as the agent's own runs do: nothing left in /tmp by an earlier one."""
        for d in self.fresh:
            for p in d.iterdir() if d.is_dir() else ():
                if p.is_dir() and not p.is_symlink():
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    p.unlink(missing_ok=True)

    def _where(self, where: Path) -> dict[str, Any]:
        """How a run from ``where`` starts: as the agent's own runs from the workspace, as a
        deployment from anywhere else (the production copy; the reference mirrors it)."""
        return {} if where == self.ck.workspace else {"env": self.deployment, "deployed": True}

    def _driver(self, where: Path, name: str) -> DriverRun:
        v = self.spec["verify"]
        out = self.ck.scratch / f"out-{name}"
        if out.exists():
            shutil.rmtree(out)
        out.mkdir()
        spec = {"workspace": str(where), "out": str(out), "knobs": self.knobs,
                "config": self.spec["entry"]["config"], "train": self.spec["entry"]["train"],
                "call": v.get("call", ["cfg"]), "world_size": self.world,
                "set": {k: self.world if x == "$world" else x for k, x in v.get("set", {}).items()},
                "process_group": v.get("process_group_timeout_s"), "probe": v.get("probe"),
                "secret": self.secret, "torch": v.get("torch", True)}
        spec_path = self.ck.scratch / f"spec-{name}.json"
        spec_path.write_text(json.dumps(spec))
        self._fresh()
        driver = (self.ck.driver_dir or self.ck.check_dir) / DRIVER
        # started as the agent's own runs start python (shell, time limit, data cap): only the
        # script, its argument and what it imports before agent code differ
        limit = float(v.get("timeout_s", 120)) * self.time_scale
        res = self.ck.run_as_agent(f"python {shlex.quote(str(driver))} {shlex.quote(str(spec_path))}",
                                   cwd=where, timeout_s=limit, limit_s=limit,
                                   data_limit_mb=self.spec.get("data_mb"), **self._where(where))
        run = DriverRun(res)
        try:
            for r in range(max(1, self.world)):
                p = out / f"rank{r}.json"
                if p.exists():
                    rep = json.loads(p.read_text())
                    if not isinstance(rep, dict):
                        raise TypeError(f"rank {r} report is not an object")
                    run.reports[r] = rep
                if (out / f"rank{r}.pt").exists() and not (p.exists() and run.reports[r].get("error")):
                    import torch

                    st = torch.load(out / f"rank{r}.pt", weights_only=True)
                    if not isinstance(st, dict) or not all(isinstance(t, torch.Tensor) for t in st.values()):
                        raise TypeError(f"rank {r} state is not a dict of tensors")
                    run.states[r] = st
        except (*REPORT_ERRORS, RuntimeError, EOFError) as exc:
            run.unreadable = f"{type(exc).__name__}: {str(exc)[:200]}"
        shutil.rmtree(out, ignore_errors=True)
        spec_path.unlink(missing_ok=True)
        return run

    def reference(self, files: dict[str, bytes] | None = None) -> DriverRun:
        """The reference fix under the same knobs, before any agent code; nothing stays on disk.
        ``files`` (relative path -> bytes) are added to its copy first (a checkpoint the run
        must read). The first plain call under the drawn knobs and entry points is the one the
        host's bank serves (its results, no run) or collects."""
        plain = (files is None and not self.referenced and self.knobs == self.drawn["knobs"]
                 and self.spec["entry"] == self.entry)
        self.referenced = True
        if plain and self.banked_reference:
            self.ck.evidence["reference_s"] = 0.0
            self.ck.evidence["reference_banked"] = True
            return _unpack(self.banked_reference)
        where = self.ck.scratch / "reference"
        shutil.copytree(self.ck.check_dir / "reference", where)
        for rel, data in (files or {}).items():
            (where / rel).parent.mkdir(parents=True, exist_ok=True)
            (where / rel).write_bytes(data)
        try:
            run = self._driver(where, "reference")
        finally:
            shutil.rmtree(where, ignore_errors=True)
            self._fresh()
        bad = [r for r in range(max(1, self.world)) if r not in run.reports or run.reports[r].get("error")
               or run.reports[r].get("tampered")]
        if bad or run.unreadable or not run.res.ok:
            why = run.unreadable or json.dumps(run.reports)[-1500:]
            raise RuntimeError(f"the reference run failed (knobs {self.knobs}, exit {run.res.returncode}): "
                               f"{why}\n{run.res.tail(30)}")
        ev = self.ck.evidence
        ev["reference_s"] = round(float(ev.get("reference_s", 0.0)) + run.res.duration_s, 3)
        if plain and self.bank_wanted:
            payload = _pack(run)
            if len(json.dumps(payload)) <= BANK_PAYLOAD_MAX:
                self.ck.bank = payload
        return run

    def driver(self, where: Path) -> DriverRun:
        self.runs += 1
        return self._driver(where, f"agent{self.runs}")

    def command(self, where: Path) -> ChildResult:
        """The repo's own command, started as the agent's own runs start it (see Check.run_as_agent)."""
        self._fresh()
        return self.ck.run_as_agent(self.spec["run_command"], cwd=where,
                                    timeout_s=float(self.spec["verify"].get("run_timeout_s", 120)),
                                    limit_s=float(self.spec.get("timeout_s", 60)),
                                    data_limit_mb=self.spec.get("data_mb"), **self._where(where))

    def production(self) -> Path:
        """A fresh copy of the submitted workspace at the production directory (nothing else in
        /srv). Where /srv is not the sandbox's own (local mode, tools/dev_check.py) the host names
        a stand-in root in ``SANDBOX_PRODUCTION_ROOT``."""
        rel = Path(self.spec["verify"]["production_dir"]).relative_to("/")
        root = Path(os.environ.get("SANDBOX_PRODUCTION_ROOT", "/"))
        top, prod = root / rel.parts[0], root / rel
        for p in top.iterdir() if top.is_dir() else ():
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
        shutil.copytree(self.pristine, prod, symlinks=True)
        git_checkout(prod)
        if self.ck.child_uid is not None:
            uid = self.ck.child_uid
            for d in prod.relative_to(top).parents:
                os.chown(top / d, uid, uid)
            for dirpath, dirnames, filenames in os.walk(prod):
                for n in [dirpath, *(os.path.join(dirpath, x) for x in dirnames + filenames)]:
                    os.chown(n, uid, uid, follow_symlinks=False)
        return prod

    def standard(self, judge: Any = None, *, what: str, explain: Any = None) -> None:
        """The kit's whole verification, in order, stopping at the first failure: the reference
        run; ``python train.py`` from the workspace; the driver with the drawn knobs from the
        production dir (its report, ``judge(self, run, ref)`` for the task's own requirements,
        replicas vs rank 0, results and trained states vs the reference); ``python train.py``
        from the production dir. ``explain(run)`` (optional) may add why a rank raised, from
        what the probe saw before the error (a string, or None)."""
        ck = self.ck
        ref = self.reference()
        cmd = f"`{self.spec['run_command']}`"
        if not self.episode_ran(f"{cmd} (the repo's defaults) in the workspace") and not self.require_run(
                self.command(ck.workspace), f"{cmd} (the repo's defaults) in the workspace"):
            return
        prod = self.production()
        run = self.driver(prod)
        if not self.require_report(run, what, explain):
            return
        if judge is not None and not judge(self, run, ref):
            return
        if self.world > 1 and not self.compare_consumption(run, ref):
            return
        if self.world > 1:
            diffs = replica_diffs(run.states)
            tol = float(self.spec["verify"].get("replica_atol", 1e-6))
            ck.evidence["replica_max_abs_diff"] = {str(r): d for r, d in diffs.items()}
            bad = {r: d for r, d in diffs.items() if not d <= tol}
            if bad:
                r, d = max(bad.items(), key=lambda kv: kv[1])
                ck.fail(f"replicas diverged: after training the parameters of rank {r} differ from rank "
                        f"0's by up to {d:.3g} (tolerance {tol:g}): every rank must apply the same "
                        "averaged gradients")
                return
        if not self.compare(run, ref, what):
            return
        compared = "results and trained parameters" if run.states else "results"
        ck.note(f"{what}: {compared} equal the reference fix's run under the same knobs")
        if self.require_run(self.command(prod), f"{cmd} in {prod}"):
            ck.note(f"{cmd} exits 0 in the workspace and in {prod}")

    def episode_ran(self, what: str) -> bool:
        """Whether the episode's own last run of the repo's command exited 0 on exactly the
        submitted files, with nothing else in the workspace (the host's ``episode.json``): the
        check's run from the workspace would start the same way on the same files, so that run
        stands for it. Every other run is the check's own."""
        ran = self.episode_run
        if not ran or ran.get("exit_code") != 0:
            return False
        self.ck.evidence.setdefault("runs", {})[what] = {"rc": 0, "s": ran.get("duration_s"), "episode": True}
        return True

    # -- judging ------------------------------------------------------------------------------
    def require_run(self, res: ChildResult, what: str) -> bool:
        """Exit 0 within the limit; else fail with what happened (timeout, OOM, exit code)."""
        self.ck.evidence.setdefault("runs", {})[what] = {
            "rc": res.returncode, "s": res.duration_s, "peak_rss_mb": res.peak_rss_mb}
        if res.ok:
            return True
        line = exception_line(res.output) if not res.timed_out and re.search(
            r"^[\w.]+(Error|Exception|Exit|Unsupported)\b", res.output, re.M) else ""
        if line:
            self.ck.evidence.setdefault("errors", {})[what] = line
            what = f"{what} (error: {line})"
        return self.ck.require_clean_exit(res, what)

    def require_report(self, run: DriverRun, what: str, explain: Any = None) -> bool:
        """Every rank reported, untampered, without error; else fail saying why (with what
        ``explain(run)`` adds about an error)."""
        ck = self.ck
        if run.unreadable:
            ck.fail(f"{what} left an unreadable report ({run.unreadable}): the driver's result files "
                    f"were overwritten or cut short by the code under test; last output:\n{run.res.tail()}")
            return False
        tampered = sorted({t for rep in run.reports.values() for t in rep.get("tampered") or []})
        if tampered:
            ck.evidence["tampered"] = tampered[:20]
            ck.fail("workspace code changed torch (or standard library) behaviour for the whole process: "
                    f"{'; '.join(tampered[:6])}; monkeypatching and process-wide hooks or switches are "
                    "not a fix")
            return False
        errors = {r: rep["error"] for r, rep in run.reports.items() if rep.get("error")}
        if errors:
            tb = errors[min(errors)]
            ck.evidence["rank_errors"] = {str(k): v[-700:] for k, v in errors.items()}
            oom = "MemoryError" in tb or "can't allocate memory" in tb
            why = explain(run) if explain is not None else None
            ck.fail(f"{what} raised on rank{'s' if len(errors) > 1 else ''} {sorted(errors)}: "
                    f"{exception_line(tb)}" + (f"; {why}" if why else ""),
                    "oom_killed" if oom else ck.child_outcome(run.res))
            return False
        if not self.require_run(run.res, what):
            return False
        missing = [r for r in range(max(1, self.world)) if r not in run.reports]
        if missing:
            ck.fail(f"{what} exited without a result from rank(s) {missing}: the process ended before "
                    f"the training function returned; last output:\n{run.res.tail()}")
            return False
        return True

    def compare_consumption(self, got: DriverRun, ref: DriverRun) -> bool:
        """Each rank trained on its own share of the data, as in the reference run: no more rows
        per optimizer step than the reference's rank did (x SHARE_SLACK), and, forward by forward,
        no more of them also given to another rank's same forward than in the reference run
        (+ OVERLAP_SLACK): replicated work, every rank training on the global batch, gives equal
        averaged gradients while each rank does the whole job."""
        def shares(run: DriverRun) -> dict[int, tuple[int, float]]:
            seen = {r: (rep.get("consumed") or {}) for r, rep in run.reports.items()}
            calls = {r: c.get("prints") or [] for r, c in seen.items()}
            out = {}
            for r, mine in calls.items():
                total = shared = 0
                for i, rows in enumerate(mine):
                    others = set().union(*(set(c[i]) for q, c in calls.items() if q != r and i < len(c)))
                    total += len(rows)
                    shared += sum(1 for x in rows if x in others)
                out[r] = (int(seen[r].get("rows") or 0), shared / total if total else 0.0)
            return out

        mine, want = shares(got), shares(ref)
        self.ck.evidence["rows_per_rank"] = {str(r): mine.get(r, (0, 0.0))[0] for r in want}
        for r, (ref_rows, ref_shared) in sorted(want.items()):
            rows, shared = mine.get(r, (0, 0.0))
            if rows > ref_rows * SHARE_SLACK or shared > ref_shared + OVERLAP_SLACK:
                self.ck.fail(
                    f"rank {r} trained on {rows} rows, {shared:.0%} of them given to another rank in the "
                    f"same step, where the reference fix's rank {r} trained on {ref_rows} "
                    f"({ref_shared:.0%}): with {self.world} ranks each rank must train on its own share of "
                    "the data, not repeat the other ranks' work")
                return False
        return True

    def compare(self, got: DriverRun, ref: DriverRun, what: str) -> bool:
        """Results and trained states of every rank equal the reference's, within the tolerances."""
        v = self.spec["verify"]
        atol, rtol = float(v.get("atol", 1e-5)), float(v.get("rtol", 1e-4))
        bad: list[str] = []
        for r, want in ref.results().items():
            diffs = compare_tree(got.reports[r].get("result"), want, atol, rtol,
                                 ignore=tuple(v.get("ignore", ())))
            bad += [f"rank {r} {d}" if self.world else d for d in diffs]
        for r, want in ref.states.items():
            p_atol = atol if v.get("param_atol") is None else float(v["param_atol"])
            p_rtol = rtol if v.get("param_rtol") is None else float(v["param_rtol"])
            diffs = compare_states(got.states.get(r, {}), want, p_atol, p_rtol)
            bad += [f"rank {r} parameter {d}" if self.world else f"parameter {d}" for d in diffs]
        if bad:
            self.ck.evidence["differences"] = bad[:30]
            self.ck.fail(f"{what}: {len(bad)} result(s) differ from the reference fix's run under the same "
                         f"knobs ({knob_text(self.knobs)}): " + "; ".join(bad[:6]))
            return False
        return True


def git_checkout(root: Path) -> str:
    """Make ``root`` a git work tree with its files committed (objects, a branch, an index),
    written directly: the sandbox has no git binary and must not need one. Returns the commit."""
    git = root / ".git"
    if git.exists():
        shutil.rmtree(git) if git.is_dir() and not git.is_symlink() else git.unlink()

    def put(kind: str, body: bytes) -> bytes:
        data = b"%s %d\0" % (kind.encode(), len(body)) + body
        sha = hashlib.sha1(data).digest()
        obj = git / "objects" / sha.hex()[:2] / sha.hex()[2:]
        obj.parent.mkdir(parents=True, exist_ok=True)
        obj.write_bytes(zlib.compress(data))
        return sha

    index: list[tuple[str, os.stat_result, int, bytes]] = []

    def tree(d: Path, prefix: str) -> bytes:
        entries = []
        for p in d.iterdir():
            if p.name == ".git":
                continue
            st = p.lstat()
            if stat.S_ISDIR(st.st_mode):
                entries.append((p.name + "/", b"40000", p.name, tree(p, f"{prefix}{p.name}/")))
                continue
            if stat.S_ISLNK(st.st_mode):
                mode, sha = 0o120000, put("blob", os.readlink(p).encode())
            else:
                mode, sha = 0o100755 if st.st_mode & 0o111 else 0o100644, put("blob", p.read_bytes())
            entries.append((p.name, b"%o" % mode, p.name, sha))
            index.append((prefix + p.name, st, mode, sha))
        return put("tree", b"".join(m + b" " + n.encode() + b"\0" + s
                                    for _, m, n, s in sorted(entries)))

    top = tree(root, "")
    who = b"deploy <deploy@localhost> 1764547200 +0000"
    commit = put("commit", b"tree %s\nauthor %s\ncommitter %s\n\nrelease\n" % (top.hex().encode(), who, who))
    (git / "refs" / "heads").mkdir(parents=True, exist_ok=True)
    (git / "refs" / "tags").mkdir(exist_ok=True)
    (git / "refs" / "heads" / "main").write_text(commit.hex() + "\n")
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n")
    body = b"DIRC" + struct.pack(">II", 2, len(index))
    for path, st, mode, sha in sorted(index, key=lambda e: e[0].encode()):
        name = path.encode()
        entry = struct.pack(">10I", int(st.st_ctime), 0, int(st.st_mtime), 0, st.st_dev & 0xFFFFFFFF,
                            st.st_ino & 0xFFFFFFFF, mode, st.st_uid, st.st_gid, st.st_size & 0xFFFFFFFF)
        entry += sha + struct.pack(">H", min(len(name), 0xFFF)) + name
        body += entry + b"\0" * (8 - len(entry) % 8)
    (git / "index").write_bytes(body + hashlib.sha1(body).digest())
    return commit.hex()


def exception_line(tb: str) -> str:
    """The exception line of a formatted traceback (plus the parameter lines DDP adds)."""
    lines = tb.strip().splitlines()
    pat = re.compile(r"^[\w.]+(Error|Exception|Exit|Interrupt|Unsupported)\b")
    head = next((ln for ln in reversed(lines) if pat.match(ln)), lines[-1] if lines else "")
    extra = [ln.strip() for ln in lines if ln.startswith(("Parameter indices", "Parameters which"))]
    return " | ".join([head[:420], *extra[:2]])


def knob_text(knobs: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in knobs.items())
