"""Hidden check for iterable_dataset_worker_duplication on the kit: live reference, drawn knobs.
Per pass (probe.py): the drawn number of workers ran and each delivered records, no record came
from two workers, the records are exactly the reference run's (the export, each once); then the
kit compares results and trained parameters (full-batch: any correct split gives the same fit)."""

from check_kit import DRIVER_FILES, Verification, knob_text
from check_runtime import Check, hidden


def judge(v: Verification, run, ref) -> bool:
    ck = v.ck
    got, want = run.reports[0].get("probe") or {}, ref.reports[0]["probe"]
    passes, ref_passes = got.get("passes") or [], want["passes"]
    workers = int(v.knobs.get("num_workers", 0))
    ck.evidence["passes"] = [{k: p.get(k) for k in ("workers", "per_worker", "records", "distinct", "shared")}
                             for p in passes[:12]]
    if not ck.require(got.get("intact") is True, "the verification's view of the DataLoader was replaced "
                      "or removed by the code under test"):
        return False
    if not ck.require(len(passes) == len(ref_passes), f"the training read {len(passes)} passes over a "
                      f"DataLoader, expected {len(ref_passes)} (one per epoch, every batch through the loader)"):
        return False
    for n, (p, r) in enumerate(zip(passes, ref_passes, strict=True), start=1):
        expected = r["distinct"]
        if not ck.require(p.get("workers") == workers and not p.get("unreadable"),
                          f"pass {n}: the DataLoader ran with {p.get('workers')} worker processes, the "
                          f"configuration asked for {workers} (Config num_workers): loading must stay in "
                          "the workers" if not p.get("unreadable") else
                          f"pass {n}: {p['unreadable']} batches without a record id tensor"):
            return False
        idle = [w for w in map(str, range(workers)) if not (p.get("per_worker") or {}).get(w)]
        if not ck.require(not idle, f"pass {n}: worker(s) {', '.join(idle)} delivered no records "
                          f"(per worker: {p.get('per_worker')}): every worker must read its share"):
            return False
        if not ck.require(not p.get("shared"), f"pass {n}: {p.get('shared')} record ids were delivered by "
                          f"more than one worker (per worker: {p.get('per_worker')}): the workers' shares "
                          "must be disjoint"):
            return False
        dup = p.get("records", 0) - p.get("distinct", 0)
        miss = expected - p.get("distinct", 0)
        if not ck.require(dup == 0 and miss == 0 and p.get("digest") == r["digest"],
                          f"pass {n}: the DataLoader delivered {p.get('records')} records, {p.get('distinct')} "
                          f"distinct ({dup} repeats, {max(miss, 0)} of the export's {expected} never "
                          "delivered): every record of the export exactly once per pass"):
            return False
    return True


def verify(ck: Check) -> None:
    v = Verification(ck)
    v.standard(judge, what=f"fit() with the check's knobs ({knob_text(v.knobs)})")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=(*DRIVER_FILES, "probe.py")))
