"""Hidden check for missing_eval_mode_bn_stats_drift, on the kit: live reference (it trains the model of the
run without validation whatever the validation period), drawn knobs. Requires clean exits; BatchNorm in
training mode and dropout active on exactly the reference's rows (probe.py); logged metrics, best-checkpoint
scores, trained parameters and buffers equal to the reference's."""

from check_kit import DRIVER_FILES, Verification, knob_text
from check_runtime import Check, hidden

WHAT = {"bn_train_rows": ("BatchNorm layers ran in training mode (batch statistics, running statistics updated) "
                          "on {got} rows, the reference fix on {want} (its training rows before the freeze only)"),
        "dropout_train_rows": "dropout layers were active on {got} rows, the reference fix on {want}"}
MORE = ("layers ran in training mode where the reference's were in eval mode: evaluation data scored in training "
        "mode, or BatchNorm layers frozen by the training recipe switched back to training mode")
FEWER = ("training steps ran with layers in eval mode that the reference trains in training mode (statistics "
         "frozen too early, dropout off), or the layers were changed or removed")


def judge(v: Verification, run, ref) -> bool:
    got, want = run.reports[0].get("probe") or {}, ref.reports[0]["probe"]
    v.ck.evidence.update(layer_rows=got, reference_layer_rows=want)
    for key, text in WHAT.items():
        if (g := got.get(key)) != want[key]:
            v.ck.fail(text.format(got=g, want=want[key]) + ": " + (MORE if isinstance(g, int) and g > want[key] else FEWER))
            return False
    return True


def verify(ck: Check) -> None:
    v = Verification(ck)
    v.standard(judge, what=f"fit() with the check's knobs ({knob_text(v.knobs)})")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=(*DRIVER_FILES, "probe.py")))
