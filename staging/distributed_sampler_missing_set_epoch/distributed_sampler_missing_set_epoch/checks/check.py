"""Hidden check for distributed_sampler_missing_set_epoch, on the kit (check_kit): live reference, drawn knobs.

The reference fix trains ``epochs`` epochs on 3 or 4 gloo ranks (drawn) under the drawn knobs;
``python train.py`` (2 ranks, the repo's defaults) must exit 0 in the workspace. From the
production copy the workspace then trains in two legs, as the cluster runs it: a fresh run of
the first ``split`` epochs (drawn, >= 2), and a run resumed from the ``last.pt`` that leg wrote,
to ``epochs``. What each rank trained on is read from outside (the kit's fingerprints of every
training forward's rows) and judged epoch by epoch against the reference's: the same number of
steps, the ranks' shards disjoint and covering the split as in the reference, no epoch repeating
another's order, and each rank's order equal to the reference's for that epoch. The first leg's
history must equal the reference's first epochs; the resumed leg's results and trained
parameters the reference's. ``python train.py`` must exit 0 in the production dir too.
"""

import secrets
import shutil

from check_kit import DRIVER_FILES, Verification, compare_tree, knob_text
from check_runtime import Check, hidden


def prints(run) -> dict[int, list[list[int]]]:
    return {r: (rep.get("consumed") or {}).get("prints") or [] for r, rep in run.reports.items()}


def epochs(forwards: list, steps: int, count: int) -> list[list]:
    return [forwards[i * steps:(i + 1) * steps] for i in range(count)]


def flat(batches: list[list[int]]) -> list[int]:
    return [x for b in batches for x in b]


def judge_orders(v: Verification, run, ref, first: int, last: int, total: int, what: str) -> bool:
    """Epochs first+1..last of ``run`` (per rank) against the same epochs of the reference run."""
    ck = v.ck
    want_all, got_all = prints(ref), prints(run)
    steps = {r: len(p) // total for r, p in want_all.items()}
    want = {r: epochs(p, steps[r], total) for r, p in want_all.items()}
    got = {}
    for r in sorted(want):
        g, n = got_all.get(r, []), steps[r] * (last - first)
        if len(g) != n:
            ck.evidence["steps"] = {"rank": r, "got": len(g), "expected": n}
            ck.fail(f"{what}: rank {r} ran {len(g)} training steps in epochs {first + 1}-{last}, where the "
                    f"reference fix's rank {r} ran {n} ({steps[r]} per epoch): every epoch must train on the "
                    "rank's whole shard")
            return False
        got[r] = epochs(g, steps[r], last - first)
    for i in range(last - first):
        e = first + i
        mine = {r: set(flat(got[r][i])) for r in got}
        ref_sets = {r: set(flat(want[r][e])) for r in want}
        union, ref_union = set().union(*mine.values()), set().union(*ref_sets.values())
        shared = sum(map(len, mine.values())) - len(union)
        ref_shared = sum(map(len, ref_sets.values())) - len(ref_union)
        ck.evidence.setdefault("epochs", {})[f"{what[:12]} {e + 1}"] = {
            "covered": len(union & ref_union), "of": len(ref_union), "shared": shared, "ref_shared": ref_shared}
        if union != ref_union or shared > ref_shared:
            ck.fail(f"{what}: in epoch {e + 1} the {v.world} ranks together trained on {len(union & ref_union)} "
                    f"of the {len(ref_union)} tickets of the training split, {shared} of them on more than "
                    f"one rank (the reference fix: all of them, {ref_shared} on two ranks, DistributedSampler's "
                    "padding): the ranks' shards must be disjoint and cover the split at any world size")
            return False
        for r in sorted(got):
            order = got[r][i]
            if order == want[r][e]:
                continue
            like = [j for j in range(total) if want[r][j] == order]
            ck.evidence["rank_order"] = {"rank": r, "epoch": e + 1, "order_of_epoch": [j + 1 for j in like]}
            if i and order == got[r][i - 1]:
                why = (f"trained epoch {e + 1} in exactly the order of epoch {e}: the per-epoch shuffling of "
                       "the distributed sampler does not advance")
            elif like:
                why = (f"trained epoch {e + 1} in the order the reference fix uses for epoch {like[0] + 1}: "
                       "the sampler was given the wrong epoch")
            else:
                why = (f"trained epoch {e + 1} in an order that is not DistributedSampler(seed=cfg.seed)'s "
                       f"with set_epoch({e}), length-bucketed (the reference fix's order for that epoch)")
            ck.fail(f"{what}: rank {r} {why}")
            return False
    return True


def judge_history(v: Verification, run, ref, split: int, what: str) -> bool:
    atol, rtol = float(v.spec["verify"].get("atol", 1e-5)), float(v.spec["verify"].get("rtol", 1e-4))
    bad = []
    for r, want in ref.results().items():
        got = (run.reports[r].get("result") or {}).get("history")
        bad += [f"rank {r} {d}" for d in compare_tree(got, want["history"][:split], atol, rtol, "history")]
    if bad:
        v.ck.evidence["differences"] = bad[:20]
        v.ck.fail(f"{what}: the per-epoch history differs from the reference fix's first {split} epochs: "
                  + "; ".join(bad[:5]))
    return not bad


def verify(ck: Check) -> None:
    v = Verification(ck)
    total = v.knobs["epochs"]
    split = secrets.choice(range(2, total))
    out_dir = v.spec["verify"]["set"]["out_dir"]
    ck.evidence["split"] = split
    where = f"on {v.world} ranks with the check's knobs ({knob_text(v.knobs)})"
    ref = v.reference()
    cmd = f"`{v.spec['run_command']}`"
    if not v.require_run(v.command(ck.workspace), f"{cmd} (the repo's defaults) in the workspace"):
        return
    prod = v.production()
    shutil.rmtree(prod / out_dir, ignore_errors=True)
    knobs = v.knobs
    try:
        v.knobs = {**knobs, "epochs": split}
        what = f"a fresh run of {split} epochs {where}"
        run = v.driver(prod)
        if not (v.require_report(run, what) and judge_orders(v, run, ref, 0, split, total, what)
                and judge_history(v, run, ref, split, what)):
            return
        v.knobs = {**knobs, "resume_from": f"{out_dir}/last.pt"}
        what = f"the run resumed from its last.pt after epoch {split}, to epoch {total}, {where}"
        run = v.driver(prod)
    finally:
        v.knobs = knobs
    if not (v.require_report(run, what) and judge_orders(v, run, ref, split, total, total, what)
            and v.compare(run, ref, what)):
        return
    ck.note(f"training {where}, interrupted after epoch {split} and resumed: every rank's per-epoch order, "
            "the results and the trained parameters equal the reference fix's uninterrupted run")
    if v.require_run(v.command(prod), f"{cmd} in {prod}"):
        ck.note(f"{cmd} exits 0 in the workspace and in {prod}")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=DRIVER_FILES))
