"""Hidden check for dataloader_worker_rng_duplication on the kit: the standard steps in order
(live reference under drawn knobs, `python train.py`, the driver from the production dir, the
command there) with probe.py fingerprinting every training window's mask and input values. Requires:
windows and masked positions per epoch and live loader workers as in the reference run, no mask and
no crop+scale+jitter repeated within an epoch or across epochs, the same masks from a second run with
the same knobs, other masks with another seed. Losses are not compared: fixes draw other augmentations."""

from check_kit import DRIVER_FILES, DriverRun, Verification, knob_text
from check_runtime import REPORT_ERRORS, Check, hidden, unreadable_report

SHARE = 0.01  # duplicated masks tolerated (chance collisions), as a share of the windows
SAME = "were cut from the same recording with the same offset, scale and jitter as "  # equal input values
REPEATS = {"dup_within": (SHARE, "got a mask another window of the same epoch had already got"),
           "dup_earlier": (SHARE, "got a mask already drawn in an earlier epoch"),
           "same_within": (0, SAME + "another window of the same epoch"),  # equal values are never chance
           "same_earlier": (0, SAME + "a window of an earlier epoch")}


def _probe(run: DriverRun) -> dict:
    return got if isinstance(got := (run.reports.get(0) or {}).get("probe"), dict) else {}


def _where(ex) -> str:
    ok = isinstance(ex, list) and len(ex) == 2 and all(isinstance(x, list) and len(x) == 3 for x in ex)
    return f" (e.g. epoch {ex[0][0] + 1} batch {ex[0][1]} window {ex[0][2]} and epoch {ex[1][0] + 1} " \
           f"batch {ex[1][1]} window {ex[1][2]})" if ok else ""


def judge(v: Verification, run: DriverRun, ref: DriverRun) -> bool:
    ck = v.ck
    got, want = _probe(run), _probe(ref)
    eps, ref_eps = got.get("epochs") or [], want["epochs"]
    ck.evidence["probe"] = {"max_workers": got.get("max_workers"), "epochs": [{k: e.get(k) for k in (
        "rows", "masked", *REPEATS)} for e in eps if isinstance(e, dict)][:6]}
    if not ck.require(not got.get("no_mask") and len(eps) == len(ref_eps),
                      f"the model was trained for {len(eps)} epoch(s) with a mask input "
                      f"({got.get('no_mask')} forwards without one), expected {len(ref_eps)}"):
        return False
    for i, (e, r) in enumerate(zip(eps, ref_eps, strict=False)):
        ck.require(e.get("rows") == r["rows"] and e.get("masked") == r["masked"],
                   f"epoch {i + 1}: the model saw {e.get('rows')} training windows with {e.get('masked')} "
                   f"masked positions, expected {r['rows']} with {r['masked']} (every window, the "
                   "configured mask ratio)")
    workers, need = got.get("max_workers"), int(v.knobs.get("num_workers", 1))
    if want["max_workers"] < need:  # the probe cannot see workers here: a sandbox problem, not a verdict
        raise RuntimeError(f"the reference fix ran with {want['max_workers']} visible loader workers, "
                           f"configured {need}")
    ck.require(isinstance(workers, int) and workers >= need,
               f"{workers} DataLoader worker processes were alive during training; the reference fix "
               f"runs with {need} under the same knobs: the loader must keep its workers")
    for i, e in enumerate(eps):
        for kind, (share, what) in REPEATS.items():
            ck.require(e.get(kind, 0) <= share * (e.get("rows") or 0), f"epoch {i + 1}: {e.get(kind)} of "
                       f"{e.get('rows')} training windows {what}" + _where(e.get(f"example_{kind}")) + ": " +
                       ("the augmentation draws repeat within an epoch" if "within" in kind else
                        "every epoch repeats the augmentations of the one before"))
    return ck.outcome is None


def digests(run: DriverRun) -> list:
    return [e.get("digest") for e in _probe(run).get("epochs") or [] if isinstance(e, dict)]


def verify(ck: Check) -> None:
    v = Verification(ck)
    what, seed = f"fit() with the check's knobs ({knob_text(v.knobs)})", v.knobs["seed"]
    cmd = f"`{v.spec['run_command']}`"
    ref = v.reference()
    if not v.require_run(v.command(ck.workspace), f"{cmd} (the repo's defaults) in the workspace"):
        return
    prod = v.production()
    run = v.driver(prod)
    try:  # the probe's report was written in a process agent code ran in
        if not v.require_report(run, what) or not judge(v, run, ref) or not v.compare(run, ref, what):
            return
    except REPORT_ERRORS as exc:
        return unreadable_report(ck, exc, run.res.tail())
    again = v.driver(prod)
    if not v.require_report(again, f"a second run of {what}") or not ck.require(
            digests(run) == digests(again), f"two runs with the same knobs (seed={seed}) drew different "
            f"augmentations ({sum(a != b for a, b in zip(digests(run), digests(again), strict=False))} of "
            f"{len(digests(run))} epochs differ): the run is not reproducible from its seed"):
        return
    v.knobs["seed"] = seed + 7919
    try:
        other = v.driver(prod)
    finally:
        v.knobs["seed"] = seed
    if not v.require_report(other, f"{what} with seed={seed + 7919}") or not ck.require(
            not set(digests(other)) & set(digests(run)), f"a run with seed={seed + 7919} drew the same "
            f"augmentations as the run with seed={seed}: the draws do not follow the configured seed"):
        return
    ck.note(f"{what}: a mask of its own per window and epoch, reproducible, following the seed")
    if v.require_run(v.command(prod), f"{cmd} in {prod}"):
        ck.note(f"{cmd} exits 0 in the workspace and in {prod}")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=(*DRIVER_FILES, "probe.py")))
