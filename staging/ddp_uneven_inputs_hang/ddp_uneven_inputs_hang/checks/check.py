"""Hidden check for ddp_uneven_inputs_hang, on the kit (check_kit): live reference, drawn knobs.

The reference fix and then the workspace run ``train(cfg, rank, world_size)`` on 3 or 4 gloo
ranks (drawn) through the kit driver under the same drawn knobs (seeds, number and sizes of the
files, batch size, epochs, model, learning rate); ``python train.py`` (2 ranks) runs from the
workspace and from the production dir. The process group's timeout is the check's (10 s).
Requires: every rank finishes; every training row the reference run trained on reached the model
on some rank (no drop_last, no truncation to the shortest rank); each rank trains on its own share
(no replicated work); epoch metrics, labelled-row counts and trained parameters equal the
reference's (no duplicated rows, the step's gradient is the mean over the step's labelled rows).
"""

from collections import Counter

from check_kit import DRIVER_FILES, Verification, knob_text
from check_runtime import Check, hidden


def rows_seen(run) -> Counter:
    """How often each row fingerprint was given to a top-level training forward, over all ranks."""
    return Counter(x for rep in run.reports.values() for fwd in (rep.get("consumed") or {}).get("prints") or []
                   for x in fwd)


def judge(v: Verification, run, ref) -> bool:
    # the training rows: every epoch gives each of them to the model once, so in the reference run
    # they recur once per epoch (other forwards' first tensors, the loss's predictions, do not)
    epochs = int(v.knobs.get("epochs", 1))
    want, got = [x for x, n in rows_seen(ref).items() if n >= epochs], rows_seen(run)
    missing = sum(1 for x in want if got[x] < epochs)
    v.ck.evidence["rows_skipped_in_some_epoch"] = missing
    return v.ck.require(
        not missing,
        f"{missing} of the {len(want)} training rows were not given to the model in every one of the "
        f"{epochs} epochs with {v.world} ranks: every row of every rank's files must be trained on "
        "in each epoch (no drop_last, no truncation to the rank with the fewest batches)")


def verify(ck: Check) -> None:
    v = Verification(ck)
    v.standard(judge, what=f"training on {v.world} ranks with the check's knobs ({knob_text(v.knobs)})")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=DRIVER_FILES))
