"""Hidden check for iterable_dataset_worker_duplication on the kit: live reference, drawn knobs.
Per pass (probe.py): the drawn number of workers ran and each delivered records, no record came
from two workers, the records are exactly the reference run's (the export, each once); then the
kit compares results and trained parameters (full-batch: any correct split gives the same fit).
Last, one pass over an export of a single shard (fewer shards than workers): the same per pass."""

from check_kit import DRIVER_FILES, Verification, knob_text
from check_runtime import Check, hidden


def passes_ok(v: Verification, passes: list, want: list, head: str) -> bool:
    """Each pass against the reference's (``want``: its distinct count and, if known, digest)."""
    ck, workers = v.ck, int(v.knobs.get("num_workers", 0))
    if not ck.require(len(passes) == len(want), f"{head}the training read {len(passes)} passes over a "
                      f"DataLoader, expected {len(want)} (one per epoch, every batch through the loader)"):
        return False
    for n, (p, r) in enumerate(zip(passes, want, strict=True), start=1):
        at, per = f"{head}pass {n}: ", p.get("per_worker") or {}
        if not ck.require(p.get("workers") == workers and not p.get("unreadable"), at + (
                f"{p['unreadable']} batches without a record id tensor" if p.get("unreadable") else
                f"the DataLoader ran with {p.get('workers')} worker processes, the configuration asked for "
                f"{workers} (Config num_workers): loading must stay in the workers")):
            return False
        idle = [w for w in map(str, range(workers)) if not per.get(w)]
        if not ck.require(not idle, f"{at}worker(s) {', '.join(idle)} delivered no records (per worker: "
                          f"{per}): every worker must read its share"):
            return False
        if not ck.require(not p.get("shared"), f"{at}{p.get('shared')} record ids were delivered by more "
                          f"than one worker (per worker: {per}): the workers' shares must be disjoint"):
            return False
        dup, miss = p.get("records", 0) - p.get("distinct", 0), r["distinct"] - p.get("distinct", 0)
        if not ck.require(dup == 0 and miss == 0 and r.get("digest", p.get("digest")) == p.get("digest"),
                          f"{at}the DataLoader delivered {p.get('records')} records, {p.get('distinct')} "
                          f"distinct ({dup} repeats, {max(miss, 0)} of the export's {r['distinct']} never "
                          "delivered): every record of the export exactly once per pass"):
            return False
    return True


def judge(v: Verification, run, ref) -> bool:
    got = run.reports[0].get("probe") or {}
    passes = got.get("passes") or []
    v.ck.evidence["passes"] = [{k: p.get(k) for k in ("workers", "per_worker", "distinct")} for p in passes]
    return v.ck.require(got.get("intact") is True, "the verification's view of the DataLoader was replaced "
                        "or removed by the code under test") and passes_ok(v, passes, ref.reports[0]["probe"]
                                                                           ["passes"], "")


def verify(ck: Check) -> None:
    v = Verification(ck)
    v.standard(judge, what=f"fit() with the check's knobs ({knob_text(v.knobs)})")
    if ck.outcome is not None:
        return
    knobs = dict(v.knobs)
    v.knobs.update(num_shards=1, epochs=1)  # whole-shard splits leave workers idle here
    what = f"fit() over an export of one shard ({knob_text(v.knobs)})"
    try:
        run = v.driver(v.production())
        if v.require_report(run, what):
            passes_ok(v, (run.reports[0].get("probe") or {}).get("passes") or [],
                      [{"distinct": knobs["num_records"]}], f"{what}: ")
    finally:
        v.knobs.clear()
        v.knobs.update(knobs)


if __name__ == "__main__":
    Check.main(hidden(verify, keep=(*DRIVER_FILES, "probe.py")))
