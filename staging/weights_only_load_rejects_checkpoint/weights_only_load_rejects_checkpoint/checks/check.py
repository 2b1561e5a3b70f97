"""Hidden check for weights_only_load_rejects_checkpoint, on the kit (check_kit). Last week's checkpoints
(checks/legacy, written by the original project's own save code: numpy values, a PosixPath) are resumed by
the reference fix and the workspace (production dir) under drawn knobs: results and parameters equal the
reference's; every new checkpoint loads with a bare torch.load(p, weights_only=True) (no project code) and a
run resumed from the first of them ends exactly as the run that wrote it; no weights_only=False (probe.py);
a poisoned checkpoint (its pickle calls builtins.exec / eval) not run; ``python train.py`` exits 0."""

import io
import os
import secrets

from check_kit import DRIVER_FILES, Verification, knob_text
from check_runtime import Check, hidden

LEGACY = ("last.pt", "best.pt")


def place(v: Verification, root, files: dict) -> str:
    name = "ckpt-" + secrets.token_hex(4)
    (root / name).mkdir(parents=True)
    for n, data in files.items():
        (root / name / n).write_bytes(data)
    if v.ck.child_uid is not None:
        for p in [root / name, *(root / name).iterdir()]:
            os.chown(p, v.ck.child_uid, v.ck.child_uid)
    v.knobs.update(ckpt_dir=name, resume=f"{name}/last.pt")
    return name


def poisoned() -> tuple[bytes, str]:
    import torch

    how = secrets.choice(["exec", "eval"])
    code = "__import__('sys').modules['check_probe'].S.__setitem__('payload', 1)"

    class Payload:
        def __reduce__(self):
            return (exec if how == "exec" else eval, (code,))

    buf = io.BytesIO()
    torch.save({"model": {}, "epoch": 3, "history": [{"epoch": 3, "val_f1": Payload()}]}, buf)
    return buf.getvalue(), f"builtins.{how}"


def loads_safely(v: Verification, run, what: str) -> bool:
    probe = (run.reports.get(0) or {}).get("probe") or {}
    if probe.get("unsafe_loads") or probe.get("force_no_weights_only"):
        where = (probe.get("unsafe_loads") or ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD set"])[0]
        v.ck.fail(f"{what}: a checkpoint was read with torch.load(..., weights_only=False) ({where}): "
                  "checkpoints come from shared storage and must be read with weights_only=True")
        return False
    return True


def explain(run) -> str | None:  # the weights-only unpickler's own reason, below its long preamble
    lines = [ln.strip() for r in run.reports.values() for ln in (r.get("error") or "").splitlines()]
    return next((ln for ln in lines if "WeightsUnpickler error" in ln or "Can only" in ln), None)


def verify(ck: Check) -> None:
    v = Verification(ck)
    drawn = dict(v.knobs)
    legacy = {n: (ck.check_dir / "legacy" / n).read_bytes() for n in LEGACY}
    what = f"fit() resuming last week's checkpoint with the check's knobs ({knob_text(drawn)})"
    name = "ckpt-" + secrets.token_hex(4)
    v.knobs.update(ckpt_dir=name, resume=f"{name}/last.pt")
    ref = v.reference(files={f"{name}/{n}": data for n, data in legacy.items()})
    cmd = f"`{v.spec['run_command']}`"
    if not v.require_run(v.command(ck.workspace), f"{cmd} (the repo's defaults) in the workspace"):
        return
    prod = v.production()
    d = prod / place(v, prod, legacy)
    run = v.driver(prod)
    ok = v.require_report(run, what, explain) and loads_safely(v, run, what)
    if not (ok and v.compare(run, ref, what)):
        return
    written = [p for p in sorted(d.iterdir()) if p.is_file() and legacy.get(p.name) != p.read_bytes()]
    if not ck.require(written, f"{what}: the resumed run wrote no checkpoint into {d.name}/"):
        return
    import torch

    for p in written:
        try:
            torch.load(p, map_location="cpu", weights_only=True)
        except Exception as exc:  # any failure is the finding
            lines = [ln.strip() for ln in str(exc).splitlines() if "global" in ln or "Can only" in ln]
            why = lines[0] if lines else str(exc)
            ck.fail(f"{what}: the new checkpoint {p.name} cannot be read with plain torch.load(path, "
                    f"weights_only=True) outside the project (as the model registry reads it): "
                    f"{type(exc).__name__}: {why[:300]}")
            return
    first = next(p for p in written if p.name.startswith("epoch_"))  # the run goes on after it
    v.knobs.update(resume=f"{d.name}/{first.name}")
    again, what2 = v.driver(prod), f"fit() resumed from the new checkpoint {first.name} it wrote"
    v.spec["verify"]["ignore"] = [*v.spec["verify"].get("ignore", ()), "start_epoch", "epochs_run"]
    if not (v.require_report(again, what2, explain) and v.compare(again, ref, what2)):
        return
    data, how = poisoned()
    place(v, prod, {"last.pt": data})  # the poisoned run: it may fail, it must not run the payload
    bad = v.driver(prod)
    rep = bad.reports.get(0) or {}
    if bad.unreadable or rep.get("tampered"):
        v.require_report(bad, "resuming from an untrusted checkpoint")
        return
    if (rep.get("probe") or {}).get("payload"):
        ck.fail(f"resuming from a checkpoint whose pickle calls {how} ran that code: the loader must refuse "
                "globals outside the few a checkpoint legitimately holds (weights_only=True, a narrow "
                "allowlist)")
        return
    if loads_safely(v, bad, "resuming from an untrusted checkpoint"):
        ck.note(f"{what}: results and parameters equal the reference's; {len(written)} new checkpoint(s) "
                f"load with weights_only=True; a checkpoint calling {how} was refused")
        if v.require_run(v.command(prod), f"{cmd} in {prod}"):
            ck.note(f"{cmd} exits 0 in the workspace and in {prod}")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=(*DRIVER_FILES, "probe.py")))
