"""Hidden check for resume_without_optimizer_state, on the kit (check_kit): live reference, drawn knobs.

The reference fix trains uninterrupted under the drawn knobs (as the unfixed code does). From the
production dir the workspace trains under the same knobs and is SIGKILLed (probe.py) after a drawn
step K whose newest checkpoint lies inside an epoch after the first; a second process resumes. It
must start at a checkpoint before K, run exactly the remaining steps, and match the reference's
per-step losses and LRs, holdout loss and parameters; checkpoints must load with weights_only=True;
``python train.py --resume-check`` must exit 0 in the workspace and there.
"""

import secrets

from check_kit import DRIVER_FILES, Verification, compare_states, compare_tree, knob_text
from check_runtime import Check, hidden


def preempted_run(v: Verification, prod, k: int):
    """The workspace's training from the production dir, killed after optimizer step ``k``."""
    secret = v.secret
    v.secret = float(k)
    try:
        return v.driver(prod)
    finally:
        v.secret = secret


def judge(v: Verification, run, ref, k: int, resume_at: int) -> bool:
    ck, steps = v.ck, int(v.knobs["steps"])
    probe, got = run.reports[0].get("probe") or {}, run.reports[0].get("result")
    ck.evidence["resumed_probe"] = probe
    if probe.get("unsafe_loads"):
        ck.fail(f"a checkpoint was loaded with torch.load(..., weights_only=False) ({probe['unsafe_loads'][0]}): "
                "checkpoints must stay loadable with weights_only=True")
        return False
    if probe.get("unsafe_files"):
        ck.fail(f"a checkpoint cannot be loaded with torch.load(..., weights_only=True): {probe['unsafe_files'][0]}")
        return False
    if not ck.require(probe.get("checkpoint_files", 0) > 0, "the resumed run left no checkpoint file in its run "
                      "directory: training must keep checkpointing"):
        return False
    start = got.get("start_step") if isinstance(got, dict) else None
    if not ck.require(isinstance(start, int) and resume_at <= start < k,
                      f"the resumed process reports start_step {start!r}: pre-empted after step {k} with a "
                      f"checkpoint every {v.knobs['ckpt_every']} steps, it must resume from step {resume_at} "
                      f"(or a later checkpoint before step {k}), not redo the run"):
        return False
    n = probe.get("optimizer_steps")
    if not ck.require(n == steps - start, f"the resumed process ran {n} optimizer steps; resuming from step "
                      f"{start} of {steps} it must run exactly {steps - start}"):
        return False
    want = ref.reports[0]["result"]
    vs = v.spec["verify"]
    atol, rtol = float(vs.get("atol", 1e-6)), float(vs.get("rtol", 0.0))
    expected = {"losses": want["losses"][start:], "lrs": want["lrs"][start:], "holdout_loss": want["holdout_loss"]}
    bad = compare_tree({k2: got.get(k2) for k2 in expected}, expected, atol, rtol)
    bad += [f"parameter {d}" for d in compare_states(run.states.get(0, {}), ref.states[0],
                                                     float(vs.get("param_atol") or atol), 0.0)]
    if bad:
        ck.evidence["differences"] = bad[:30]
        ck.fail(f"the run resumed from step {start} (pre-empted after step {k}) differs from an uninterrupted "
                f"run of the original code under the same knobs ({knob_text(v.knobs)}; uninterrupted runs "
                "must stay as they are): " + "; ".join(bad[:6]))
        return False
    return True


def preempt_points(knobs: dict) -> list[int]:
    """Steps K to pre-empt after: the newest checkpoint before K is inside an epoch after the first."""
    steps, every = int(knobs["steps"]), int(knobs["ckpt_every"])
    per_epoch = int(knobs["num_series"]) // int(knobs["batch_size"])
    ks = range(every + 1, steps - 1)
    return [k for k in ks if every * ((k - 1) // every) > per_epoch and (every * ((k - 1) // every)) % per_epoch] or list(ks)


def verify(ck: Check) -> None:
    v = Verification(ck)
    steps, every = int(v.knobs["steps"]), int(v.knobs["ckpt_every"])
    k = secrets.SystemRandom().choice(preempt_points(v.knobs))
    resume_at = every * ((k - 1) // every)
    ck.evidence.update(preempt_after_step=k, newest_checkpoint_before=resume_at)
    what = f"training with the check's knobs ({knob_text(v.knobs)}), pre-empted after step {k} and resumed"
    ref = v.reference()
    cmd = f"`{v.spec['run_command']}`"
    if not v.require_run(v.command(ck.workspace), f"{cmd} in the workspace"):
        return
    prod = v.production()
    first = preempted_run(v, prod, k)
    rep = first.reports.get(0) or {}
    if rep.get("preempted") != k:
        if rep.get("error") or first.unreadable or rep.get("tampered"):
            v.require_report(first, f"training before the pre-emption at step {k}")
        else:
            ck.fail(f"the first run was to be pre-empted after optimizer step {k} but ended after "
                    f"{(rep.get('probe') or {}).get('optimizer_steps')} steps (exit {first.res.returncode}): "
                    f"training must run {steps} steps; last output:\n{first.res.tail()}")
        return
    knobs = v.knobs
    v.knobs = {**knobs, "resume": True}
    try:
        run = v.driver(prod)
    finally:
        v.knobs = knobs
    if not v.require_report(run, what) or not judge(v, run, ref, k, resume_at):
        return
    ck.note(f"{what}: losses, learning rates and parameters equal an uninterrupted run's")
    if v.require_run(v.command(prod), f"{cmd} in {prod}"):
        ck.note(f"{cmd} exits 0 in the workspace and in {prod}")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=(*DRIVER_FILES, "probe.py")))
