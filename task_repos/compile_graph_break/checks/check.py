"""Hidden check for compile_graph_break.

Passes when the workspace's model compiles to ONE graph and still computes what the
original model computes eagerly, on inputs that drive both sides of the activation limit,
and when the repo's own training loop trains the compiled model to the reference losses.

1. `python train.py` (the repo's own command) exits 0.
2. driver.py (fresh child process, imports the workspace modules, check-owned seeds and
   knobs) measures: torch._dynamo.explain graph / break counts; logits and gradients of the
   model called eagerly and through torch.compile(backend="eager", fullgraph=True) on six
   probe batches (the small ones keep every update, the large ones rescale every update);
   the per-step losses of the repo's train(Config) run through a counting aot_eager backend.
3. Everything is compared here with reference.json (recorded from solution.patch by
   make_reference.py). Comparisons happen in this process, in plain Python.

Agent code runs in the driver's process and can write the driver's report file, so a report
of the wrong shape fails the workspace instead of crashing the check. Children read only the
driver, and no verbatim line of the check's own sources is shown in the verdict.
"""

from __future__ import annotations

import json
import math

from check_runtime import REPORT_ERRORS, Check, hidden, unreadable_report

LOGIT_TOL = 1e-4      # abs + rel, per logit
GRAD_TOL = 1e-4       # relative to the gradient fingerprint's magnitude
LOSS_TOL = 2e-4       # abs + rel, per training step
PROBE_SCALES = (0.02, 0.1, 0.5, 2.0, 8.0, 40.0)   # mirrors drive.PROBE_SCALES (for messages)


def close(a: float, b: float, tol: float) -> bool:
    return math.isfinite(a) and abs(a - b) <= tol + tol * abs(b)


def first_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[:2])[:400] if lines else text[:400]


def compare_outputs(ck: Check, got: dict, ref: dict, what: str) -> None:
    worst, bad = [], []
    for i, (lg, lr) in enumerate(zip(got["logits"], ref["logits"])):
        if len(lg) != len(lr):
            ck.fail(f"{what}: probe batch {i} gave {len(lg)} logits, expected {len(lr)}")
            return
        diff = max((abs(a - b) if math.isfinite(a) else math.inf) for a, b in zip(lg, lr))
        worst.append(round(diff, 7))
        if not all(close(a, b, LOGIT_TOL) for a, b in zip(lg, lr)):
            bad.append(f"batch {i} (input scale {PROBE_SCALES[i]}): max |diff| {diff:.4g}")
    ck.evidence[f"{what} logit max |diff| per probe batch"] = worst
    if bad:
        ck.fail(f"{what}: logits differ from the original model's (tolerance {LOGIT_TOL}) on "
                f"{len(bad)} of {len(worst)} probe batches: " + "; ".join(bad)
                + ". The forward no longer computes what the original computed eagerly")
    if len(got["logits"]) != len(ref["logits"]):
        ck.fail(f"{what}: {len(got['logits'])} probe batches evaluated, expected {len(ref['logits'])}")
    missing = sorted(set(ref["grads"]) - set(got["grads"]))
    if missing:
        ck.fail(f"{what}: parameters missing from the model: {', '.join(missing[:6])}")
        return
    bad = []
    for name, (norm_r, proj_r) in ref["grads"].items():
        norm_g, proj_g = got["grads"][name]
        scale = max(abs(norm_r), 1e-8)
        if not (math.isfinite(norm_g) and abs(norm_g - norm_r) <= GRAD_TOL * scale + 1e-7
                and abs(proj_g - proj_r) <= GRAD_TOL * scale + 1e-7):
            bad.append(f"{name} (|grad| {norm_g:.6g} vs {norm_r:.6g})")
    if bad:
        ck.fail(f"{what}: gradients differ from the original model's for {len(bad)} parameter(s): "
                + "; ".join(bad[:4]))


def verify(ck: Check) -> None:
    ref = json.loads((ck.check_dir / "reference.json").read_text())

    # 1. the repo's own entry point
    run = ck.run(["python", "train.py"], timeout_s=90)
    ck.evidence["train_py"] = {"returncode": run.returncode, "duration_s": run.duration_s}
    if not run.ok and not run.timed_out:
        errors = [ln.strip() for ln in run.output.splitlines()
                  if ln[:1].isalpha() and ("Error" in ln.split(":")[0] or "Unsupported" in ln.split(":")[0]
                                           or "Exception" in ln.split(":")[0])]
        if errors:
            ck.evidence["train_py_error"] = errors[-1][:300]
            ck.fail(f"`python train.py` exited with code {run.returncode}: {errors[-1][:300]}")
        else:
            ck.require_clean_exit(run, "`python train.py`")
    else:
        ck.require_clean_exit(run, "`python train.py`")

    # 2. measurements in a fresh child that imports the workspace
    out_path = ck.scratch / "drive.json"
    res_run = ck.run_driver("driver.py", str(ck.workspace), str(out_path), timeout_s=150)
    ck.evidence["driver_duration_s"] = res_run.duration_s
    if res_run.returncode == 3 and "refusing to report" in res_run.output:
        replaced = res_run.output.split("refusing to report:")[-1].strip().splitlines()[0]
        ck.evidence["replaced_torch_functions"] = replaced
        ck.fail("workspace code replaced torch functions the verifier relies on "
                f"({replaced[:300]}); monkeypatching torch is not a fix")
        return
    if not res_run.ok or not out_path.exists():
        ck.fail("the verifier could not import and run the workspace's model/training code "
                f"(exit {res_run.returncode}); last output:\n{res_run.tail()}",
                ck.child_outcome(res_run) if not res_run.ok else "failed")
        return
    try:
        res = json.loads(out_path.read_text())
        if not isinstance(res, dict):
            raise TypeError("the report is not a JSON object")
        analyse(ck, res, ref)
    except REPORT_ERRORS as exc:
        unreadable_report(ck, exc, res_run.tail())


def analyse(ck: Check, res: dict, ref: dict) -> None:
    """Compare the driver's measurements with the reference."""
    errors = res.get("errors", {})
    for key in ("import", "config"):
        if key in errors:
            ck.fail(f"importing the workspace / building Config failed: {first_line(errors[key])}")
            return
    changed = res.get("dynamo_config_changed_at_import") or {}
    changed_run = res.get("dynamo_config_changed_in_run") or {}
    if changed or changed_run:
        ck.evidence["dynamo_config_changed"] = {**changed, **changed_run}
        ck.note("workspace code changes torch._dynamo.config "
                f"({', '.join(sorted({**changed, **changed_run}))}); the verifier resets it")

    # 3a. one graph, no breaks
    if "explain" in errors:
        ck.fail(f"torch._dynamo.explain(model)(x) raised: {first_line(errors['explain'])}")
    else:
        ex = res["explain"]
        ck.evidence["explain"] = ex
        if ck.require(ex["graph_count"] == 1 and ex["graph_break_count"] == 0,
                      f"torch._dynamo.explain(model)(x) reports {ex['graph_count']} graphs and "
                      f"{ex['graph_break_count']} graph breaks; expected 1 graph, 0 breaks. "
                      f"Break reasons: {ex['break_reasons']}"):
            ck.note("explain: 1 graph, 0 graph breaks")

    # 3b. same numbers eagerly and compiled, on both sides of the limit
    if "eager" in errors:
        ck.fail(f"calling the model eagerly raised: {first_line(errors['eager'])}")
    else:
        compare_outputs(ck, res["eager"], ref["eager"], "eager model")
    if "compiled" in errors:
        ck.fail("torch.compile(model, backend='eager', fullgraph=True) failed: "
                + first_line(errors["compiled"]))
    else:
        compare_outputs(ck, res["compiled"], ref["compiled"], "compiled model (fullgraph=True)")

    # 3c. the repo's training loop trains the compiled model
    if "train" in errors:
        ck.fail(f"train(Config(...)) with the verifier's settings raised: {first_line(errors['train'])}")
        return
    tr, tref = res["train"], ref["train"]
    ck.evidence["train_steps"] = tr["steps"]
    ck.evidence["train_loss_first_last"] = [tr["losses"][:1], tr["losses"][-1:]]
    ck.evidence["val_loss"] = tr["val_loss"]
    ck.evidence["compiled_graph"] = res["train_backend"]
    if not ck.require(tr["steps"] == tref["steps"] and len(tr["losses"]) == len(tref["losses"]),
                      f"train() ran {tr['steps']} steps ({len(tr['losses'])} losses); expected "
                      f"{tref['steps']} with the verifier's Config(epochs, max_steps)"):
        return
    for i, (a, b) in enumerate(zip(tr["losses"], tref["losses"])):
        if not close(a, b, LOSS_TOL):
            ck.fail(f"training loss at step {i + 1}: got {a:.6f}, expected {b:.6f} "
                    f"(tolerance {LOSS_TOL}); the training run no longer matches the original model")
            break
    ck.require(close(tr["val_loss"], tref["val_loss"], LOSS_TOL),
               f"validation loss: got {tr['val_loss']:.6f}, expected {tref['val_loss']:.6f}")
    runs, compiles = res["train_backend"]["runs"], res["train_backend"]["compiles"]
    ck.require(compiles >= 1 and runs >= tr["steps"],
               f"during train() the graph compiled with Config.backend ran {runs} times "
               f"({compiles} compilations) for {tr['steps']} steps: the training loop must "
               f"run the model through torch.compile(backend=cfg.backend, fullgraph=cfg.fullgraph)")
    breaks = res.get("train_graph_breaks") or {}
    ck.require(not breaks, f"graph breaks recorded during train(): {breaks}")
    if ck.outcome is None:
        ck.note(f"train(): {tr['steps']} steps, losses match the reference; compiled graph ran "
                f"{runs} times")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=("driver.py",)))
