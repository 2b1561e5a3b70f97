"""sparse_export_missing_zero_days's check on the kit: ``python train.py`` (its backtest audit) exits 0 in
the workspace and the production dir on the repo's exports; fit() of the reference fix and of the
submission run under the same drawn knobs on another week's exports held here (exports_a: east's ERP
writes only days with sales, two west stores since day 35; exports_b: south, two north stores since
day 49), put into the production copy's data/; rows, results and parameters must be the reference's."""

import os
from pathlib import Path

from check_kit import DRIVER_FILES, Verification, knob_text
from check_runtime import Check, hidden

HERE = Path(__file__).resolve().parent


def export_set(name: str) -> dict[str, bytes]:
    root = HERE / f"exports_{name}"
    return {f"data/{p.relative_to(root)}": p.read_bytes() for p in sorted(root.rglob("*.csv"))}


def put(ck: Check, root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        path.write_bytes(data)
        if ck.child_uid is not None:
            os.chown(path, ck.child_uid, ck.child_uid)
            os.chown(path.parent, ck.child_uid, ck.child_uid)


def judge(v: Verification, run, ref) -> bool:
    got, want, ck = run.reports[0].get("result") or {}, ref.results()[0], v.ck
    rows, want_rows = got.get("rows") or {}, want["rows"]
    ck.evidence["rows"] = {"got": rows, "reference": want_rows}
    for split in ("train", "holdout"):
        if not ck.require(rows.get(split) == want_rows[split],
                          f"fit() built {rows.get(split)} {split} rows from export set "
                          f"{ck.evidence['export_set']}, the reference fix {want_rows[split]}: the model "
                          "must "
                          "train and be scored on one row for every store-item-day the catalogue lists "
                          "(with enough history), whatever the ERPs write"):
            return False
    audit = got.get("audit") or {}
    return ck.require(sorted(audit) == sorted(want["audit"]),
                      f"the backtest covered the regions {sorted(audit)}, expected {sorted(want['audit'])}")


def verify(ck: Check) -> None:
    v = Verification(ck)
    name = "a" if v.secret < 0.04 else "b"
    ck.evidence["export_set"] = name
    files = export_set(name)
    what = f"fit() on export set {name} with the check's knobs ({knob_text(v.knobs)})"
    ref = v.reference(files=files)
    cmd = f"`{v.spec['run_command']}`"
    if not v.episode_ran(f"{cmd} (the repo's defaults) in the workspace") and not v.require_run(
            v.command(ck.workspace), f"{cmd} (the repo's defaults) in the workspace"):
        return
    prod = v.production()
    original = {rel: (prod / rel).read_bytes() for rel in files if (prod / rel).is_file()}
    put(ck, prod, files)
    run = v.driver(prod)
    if not v.require_report(run, what) or not judge(v, run, ref) or not v.compare(run, ref, what):
        return
    ck.note(f"{what}: results and trained parameters equal the reference fix's run")
    for rel in files:
        (prod / rel).unlink(missing_ok=True)
    put(ck, prod, original)
    if v.require_run(v.command(prod), f"{cmd} in {prod}"):
        ck.note(f"{cmd} exits 0 in the workspace and in {prod}")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=DRIVER_FILES))
