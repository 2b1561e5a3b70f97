"""Hidden check for rank0_eval_through_ddp_wrapper_hang, on the kit: live reference, drawn knobs, 3 or 4 ranks.

``train(cfg, rank, world_size)`` of the reference fix and of the workspace under the same knobs; ``python
train.py`` (2 ranks, its release gate) from the workspace and the production dir. Requires clean exits; the
per-epoch metrics (they drive the LR schedule), every parameter and BatchNorm buffer equal to the reference's;
identical replicas; each rank its own share; the rows all ranks ran through eval / no-grad forwards
(probe.py) no more than the reference's one pass per epoch (plus a sharded evaluation's padding).
"""

from check_kit import DRIVER_FILES, Verification, knob_text
from check_runtime import Check, hidden

SLACK = 1.25


def judge(v: Verification, run, ref) -> bool:
    got = {r: (rep.get("probe") or {}).get("eval_rows", 0) for r, rep in run.reports.items()}
    want = {r: rep["probe"]["eval_rows"] for r, rep in ref.reports.items()}
    v.ck.evidence.update(eval_rows_per_rank=got, reference_eval_rows_per_rank=want)
    total, ref_total = sum(got.values()), sum(want.values())
    if not isinstance(total, int) or total > ref_total * SLACK + 4 * v.world:
        v.ck.fail(f"the {v.world} ranks together ran {total} rows through evaluation forwards where the reference "
                  f"fix ran {ref_total} (one pass over the validation split per epoch): validation must not be "
                  "repeated on every rank (each rank evaluating the whole split multiplies its cost by the "
                  "world size); evaluate on one rank, or give each rank its own part of the split")
        return False
    return True


def verify(ck: Check) -> None:
    v = Verification(ck)
    v.standard(judge, what=f"training on {v.world} ranks with the check's knobs ({knob_text(v.knobs)})")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=(*DRIVER_FILES, "probe.py")))
