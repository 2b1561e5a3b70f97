"""masked_deviance_nan_grad's check on the kit: the reference fix and the workspace run ``fit(cfg)``
(a bagged ensemble) under the same drawn knobs, chosen so that binomial thinning produces zero-unit
rows in every run and the holdout monitor evaluates during training. Required: clean exits of
``python train.py`` (its regression gate included) in the workspace and the production dir; every
member trains to the end; each member's monitored holdout curve, holdout deviance and every trained
parameter equal the reference's."""

from check_kit import DRIVER_FILES, Verification, knob_text
from check_runtime import Check, hidden


def judge(v: Verification, run, ref) -> bool:
    got = (run.reports[0].get("result") or {}).get("members") or []
    want = ref.results()[0]["members"]
    ck = v.ck
    ck.evidence["members"] = {"got": len(got), "reference": len(want)}
    if not ck.require(len(got) == len(want), f"fit() returned {len(got)} ensemble members, expected "
                      f"{len(want)} (members={v.knobs.get('members')}): every member must be trained"):
        return False
    for k, (g, w) in enumerate(zip(got, want)):
        steps, monitor = g.get("steps"), g.get("monitor") or []
        if not ck.require(steps == w["steps"], f"member {k} ran {steps} optimizer steps, expected {w['steps']} "
                          f"({v.knobs.get('epochs')} epochs of its bag): no step may be skipped or added"):
            return False
        if not ck.require(len(monitor) == len(w["monitor"]), f"member {k}'s holdout monitor reported "
                          f"{len(monitor)} values, expected {len(w['monitor'])} (eval_every="
                          f"{v.knobs.get('eval_every')}): the monitor must keep evaluating during training"):
            return False
    return True


def verify(ck: Check) -> None:
    v = Verification(ck)
    v.standard(judge, what=f"fit() with the check's knobs ({knob_text(v.knobs)})")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=DRIVER_FILES))
