"""Hidden check for fsdp_collective_deadlock, on the kit (check_kit): live reference, drawn knobs.

The reference fix and then the workspace run ``train(cfg, rank)`` on 3 or 4 gloo ranks (drawn)
through the kit driver (which opens the process group with a 10 s timeout: a one-sided collective fails
fast) under the same drawn knobs; ``python train.py`` runs from the workspace and from the
production dir. Requires: clean exits within the walls, rank 0's per-epoch history (global
mean losses, sample counts) and the full trained parameters of every rank equal to the
reference run's, replicas identical, each rank training on its own share of the data.
"""

from check_kit import DRIVER_FILES, Verification, knob_text
from check_runtime import Check, hidden


def verify(ck: Check) -> None:
    v = Verification(ck)
    v.standard(what=f"training on {v.world} ranks with the check's knobs ({knob_text(v.knobs)}, 10 s "
                    "process-group timeout)")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=DRIVER_FILES))
