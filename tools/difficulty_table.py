"""Turn difficulty-measurement logs (shared tools/play.py JSONL, one file per episode) into the
rows of docs/difficulty.md, and each episode's final workspace into a patch by another hand.

    python tools/difficulty_table.py --key KEY.json --patches-out DIR LOG.jsonl ...

KEY.json maps the blind ids the players were given to ``family@N``. Per episode: family, variant,
solved (the verdict passed), steps / budget, score, wall time (first request to the last reply).
The final workspace is the episode's last ``view_git_diff`` when nothing but the submit came after
it (players often edit through shell commands); otherwise it is rebuilt by replaying the episode's
successful edits on the variant's repo (``--task-root``), with a warning when shell commands ran
after the last edit. Written as ``DIR/<family>/<player>_<episode>_<solved|unsolved>.patch``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sandbox_env.suite.tasks import TaskRegistry  # noqa: E402
from sandbox_env.workspace import Workspace, unified_diff  # noqa: E402


def episode(path: Path, key: dict[str, str]) -> dict:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    reset = next(r for r in rows if r["path"] == "/reset")
    blind = reset["body"]["task"]
    address = key.get(blind, blind)
    last = rows[-1]
    obs = None
    for r in rows:
        o = (r.get("reply") or {}).get("observation")
        if o:
            obs = o
    verdict = obs.get("verdict") if obs else None
    steps = [r for r in rows if r["path"] == "/step" and r.get("status") == 200]
    actions = [r["body"].get("action", r["body"]) for r in steps]
    edits = [a for r, a in zip(steps, actions, strict=True) if a.get("action_type") == "edit_file"
             and not ((r.get("reply") or {}).get("observation") or {}).get("last_action_error")]
    kinds = [a.get("action_type") for a in actions]
    while kinds and kinds[-1] == "submit_fix":
        kinds.pop()
    final_diff = None
    if kinds and kinds[-1] == "view_git_diff":
        seen = (steps[len(kinds) - 1].get("reply") or {}).get("observation") or {}
        final_diff = seen.get("terminal_output")
    last_edit = max((i for i, k in enumerate(kinds) if k == "edit_file"), default=-1)
    return {"log": path, "address": address, "final_diff": final_diff,
            "bash_after_edits": "execute_bash" in kinds[last_edit + 1:], "family": address.partition("@")[0],
            "variant": address.partition("@")[2], "steps": obs["step_number"] if obs else 0,
            "budget": obs["max_steps"] if obs else 0, "done": bool(obs and obs["done"]),
            "solved": bool(verdict and verdict.get("passed")), "score": obs.get("score") if obs else None,
            "wall_s": round(last["t"] + last.get("dt", 0) - rows[0]["t"], 1), "edits": edits}


def final_patch(ep: dict, registry: TaskRegistry) -> str:
    if ep["final_diff"] is not None:
        return ep["final_diff"] if ep["final_diff"].endswith("\n") else ep["final_diff"] + "\n"
    if ep["bash_after_edits"]:
        print(f"warning: {ep['log']}: shell commands ran after the last edit and no diff was viewed "
              "after them; the patch holds the replayed edits only", file=sys.stderr)
    task = registry.get(ep["address"])
    ws = Workspace(task.repo_files())
    for e in ep["edits"]:
        ws.edit(e["filename"], e.get("old_str", ""), e.get("new_str", ""))
    return unified_diff(task.repo_files(), ws.files)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("logs", nargs="+", type=Path)
    ap.add_argument("--key", type=Path, required=True)
    ap.add_argument("--task-root", type=Path, default=ROOT / "task_repos")
    ap.add_argument("--patches-out", type=Path)
    args = ap.parse_args()
    key = json.loads(args.key.read_text())
    eps = [episode(p, key) for p in args.logs]
    print("| family | variant | solved | steps / budget | score | wall (s) | log |")
    print("|---|---:|:---:|---:|---:|---:|---|")
    for e in sorted(eps, key=lambda e: (e["family"], e["variant"])):
        score = f"{e['score']:.3f}" if e["score"] is not None else "-"
        print(f"| {e['family']} | {e['variant']} | {'yes' if e['solved'] else 'no'} | {e['steps']} / "
              f"{e['budget']} | {score} | {e['wall_s']:.0f} | {e['log'].parent.name}/{e['log'].name} |")
    print()
    print("| family | episodes | solved | median steps | median score |")
    print("|---|---:|---:|---:|---:|")
    for fam in sorted({e["family"] for e in eps}):
        fe = [e for e in eps if e["family"] == fam]
        scores = [e["score"] for e in fe if e["score"] is not None]
        print(f"| {fam} | {len(fe)} | {sum(e['solved'] for e in fe)}/{len(fe)} | "
              f"{statistics.median(e['steps'] for e in fe):g} | "
              f"{statistics.median(scores) if scores else float('nan'):.3f} |")
    if args.patches_out:
        registry = TaskRegistry(args.task_root, allow_uncertified=True)
        for e in eps:
            out = args.patches_out / e["family"]
            out.mkdir(parents=True, exist_ok=True)
            name = f"{e['log'].parent.name}_{e['log'].stem}_{'solved' if e['solved'] else 'unsolved'}.patch"
            (out / name).write_text(final_patch(e, registry))


if __name__ == "__main__":
    main()
