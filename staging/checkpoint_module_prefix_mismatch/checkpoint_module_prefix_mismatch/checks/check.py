"""Hidden check for checkpoint_module_prefix_mismatch, on the kit (check_kit): live reference, drawn knobs.

1. The reference fix trains under the drawn knobs; ``python train.py`` must exit 0 in the workspace.
2. From the production dir the workspace trains under the same knobs (train:fit): the served metrics
   must equal the logged ones and the reference's; the checkpoint it wrote must load strictly into
   the plain model (its keys are exactly the plain model's state_dict keys) and hold the served weights.
3. A checkpoint as the job published it before the fix (format 2: the wrapped model's keys, with
   ``_orig_mod.`` when compiled, no scaler statistics; weights perturbed with a per-verification
   seed, so only loading them reproduces the score) is scored by serve:score_checkpoint, by the
   reference and from the production dir: metrics and loaded weights must agree.
4. ``python train.py`` must exit 0 in the production dir.
"""

import io
import os
import secrets

from check_kit import DRIVER_FILES, Verification, compare_states, knob_text
from check_runtime import Check, hidden

SERVE, LEGACY = "serve:score_checkpoint", "published/legacy.pt"


def as_serve(v: Verification, run):
    """Run ``run()`` with the serving entry scoring the legacy checkpoint."""
    entry, knobs = v.spec["entry"]["train"], v.knobs
    v.spec["entry"]["train"], v.knobs = SERVE, {**knobs, "checkpoint": LEGACY}
    try:
        return run()
    finally:
        v.spec["entry"]["train"], v.knobs = entry, knobs


def legacy_bytes(ref, knobs: dict, seed: int) -> bytes:
    import torch
    res, g = ref.reports[0]["result"], torch.Generator().manual_seed(seed)
    prefix = "_orig_mod.module." if knobs.get("compile", True) else "module."
    model = {}
    for k, t in ref.states[0].items():
        if ".scaler." in k:
            continue  # format 2 never held the scaler statistics
        if t.is_floating_point() and not k.endswith(("running_mean", "running_var")):
            t = t + 0.05 * torch.randn(t.shape, generator=g, dtype=t.dtype)
        model[prefix + k] = t
    buf = io.BytesIO()
    torch.save({"format": 2, "model": model, "config": res["config"], "epoch": res["best_epoch"],
                "metrics": res["logged"]}, buf)
    return buf.getvalue()


def judge_checkpoint(v: Verification, run, ref, prod) -> bool:
    import torch
    ck, res = v.ck, run.reports[0].get("result") or {}
    served, logged = res.get("served"), res.get("logged")
    if not ck.require(isinstance(served, dict) and served == logged,
                      f"the release gate's served metrics {served} differ from the ones logged when the "
                      f"checkpoint was written {logged}: the published checkpoint does not reproduce its model"):
        return False
    path = prod / v.spec["verify"]["set"]["out_dir"] / "best.pt"
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)["model"]
        keys = set(state)
    except Exception as exc:  # noqa: BLE001 - any failure is the finding
        ck.fail(f"the checkpoint training wrote ({path.name} in out_dir) cannot be read with "
                f"torch.load(weights_only=True): {type(exc).__name__}: {str(exc)[:200]}")
        return False
    want = set(ref.states[0])
    missing, extra = sorted(want - keys), sorted(keys - want)
    if missing or extra:
        ck.evidence.update(missing_keys=missing[:20], unexpected_keys=extra[:20])
        ck.fail("the new checkpoint does not load strictly into the plain model (build_model(cfg), no "
                f"wrapper): missing key(s) {missing[:5]}, unexpected key(s) {extra[:5]}")
        return False
    bad = compare_states(state, run.states.get(0, {}), 0.0, 0.0)
    return ck.require(not bad, "the new checkpoint's tensors are not the weights the release gate served: "
                      + "; ".join(bad[:4]))


def verify(ck: Check) -> None:
    v = Verification(ck)
    what = f"training with the check's knobs ({knob_text(v.knobs)})"
    seed = secrets.randbelow(2**31)
    ck.evidence["legacy_seed"] = seed
    ref = v.reference()
    legacy = legacy_bytes(ref, v.knobs, seed)
    ref_old = as_serve(v, lambda: v.reference(files={LEGACY: legacy}))
    cmd = f"`{v.spec['run_command']}`"
    if not v.require_run(v.command(ck.workspace), f"{cmd} (the repo's defaults) in the workspace"):
        return
    prod = v.production()
    run = v.driver(prod)
    if not v.require_report(run, what) or not judge_checkpoint(v, run, ref, prod) or not v.compare(run, ref, what):
        return
    ck.note(f"{what}: served metrics equal the logged ones and the reference's; the checkpoint loads strictly")
    (prod / LEGACY).parent.mkdir(parents=True, exist_ok=True)
    (prod / LEGACY).write_bytes(legacy)
    if ck.child_uid is not None:
        for p in (prod / LEGACY).parent, prod / LEGACY:
            os.chown(p, ck.child_uid, ck.child_uid)
    old = as_serve(v, lambda: v.driver(prod))
    what = f"serving a checkpoint published before the fix (format 2, compile={v.knobs.get('compile')})"
    if not v.require_report(old, what) or not v.compare(old, ref_old, what):
        return
    ck.note(f"{what}: its score and weights equal the reference fix's")
    if v.require_run(v.command(prod), f"{cmd} in {prod}"):
        ck.note(f"{cmd} exits 0 in the workspace and in {prod}")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=DRIVER_FILES))
