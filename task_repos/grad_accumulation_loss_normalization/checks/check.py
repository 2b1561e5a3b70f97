"""grad_accumulation_loss_normalization's check on the kit: the reference fix and the workspace run
``fit(cfg)`` under the same drawn knobs (accumulation steps never divide an epoch evenly), from the
workspace and the production dir. Required: clean exits, the reference's micro-batches per optimizer
step (probe.py), its validation losses and every trained parameter equal."""

from check_kit import DRIVER_FILES, Verification, knob_text
from check_runtime import Check, hidden


def _shape(p: dict) -> str:
    rows, marks = p.get("forward_rows") or [], p.get("forwards_at_step") or []
    return f"{len(rows)} forwards of up to {max(rows, default=0)} sessions, {len(marks)} optimizer steps"


def _windows(p: dict) -> list:
    rows, cuts = p.get("forward_rows") or [], [0, *(p.get("forwards_at_step") or [])]
    return [sorted(rows[a:b]) for a, b in zip(cuts, [*cuts[1:], len(rows)], strict=True)]


def judge(v: Verification, run, ref) -> bool:
    got, want = run.reports[0].get("probe") or {}, ref.reports[0]["probe"]
    v.ck.evidence["feeding"] = {"got": _shape(got), "reference": _shape(want)}
    same = _windows(got) == _windows(want)  # the same micro-batches per step (in any order)
    return v.ck.require(
        same,
        f"training fed the model {_shape(got)}, expected {_shape(want)}: micro-batches of micro_batch_size="
        f"{v.knobs.get('micro_batch_size')} sessions, every session of every epoch once, one optimizer step "
        "per accum_steps micro-batches and one for the epoch's last, shorter window (as the full-batch run "
        "steps on its last batch)")


def verify(ck: Check) -> None:
    v = Verification(ck)
    v.standard(judge, what=f"fit() with the check's knobs ({knob_text(v.knobs)})")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=(*DRIVER_FILES, "probe.py")))
