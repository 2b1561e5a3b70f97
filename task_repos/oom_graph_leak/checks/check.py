"""Hidden check for oom_graph_leak, on the kit (check_kit): live reference, drawn knobs.

The reference fix and then the workspace run ``fit(Config)`` through the kit driver under the
same drawn knobs and the task's 700 MB RLIMIT_DATA (probe.py counts rows and live forward
graphs); ``python train.py`` runs from the workspace and from the production dir. Requires:
clean exits, peak RSS (wait4, from outside) within a margin of the reference run's in the same
verification (so the budget follows the runtime: gVisor counts mapped libraries in RSS),
per-epoch losses equal to the reference's, no returned loss attached to a graph, every
training and validation row evaluated as in the reference run, no graph kept across steps
and none still alive after fit() returns beyond the reference's.
"""

from check_kit import DRIVER_FILES, Verification, knob_text
from check_runtime import Check, hidden

# the fixed trainer peaks at ~500 MB under runc (~800 MB under runsc), the leak needs > 1.2 GB
# more; the margin covers how the peak varies with the fix's idiom and the allocator: a correct
# fix that keeps each batch's (graph-free) loss tensor in a list peaks up to ~200 MB higher in
# most of its runs (heap fragmentation; 2026-12-03, host torch: 472-668 MB over 10 runs)
RSS_OVER_REFERENCE_MB = 300
MAX_LIVE_GRAPHS = 4  # forward graphs alive at once; a correct loop keeps at most 2


def judge(v: Verification, run, ref) -> bool:
    ck, res = v.ck, run.res
    peak, ref_peak = res.peak_rss_mb, ref.res.peak_rss_mb
    ck.evidence.update(peak_rss_mb=peak, reference_peak_rss_mb=ref_peak)
    if not ck.require(peak <= ref_peak + RSS_OVER_REFERENCE_MB,
                      f"peak RSS {peak:.0f} MB (measured from outside) exceeds the budget: the reference "
                      f"fix peaks at {ref_peak:.0f} MB under the same knobs (limit: its peak + "
                      f"{RSS_OVER_REFERENCE_MB} MB)"):
        return False
    got, want = run.reports[0].get("probe") or {}, ref.reports[0]["probe"]
    ck.evidence["forwards"] = got
    for key in ("rows_train", "rows_eval"):
        ck.require(got.get(key) == want[key], f"the model saw {got.get(key)} {key[5:]} rows "
                   f"(forwards in {'train mode' if key == 'rows_train' else 'eval mode or without grad'}), "
                   f"expected {want[key]}: every row of the data set, every epoch")
    for path in run.reports[0].get("attached") or []:
        ck.fail(f"the loss fit() reported at {path} is a tensor still attached to the autograd graph: "
                "it keeps the graph of every batch alive")
    for key, when in (("max_live_train", "during training"), ("max_live_eval", "during validation"),
                      ("live_after_fit", "after fit() returned")):
        ck.require(isinstance(got.get(key), int) and got[key] <= MAX_LIVE_GRAPHS,
                   f"{when} {got.get(key)} forward graphs were alive at once (at most {MAX_LIVE_GRAPHS}: "
                   "the graph of each step must be released once the step is done)")
    kept, ref_kept = got.get("live_after_fit"), want["live_after_fit"]
    ck.require(not isinstance(kept, int) or kept <= ref_kept,
               f"after fit() returned {kept} forward graphs were still alive (the reference fix keeps "
               f"{ref_kept}): a graph kept past its epoch adds memory with every epoch")
    return ck.outcome is None


def explain(run) -> str | None:
    """Why fit() ran out of memory, when it kept graphs alive until it did."""
    got = (run.reports.get(0) or {}).get("probe") or {}
    for key, when in (("max_live_train", "training"), ("max_live_eval", "validation")):
        n = got.get(key)
        if isinstance(n, int) and n > MAX_LIVE_GRAPHS:
            return (f"when memory ran out, {n} forward graphs of {when} were alive at once (at most "
                    f"{MAX_LIVE_GRAPHS}: the graph of each step must be released once the step is done, "
                    "e.g. a loss accumulated as a tensor keeps every step's graph)")
    return None


def verify(ck: Check) -> None:
    v = Verification(ck)
    v.standard(judge, what=f"fit() with the check's knobs ({knob_text(v.knobs)}, 700 MB data cap)",
               explain=explain)


if __name__ == "__main__":
    Check.main(hidden(verify, keep=(*DRIVER_FILES, "probe.py")))
