"""Hidden check for fsdp_collective_deadlock.

1. Runs ``driver.py``: 2 gloo ranks, a 10 s process-group timeout and TrainConfig knobs
   owned by this check (seed, epochs, sizes). Each rank calls the workspace's
   ``train.train(cfg, rank)``. Requires exit 0 within the wall limit.
2. Compares rank 0's per-epoch history (the return value of ``train()``) with the reference
   recorded from the reference fix: global mean train loss, val loss, global sample count.
3. Compares the final full parameters of both ranks with each other and with the reference.
4. Runs the agent's own ``python train.py`` and requires exit 0.

Agent code runs in the driver's rank processes and can write the driver's result files, so a
report of the wrong shape fails the workspace instead of crashing the check. Children read
only the driver, and no verbatim line of the check's own sources is shown in the verdict.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from check_runtime import REPORT_ERRORS, Check, hidden, unreadable_report  # noqa: E402
import knobs  # noqa: E402

TIMEOUT_RE = re.compile(r"Timed out waiting \d+ms for (recv|send) operation to complete")
GLOO_ERR_RE = re.compile(r"(RuntimeError: .*gloo.*|.*EnforceNotMet.*|Connection closed by peer.*)")


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    return abs(a - b) <= atol + rtol * abs(b)


def verify(ck: Check) -> None:
    ref = json.loads((ck.check_dir / "reference.json").read_text())
    out = ck.scratch / "driver" / "result.json"
    out.parent.mkdir()
    ck.evidence["knobs"] = dict(knobs.TRAIN_OVERRIDES, world_size=knobs.WORLD_SIZE,
                                pg_timeout_s=knobs.PG_TIMEOUT_S)

    res = ck.run_driver(
        "driver.py",
        "--workspace", str(ck.workspace),
        "--out", str(out),
        "--overrides", json.dumps(knobs.TRAIN_OVERRIDES),
        "--world-size", str(knobs.WORLD_SIZE),
        "--pg-timeout", str(knobs.PG_TIMEOUT_S),
        timeout_s=knobs.DRIVER_WALL_S,
    )
    ck.evidence["driver_duration_s"] = res.duration_s
    ck.evidence["driver_returncode"] = res.returncode
    try:
        result = json.loads(out.read_text()) if out.exists() else {"ranks": {}, "error": None}
        if not isinstance(result, dict) or not isinstance(result.get("ranks", {}), dict):
            raise TypeError("the report is not a JSON object of ranks")
        analyse(ck, res, result, ref)
    except REPORT_ERRORS as exc:
        unreadable_report(ck, exc, res.tail())


def analyse(ck: Check, res, result: dict, ref: dict) -> None:
    """Judge the driver's run and the ranks' records against the reference."""
    ranks = result.get("ranks", {})

    tampered = sorted({k for r in ranks.values() for k in r.get("tampered", [])})
    if tampered:
        ck.evidence["tampered"] = tampered
        ck.fail("the training code replaced torch functions the run depends on: "
                + ", ".join(tampered) + "; results were not accepted")
        return

    if not res.ok:
        m = TIMEOUT_RE.search(res.output)
        if res.timed_out:
            ck.fail(f"the 2-rank training run did not finish within {knobs.DRIVER_WALL_S}s "
                    f"and was killed (hang); last output:\n{res.tail()}", "timeout")
        elif m:
            ck.evidence["error"] = m.group(0)
            ck.fail(f"the 2-rank training run (process-group timeout {knobs.PG_TIMEOUT_S}s) "
                    f"failed after {res.duration_s:.0f}s: a rank waited in a collective "
                    f"that the other rank never joined ('{m.group(0)}'); last output:\n"
                    f"{res.tail()}")
        else:
            g = GLOO_ERR_RE.search(res.output)
            if g:
                ck.evidence["error"] = g.group(0)[:300]
            ck.fail(f"the 2-rank training run exited with code {res.returncode} after "
                    f"{res.duration_s:.0f}s; last output:\n{res.tail()}")
        return

    r0, r1 = ranks.get("0"), ranks.get("1")
    if not r0 or not r1 or "params" not in r0 or "params" not in r1:
        ck.fail("the 2-rank training run exited 0 but train() did not return on every rank "
                f"(results from ranks {sorted(ranks)}); last output:\n{res.tail()}")
        return
    ck.evidence["train_s_rank0"] = r0.get("train_s")

    # -- rank 0 history vs reference ----------------------------------------------------
    hist, ref_hist = r0.get("history", []), ref["history"]
    ck.evidence["history_rank0"] = hist
    ck.evidence["history_expected"] = ref_hist
    if not ck.require(len(hist) == len(ref_hist),
                      f"train() returned {len(hist)} per-epoch history records on rank 0, "
                      f"expected {len(ref_hist)} (one per epoch, epochs={len(ref_hist)})"):
        return
    metrics_ok = True
    for i, (got, want) in enumerate(zip(hist, ref_hist), start=1):
        for key in ("train_loss", "val_loss"):
            g = got.get(key)
            if not isinstance(g, float) or not _close(g, want[key], 0.0, knobs.LOSS_ATOL):
                metrics_ok = False
                gs = f"{g:.6f}" if isinstance(g, float) else repr(g)
                ck.fail(f"epoch {i} {key} on rank 0: got {gs}, expected {want[key]:.6f} "
                        f"(the mean over all ranks' samples; tolerance {knobs.LOSS_ATOL:g})")
        if got.get("samples") != want["samples"]:
            metrics_ok = False
            ck.fail(f"epoch {i} sample count on rank 0: got {got.get('samples')}, expected "
                    f"{want['samples']} (samples seen by all ranks together)")
    if metrics_ok:
        ck.note(f"per-epoch global mean losses on rank 0 match the reference "
                f"({len(hist)} epochs, tolerance {knobs.LOSS_ATOL:g})")

    # -- final parameters: rank 0 vs rank 1, and vs the reference ------------------------
    p0, p1, pref = r0["params"], r1["params"], ref["params"]
    if not ck.require(sorted(p0) == sorted(pref) and sorted(p1) == sorted(pref),
                      "final model parameters have different names than expected: got "
                      f"{sorted(p0)[:6]}..., expected {sorted(pref)[:6]}..."):
        return
    diverged = [n for n in pref if not all(_close(a, b, 0.0, knobs.RANK_ATOL + 1e-9 * abs(b))
                                           for a, b in zip(p0[n], p1[n]))]
    ck.evidence["params_differ_across_ranks"] = diverged
    ck.require(not diverged, f"final parameters differ between rank 0 and rank 1: {diverged[:4]}")
    off = [n for n in pref if not all(_close(a, b, knobs.PARAM_RTOL, knobs.PARAM_ATOL)
                                      for a, b in zip(p0[n], pref[n]))]
    ck.evidence["params_differ_from_reference"] = off
    if off:
        n = off[0]
        ck.fail(f"final parameters differ from the reference training run: {len(off)} "
                f"tensors, e.g. {n}: fingerprint {[round(v, 5) for v in p0[n]]} vs expected "
                f"{[round(v, 5) for v in pref[n]]}")
    elif not diverged:
        ck.note("final parameters are identical on both ranks and match the reference run")

    if ck.outcome is not None:
        return

    # -- the agent's own entry point ----------------------------------------------------
    run = ck.run(["python", "train.py"], timeout_s=knobs.RUN_WALL_S)
    ck.evidence["train_py_duration_s"] = run.duration_s
    ck.evidence["train_py_returncode"] = run.returncode
    if ck.require_clean_exit(run, "`python train.py`"):
        ck.note(f"`python train.py` exited 0 in {run.duration_s:.1f}s")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=("driver.py",)))
