"""Hidden check for ddp_gradient_hang.

1. The check's driver trains the workspace on 2 gloo ranks with knobs the check owns
   (seed, data seed, step count, auxiliary period, learning rate, ...), each rank saving
   its trained state_dict, its parameters before the first update and its per-step losses.
2. Requirements: exit 0; every step completed on every rank; per-step and final losses
   equal the reference run (solution) within 1e-3; parameters identical across ranks
   (1e-6); the reconstruction head still trained (changed from its initial values); every
   trained parameter equal to the reference run's within 1e-4 (catches objectives that
   differ only slightly, e.g. a detached encoder path); no torch function replaced.
3. ``python train.py`` (the repo's own command, its own defaults) exits 0.

Agent code runs in the driver's rank processes and can write the driver's result files, so a
report or checkpoint of the wrong shape fails the workspace instead of crashing the check.
Children read only the driver, and no verbatim line of the check's own sources is shown in
the verdict.
"""

from __future__ import annotations

import json
import math
import pickle
import re

from check_runtime import REPORT_ERRORS, Check, hidden, unreadable_report

LOSS_TOL = 1e-3
PARAM_TOL = 1e-4
REPLICA_TOL = 1e-6


def _close(a: float, b: float, tol: float) -> bool:
    return math.isfinite(a) and abs(a - b) <= tol * max(1.0, abs(b))


def _exception_line(tb: str) -> str:
    """The exception line of a formatted traceback (plus the parameter line DDP adds)."""
    lines = tb.strip().splitlines()
    head = next((ln for ln in reversed(lines) if re.match(r"^[\w.]+(Error|Exception|Exit|Interrupt)\b", ln)),
                lines[-1] if lines else "")
    extra = [ln.strip() for ln in lines if ln.startswith(("Parameter indices", "Parameters which"))]
    text = head if len(head) <= 420 else head[:420] + " ..."
    return " | ".join([text, *extra[:2]])


def verify(ck: Check) -> None:
    ref = json.loads((ck.check_dir / "reference.json").read_text())
    knobs = ref["knobs"]
    ck.evidence["knobs"] = knobs

    out = ck.scratch / "driver_out"
    out.mkdir()
    res = ck.run_driver("driver.py", "--workspace", str(ck.workspace), "--out", str(out),
                        "--knobs", json.dumps(knobs), timeout_s=90)
    ck.evidence["driver_rc"] = res.returncode
    ck.evidence["driver_duration_s"] = res.duration_s

    try:
        analyse(ck, res, out, ref)
    except (*REPORT_ERRORS, RuntimeError, EOFError, pickle.UnpicklingError) as exc:
        unreadable_report(ck, exc, res.tail())


def analyse(ck: Check, res, out, ref: dict) -> None:
    """Judge the ranks' reports and trained states (written by agent-run code: untrusted)."""
    knobs = ref["knobs"]
    world = knobs["world_size"]
    steps = knobs["steps"]
    reports = {}
    for r in range(world):
        p = out / f"rank{r}.json"
        if p.exists():
            try:
                reports[r] = json.loads(p.read_text())
            except json.JSONDecodeError:
                pass
    if not all(isinstance(rep, dict) for rep in reports.values()):
        raise TypeError("a rank report is not a JSON object")
    tampered = sorted({t for rep in reports.values() for t in rep.get("tampered", [])})
    if tampered:
        ck.fail(f"training replaced torch functions the verification relies on: {', '.join(tampered)}")
        return
    errors: dict[str, list[int]] = {}
    for r, rep in sorted(reports.items()):
        if rep.get("error"):
            line = re.sub(r"\bfor rank \d+\b", "for rank N", _exception_line(rep["error"]))
            errors.setdefault(line, []).append(r)
    if errors:
        ck.evidence["rank_errors"] = [rep["error"][-700:] for rep in reports.values() if rep.get("error")]
        why = "; ".join(f"rank{'s' if len(rs) > 1 else ''} {', '.join(map(str, rs))}: {line}"
                        for line, rs in errors.items())
        ck.fail(f"training with the check's settings (world_size={world}, steps={steps}, "
                f"aux_every={knobs['aux_every']}) raised: {why}", ck.child_outcome(res))
        return
    if not ck.require_clean_exit(res, f"training with the check's settings (world_size={world}, steps={steps}, "
                                      f"aux_every={knobs['aux_every']})"):
        return
    missing = [r for r in range(world) if r not in reports or not (out / f"rank{r}.pt").exists()]
    if missing:
        ck.fail(f"train.train() returned without a result on rank(s) {missing}: the process exited early "
                f"or training never finished; last output:\n{res.tail()}")
        return

    # -- steps completed ----------------------------------------------------------------
    for r in range(world):
        rep = reports[r]
        n, opt = len(rep.get("losses", [])), rep.get("optimizer_steps", 0)
        ck.evidence[f"rank{r}_steps"] = {"losses_returned": n, "optimizer_steps": opt}
        ck.require(n == steps, f"rank {r} returned {n} step losses, expected {steps} (one per step)")
        ck.require(opt == steps, f"rank {r} ran {opt} optimizer steps, expected {steps}")
    if ck.outcome:
        return

    # -- parameters -----------------------------------------------------------------------
    import torch

    states = [torch.load(out / f"rank{r}.pt", weights_only=True) for r in range(world)]
    inits = [torch.load(out / f"rank{r}_init.pt", weights_only=True) for r in range(world)]
    keys0 = set(states[0])
    for r in range(1, world):
        if set(states[r]) != keys0:
            ck.fail(f"rank {r} model has different parameters than rank 0")
            return
        diffs = {k: (states[r][k].double() - states[0][k].double()).abs().max().item()
                 for k in keys0 if states[r][k].shape == states[0][k].shape}
        worst = max(diffs.items(), key=lambda kv: kv[1]) if diffs else ("-", 0.0)
        ck.evidence[f"replica_max_abs_diff_rank{r}_vs_rank0"] = worst[1]
        ck.require(len(diffs) == len(keys0) and worst[1] <= REPLICA_TOL,
                   f"replicas diverged: after training, {worst[0]} differs between rank 0 and rank {r} "
                   f"by up to {worst[1]:.3g} (gradients must be averaged across ranks every step, "
                   f"as DDP does, so that the replicas stay identical)")

    # -- losses -------------------------------------------------------------------------
    got_final = sum(reports[r]["losses"][-1] for r in range(world)) / world
    ck.evidence["final_loss"] = round(got_final, 6)
    ck.evidence["reference_final_loss"] = round(ref["final_loss"], 6)
    ck.require(_close(got_final, ref["final_loss"], LOSS_TOL),
               f"final loss (mean over {world} ranks after {steps} steps): got {got_final:.5f}, "
               f"expected {ref['final_loss']:.5f}")
    for r in range(world):
        got, want = reports[r]["losses"], ref["losses"][r]
        bad = [i for i in range(steps) if not _close(got[i], want[i], LOSS_TOL)]
        if bad:
            i = bad[0]
            ck.fail(f"rank {r} step {i} loss: got {got[i]:.5f}, expected {want[i]:.5f} "
                    f"({len(bad)} of {steps} steps differ; the reconstruction loss is used at steps "
                    f"with step % {knobs['aux_every']} == 0)")
            ck.evidence[f"rank{r}_losses"] = [round(v, 5) for v in got]

    # -- the reconstruction head is still trained ---------------------------------------
    aux = ref["aux_params"]
    absent = [k for k in aux if k not in keys0]
    if absent:
        ck.fail(f"the reconstruction head is gone from the trained model (missing {', '.join(absent)})")
        return
    for k in aux:
        t = states[0][k].double()
        before = inits[0].get(k)
        if before is None:
            ck.fail(f"{k} was not optimised (not in any optimizer's param groups)")
            continue
        moved = (t - before.double()).abs().max().item()
        ck.evidence[f"{k}_max_update"] = moved
        ck.require(moved > 0, f"{k} never changed from its initial value: the reconstruction head "
                              f"is no longer trained")
    if ck.outcome:
        return

    # every trained parameter equals the reference run's (same objective, averaged gradients)
    worst_by_param = {}
    for k, want in ref["params"].items():
        if k not in keys0 or list(states[0][k].shape) != want["shape"]:
            ck.fail(f"trained model has no parameter {k} of shape {want['shape']} (the reference model has)")
            continue
        expected = torch.tensor(want["values"], dtype=torch.float64).reshape(want["shape"])
        worst_by_param[k] = (states[0][k].double() - expected).abs().max().item()
    ck.evidence["param_max_abs_diff_vs_reference"] = {k: float(f"{v:.3g}") for k, v in worst_by_param.items()}
    off = {k: v for k, v in worst_by_param.items() if not v <= PARAM_TOL}
    if off:
        k = max(off, key=off.get)
        ck.fail(f"after {steps} steps the trained parameters differ from the reference run: {k} by up to "
                f"{off[k]:.2g} (tolerance {PARAM_TOL:g}; {len(off)} of {len(worst_by_param)} tensors differ). "
                f"The gradients that reached the model are not those of the scheduled objective "
                f"(classification every step + {knobs['aux_weight']} x reconstruction every "
                f"{knobs['aux_every']} steps), averaged over the ranks")
    if ck.outcome:
        return
    ck.note(f"{steps} steps on {world} ranks (aux every {knobs['aux_every']}): final loss {got_final:.5f} "
            f"matches the reference; replicas identical; reconstruction head trained")

    # -- the repo's own command ---------------------------------------------------------------
    run = ck.run(["python", "train.py"], timeout_s=90)
    ck.evidence["train_py_rc"] = run.returncode
    ck.evidence["train_py_duration_s"] = run.duration_s
    if ck.require_clean_exit(run, "`python train.py` (repo defaults)"):
        ck.note("`python train.py` exits 0")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=("driver.py",)))
