"""Hidden check for missing_eval_mode_bn_stats_drift, on the kit: live reference, drawn knobs
(seeds, sizes, epochs, validation period, dropout, width). The reference fix trains the same model
whatever the validation period, so equality with it is the incident's requirement. Requires: clean
exits; BatchNorm in training mode and dropout active on exactly the reference's rows (probe.py);
logged metrics, best-checkpoint scores, trained parameters and buffers equal to the reference's."""

from check_kit import DRIVER_FILES, Verification, knob_text
from check_runtime import Check, hidden

WHAT = {
    "bn_train_rows": ("BatchNorm layers ran in training mode (batch statistics, running statistics "
                      "updated) on {got} rows, the reference fix on {want} (its training rows only)"),
    "dropout_train_rows": "dropout layers were active on {got} rows, the reference fix on {want}",
}
MORE = ("the extra rows are evaluation data: evaluation ran the model in training mode and changed it "
        "(running statistics absorb the evaluation rows, dropout masks advance the global RNG)")
FEWER = ("training steps ran with the model in eval mode (running statistics frozen, dropout off), "
         "or the layers were changed or removed")


def judge(v: Verification, run, ref) -> bool:
    ck = v.ck
    got, want = run.reports[0].get("probe") or {}, ref.reports[0]["probe"]
    ck.evidence["layer_rows"] = got
    ck.evidence["reference_layer_rows"] = want
    for key, text in WHAT.items():
        g = got.get(key)
        if g != want[key]:
            why = MORE if isinstance(g, int) and g > want[key] else FEWER
            ck.fail(text.format(got=g, want=want[key]) + f": {why}")
            return False
    return True


def verify(ck: Check) -> None:
    v = Verification(ck)
    v.standard(judge, what=f"fit() with the check's knobs ({knob_text(v.knobs)})")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=(*DRIVER_FILES, "probe.py")))
