"""Hidden check for ddp_gradient_hang, on the kit (check_kit): live reference, drawn knobs.

The reference fix and then the workspace run ``train(cfg, rank, world_size)`` on 3 or 4 gloo
ranks (drawn) through the kit driver under the same drawn knobs (seed, data seed, steps,
auxiliary period, learning rate, sizes); ``python train.py`` runs from the workspace and from
the production dir.
Requires: clean exits, per-step losses and every trained parameter (the reconstruction head's
included) equal to the reference run's, replicas identical across ranks, each rank
training on its own share of the data.
"""

from check_kit import DRIVER_FILES, Verification, knob_text
from check_runtime import Check, hidden


def verify(ck: Check) -> None:
    v = Verification(ck)
    v.standard(what=f"training on {v.world} ranks with the check's knobs ({knob_text(v.knobs)})")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=DRIVER_FILES))
