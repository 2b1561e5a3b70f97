"""Hidden check for oom_graph_leak.

1. Runs checks/driver.py in a child under RLIMIT_DATA: it calls the workspace's
   ``train.fit(Config(...))`` with the check's seed and sizes and measures, from module
   hooks, the rows seen in train/eval mode and how many forward graphs stay alive.
2. Requires: clean exit, peak RSS (wait4, from outside) under budget, per-epoch validation
   and training losses equal to the reference, every validation row evaluated, no autograd
   graph retained across steps, reported losses detached from the graph.
3. Runs the task's own command (``python train.py``) under the same cap: must exit 0.

Agent code runs in the driver's process and can write the driver's report file, so the report
is validated before use (a forged or corrupted report fails the workspace, it never crashes
the check). Children read only the driver, and no verbatim line of the check's own sources is
shown in the verdict.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from check_runtime import Check, ChildResult, hidden

import knobs

# RLIMIT_DATA, then exec the real command. Isolated mode (-I): the trampoline runs in the
# workspace, whose files (a resource.py, ...) must not shadow the modules it imports.
_TRAMPOLINE = ("import os, resource, sys; cap = int(sys.argv[1]); "
               "resource.setrlimit(resource.RLIMIT_DATA, (cap, cap)); os.execvp(sys.argv[2], sys.argv[2:])")
REPORT_INTS = ("rows_eval", "rows_train", "max_live_graphs_train", "max_live_graphs_eval",
               "live_graphs_after_fit", "eval_rows_with_grad")


def capped(argv: list[str]) -> list[str]:
    """``argv`` (``python`` = this interpreter) under the check's RLIMIT_DATA."""
    if argv[0] in ("python", "python3"):
        argv = [sys.executable, *argv[1:]]
    cap = str(knobs.DATA_CAP_MB * 1024 * 1024)
    return [sys.executable, "-I", "-S", "-c", _TRAMPOLINE, cap, *argv]


def read_report(path: Path) -> dict | str:
    """The driver's report, checked for shape; a string says what is wrong with it."""
    try:
        got = json.loads(path.read_text())
        if not isinstance(got, dict) or not isinstance(got.get("epochs"), list):
            raise TypeError("no list of epochs")
        for e in got["epochs"]:
            for key in ("train_loss", "val_loss"):
                d = e[key]
                if not isinstance(d, dict) or not isinstance(d.get("attached"), bool):
                    raise TypeError(f"{key} is not a measured loss")
                if d["value"] is not None and (not isinstance(d["value"], (int, float))
                                               or isinstance(d["value"], bool)):
                    raise TypeError(f"{key} value is not a number")
        for key in REPORT_INTS:
            if not isinstance(got[key], int) or isinstance(got[key], bool):
                raise TypeError(f"{key} is not a count")
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    return got


def fmt(x) -> str:
    return "missing" if x is None else f"{x:.6f}"


def workspace_frame(ck: Check, res: ChildResult) -> str | None:
    """The innermost traceback frames that lie in the workspace, as 'file:line in func: code'."""
    lines = res.output.splitlines()
    found: list[str] = []
    pat = re.compile(r'\s*File "(.+)", line (\d+), in (\S+)')
    for i, line in enumerate(lines):
        m = pat.match(line)
        if m and m.group(1).startswith(str(ck.workspace)):
            rel = m.group(1)[len(str(ck.workspace)) + 1:]
            code = lines[i + 1].strip() if i + 1 < len(lines) else ""
            found.append(f"{rel}:{m.group(2)} in {m.group(3)}: {code}")
    return " -> ".join(found[-4:]) or None


def require_ok(ck: Check, res: ChildResult, what: str) -> bool:
    if ck.require_clean_exit(res, what):
        return True
    loc = workspace_frame(ck, res)
    if loc:
        ck.note(f"the error was raised from {loc}")
    return False


def verify(ck: Check) -> None:
    ref = json.loads((ck.check_dir / "reference.json").read_text())
    cfg = knobs.CONFIG
    out_path = ck.scratch / "driver_result.json"
    ck.evidence["data_cap_mb"] = knobs.DATA_CAP_MB
    ck.evidence["rss_budget_mb"] = knobs.RSS_BUDGET_MB

    driver = (ck.driver_dir or ck.check_dir) / "driver.py"
    res = ck.run(capped(["python", str(driver), str(ck.workspace), str(out_path), json.dumps(cfg)]),
                 timeout_s=knobs.DRIVER_TIMEOUT_S)
    ck.evidence["fit_peak_rss_mb"] = res.peak_rss_mb
    ck.evidence["fit_duration_s"] = res.duration_s
    ck.evidence["fit_returncode"] = res.returncode

    if res.returncode == 3 and "DRIVER:" in res.output:
        line = next(l for l in res.output.splitlines() if l.startswith("DRIVER:"))
        ck.fail("training could not be verified: " + line[len("DRIVER: "):]
                + " (torch itself must not be patched)")
        return
    if not require_ok(ck, res, f"training (fit with seed {cfg['seed']}, "
                                      f"{cfg['epochs']} epochs, {knobs.DATA_CAP_MB} MB data cap)"):
        return
    ck.require(res.peak_rss_mb <= knobs.RSS_BUDGET_MB,
               f"peak RSS {res.peak_rss_mb:.0f} MB exceeds the {knobs.RSS_BUDGET_MB} MB budget "
               f"(the fixed trainer peaks at ~{ref['fixed_peak_rss_mb']:.0f} MB)")
    if not out_path.exists():
        ck.fail("fit() returned no history: the training process exited before reporting "
                f"results; last output:\n{res.tail()}")
        return
    got = read_report(out_path)
    if isinstance(got, str):
        ck.fail("the training process left an unreadable report of its run (" + got + "): "
                "the driver's result file was overwritten or cut short by the code under test; "
                f"last output:\n{res.tail()}")
        return
    epochs = got["epochs"]
    val = [e["val_loss"]["value"] for e in epochs]
    train = [e["train_loss"]["value"] for e in epochs]
    ck.evidence.update({
        "val_losses": val, "train_losses": train,
        "ref_val_losses": ref["val_losses"], "ref_train_losses": ref["train_losses"],
        "rows_eval": got["rows_eval"], "rows_train": got["rows_train"],
        "max_live_graphs_train": got["max_live_graphs_train"],
        "max_live_graphs_eval": got["max_live_graphs_eval"],
        "live_graphs_after_fit": got["live_graphs_after_fit"],
        "eval_rows_with_grad": got["eval_rows_with_grad"],
    })

    if not ck.require(len(epochs) == len(ref["val_losses"]),
                      f"fit() reported {len(epochs)} epochs, expected {len(ref['val_losses'])}"):
        return
    for i, (g, r) in enumerate(zip(val, ref["val_losses"]), start=1):
        ck.require(g is not None and abs(g - r) <= knobs.VAL_TOL,
                   f"val loss epoch {i}: got {fmt(g)}, expected {r:.6f}")
    for i, (g, r) in enumerate(zip(train, ref["train_losses"]), start=1):
        ck.require(g is not None and abs(g - r) <= knobs.TRAIN_TOL,
                   f"train loss epoch {i}: got {fmt(g)}, expected {r:.6f}")

    want_eval = cfg["epochs"] * cfg["n_val"]
    want_train = cfg["epochs"] * cfg["n_train"]
    ck.require(got["rows_eval"] == want_eval,
               f"the model evaluated {got['rows_eval']} validation rows (forwards in eval mode or without grad) over "
               f"{cfg['epochs']} epochs, expected {want_eval} (every row of the validation set, "
               "every epoch)")
    ck.require(got["rows_train"] == want_train,
               f"the model saw {got['rows_train']} training rows over {cfg['epochs']} epochs, "
               f"expected {want_train}")

    for i, e in enumerate(epochs, start=1):
        for key in ("train_loss", "val_loss"):
            d = e[key]
            ck.require(not d["attached"],
                       f"{key} reported for epoch {i} is a tensor still attached to the autograd "
                       f"graph (grad_fn={d['grad_fn']}): it keeps the graph of every batch alive")
    live_train = got["max_live_graphs_train"]
    live_eval = got["max_live_graphs_eval"]
    live_end = got["live_graphs_after_fit"]
    ck.require(live_train <= knobs.MAX_LIVE_GRAPHS,
               f"during training up to {live_train} forward graphs were alive at once "
               f"(expected at most {knobs.MAX_LIVE_GRAPHS}: the graph of each step must be "
               "released once the step is done)")
    ck.require(live_eval <= knobs.MAX_LIVE_GRAPHS,
               f"during validation up to {live_eval} forward graphs were alive at once "
               f"(expected at most {knobs.MAX_LIVE_GRAPHS})")
    ck.require(live_end <= knobs.MAX_LIVE_GRAPHS,
               f"{live_end} forward graphs were still alive after fit() returned "
               f"(expected at most {knobs.MAX_LIVE_GRAPHS})")
    if ck.outcome is not None:
        return
    ck.note(f"fit: {cfg['epochs']} epochs under a {knobs.DATA_CAP_MB} MB data cap, peak RSS "
            f"{res.peak_rss_mb:.0f} MB, val losses {', '.join(f'{v:.4f}' for v in val)} match the "
            f"reference, {got['rows_eval']} validation rows evaluated, at most "
            f"{max(live_train, live_eval)} forward graphs alive at once")

    run = ck.run(capped(["python", "train.py"]), timeout_s=knobs.RUN_TIMEOUT_S)
    ck.evidence["run_command_peak_rss_mb"] = run.peak_rss_mb
    ck.evidence["run_command_duration_s"] = run.duration_s
    if require_ok(ck, run, f"`python train.py` (under the {knobs.DATA_CAP_MB} MB data cap)"):
        ck.require(run.peak_rss_mb <= knobs.RSS_BUDGET_MB,
                   f"`python train.py` peak RSS {run.peak_rss_mb:.0f} MB exceeds the "
                   f"{knobs.RSS_BUDGET_MB} MB budget")
        ck.note(f"`python train.py` exited 0, peak RSS {run.peak_rss_mb:.0f} MB")


if __name__ == "__main__":
    Check.main(hidden(verify, keep=("driver.py",)))
