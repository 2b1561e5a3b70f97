"""Hidden check for inplace_op_breaks_autograd: the kit's standard verification. Reference fix and workspace
run fit() under the same drawn knobs (seeds, relu/tanh, gate floor, dropout, sizes, lr); losses, accuracies
and every trained parameter (gate layers too) must equal the reference's; `python train.py` exits 0."""

from check_kit import DRIVER_FILES, Verification, knob_text
from check_runtime import Check, hidden


def verify(ck: Check) -> None:
    v = Verification(ck)
    v.standard(what=f"fit() with the check's knobs ({knob_text(v.knobs)})")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=DRIVER_FILES))
