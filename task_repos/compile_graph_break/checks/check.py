"""Hidden check for compile_graph_break, on the kit (check_kit): live reference, drawn knobs.

The reference fix and then the workspace run ``train(Config)`` through the kit driver under the
same drawn knobs with a counting aot_eager backend, and probe.py measures the model built from
that config (explain counts, eager and fullgraph-compiled logits and gradients on batches that
drive both sides of the update limit); ``python train.py`` runs from the workspace and from the
production dir. Requires: one graph and no break, the compiled graph run at every training
step, and losses, logits and gradients equal to the reference run's.
"""

from check_kit import DRIVER_FILES, Verification, compare_tree, knob_text
from check_runtime import Check, hidden

TOL = 1e-4


def judge(v: Verification, run, ref) -> bool:
    ck = v.ck
    got, want = run.reports[0].get("probe") or {}, ref.reports[0]["probe"]
    ck.evidence.update(explain=got.get("explain"), backend=got.get("backend"))
    for phase, err in (got.get("errors") or {}).items():
        ck.fail(f"{phase} phase (torch._dynamo.explain / the model called eagerly / torch.compile(model, "
                f"backend='eager', fullgraph=True)) raised: {err[:400]}")
    ex = got.get("explain") or {}
    if "explain" not in (got.get("errors") or {}):
        ck.require(ex.get("graph_count") == 1 and ex.get("graph_break_count") == 0,
                   f"torch._dynamo.explain(model)(x) reports {ex.get('graph_count')} graphs and "
                   f"{ex.get('graph_break_count')} graph breaks; expected 1 graph, 0 breaks. Break "
                   f"reasons: {ex.get('break_reasons')}")
    steps = (run.reports[0].get("result") or {}).get("steps")
    b = got.get("backend") or {}
    ck.require(isinstance(steps, int) and b.get("compiles", 0) >= 1 and b.get("runs", 0) >= steps,
               f"during train() the graph compiled with Config.backend ran {b.get('runs')} times "
               f"({b.get('compiles')} compilations) for {steps} steps: the training loop must run the "
               "model through torch.compile(backend=cfg.backend, fullgraph=cfg.fullgraph)")
    breaks = got.get("graph_breaks")
    ck.require(not breaks, f"graph breaks recorded during train(): {breaks}")
    if ck.outcome is None:
        for phase in ("eager", "compiled"):
            diffs = compare_tree(got.get(phase), want[phase], TOL, TOL)
            ck.require(not diffs, f"{phase} model: logits or gradients differ from the reference fix's model "
                       f"on the probe batches (input scales 0.02 to 40): " + "; ".join(diffs[:4]))
    return ck.outcome is None


def verify(ck: Check) -> None:
    v = Verification(ck)
    v.standard(judge, what=f"train() with the check's knobs ({knob_text(v.knobs)})")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=(*DRIVER_FILES, "probe.py")))
