"""Hidden check for compile_recompile_storm, on the kit (check_kit): live reference, drawn knobs.

The reference fix and then the workspace run ``fit(TrainConfig)`` through the kit driver under the
same drawn knobs (lengths, sizes, seeds: other length distributions and more validation batches
than the repo's defaults) with probe.py's counting backend; ``python train.py`` runs from the
workspace and from the production dir. Requires: at most BUDGET graphs compiled in the whole run
(training and validation), the compiled graph run for every forward the reference ran compiled,
no more padded positions in training than the reference's pad-to-longest batches (x PAD_SLACK),
and losses, metrics and trained parameters equal to the reference run's.
"""

from check_kit import DRIVER_FILES, Verification, knob_text
from check_runtime import Check, hidden

BUDGET = 6  # graphs per run, train + validation (the incident's budget)
PAD_SLACK = 1.3  # padded training positions over the reference's


def _counts(run) -> dict:
    rep = run.reports.get(0) or {}
    return rep.get("probe") or {}


def explain(run) -> str | None:
    got = _counts(run)
    if got.get("compiles"):
        return (f"before the error dynamo had compiled {got['compiles']} graph(s) for "
                f"{got.get('distinct_lengths')} distinct training sequence lengths")
    return None


def judge(v: Verification, run, ref) -> bool:
    ck, got, want = v.ck, _counts(run), _counts(ref)
    ck.evidence.update(probe=got, reference_probe=want)
    n, lengths = got.get("compiles"), got.get("distinct_lengths")
    if not ck.require(isinstance(n, int) and n <= BUDGET,
                      f"the run compiled {n} graphs for {lengths} distinct training sequence lengths "
                      f"(budget {BUDGET} for the whole run, training and validation): the number of graphs "
                      "must not grow with the number of distinct lengths"):
        return False
    runs, ref_runs = got.get("runs") or 0, want.get("runs") or 0
    if not ck.require(runs >= ref_runs and n >= 1,
                      f"the compiled graph ran {runs} times where the reference fix's ran {ref_runs} times "
                      "(every training and validation forward): the model must keep running through "
                      "torch.compile(model, backend=cfg.compile_backend, fullgraph=cfg.fullgraph)"):
        return False
    pos, ref_pos = got.get("positions") or 0, want.get("positions") or 1
    ck.evidence["padding_ratio"] = round(pos / ref_pos, 4)
    return ck.require(0 < pos <= PAD_SLACK * ref_pos,
                      f"training fed the model {pos} padded positions (batch x length) where padding each "
                      f"batch to its longest session feeds {ref_pos} ({pos / ref_pos:.2f}x; at most "
                      f"{PAD_SLACK:.2f}x): padding to a fixed or coarse length multiplies the compute")


def verify(ck: Check) -> None:
    v = Verification(ck)
    v.standard(judge, what=f"fit() with the check's knobs ({knob_text(v.knobs)})", explain=explain)


if __name__ == "__main__":
    Check.main(hidden(verify, keep=(*DRIVER_FILES, "probe.py")))
