"""Benchmark: oracle episodes per core-hour, this checkout against others, side by side.

Each side (this checkout and every ``--vs NAME=DIR``, e.g. a ``git worktree`` of an older main)
plays the same evaluation, ``sandbox-env eval --agent oracle --split test`` on the named families,
into a fresh directory; rounds alternate the sides' order, so load drifts hit every side alike.
Episodes per core-hour = episodes / (the run's wall hours x the CPU count), from the run's own
record (``runs.jsonl``), and where an episode's time goes (reset, each action type, the
verification: means over the side's episodes, from ``episodes.jsonl``). Each round gives every
side a fresh reference bank directory (a cold bank: every check's first draw runs the reference
fix), then, with ``--warm``, plays the same evaluation again on that bank (the steady state of a
long evaluation or of RL).

    python bench/eval_throughput.py --vs main=/tmp/bench-main --mode docker \\
        --task compile_graph_break --task ddp_gradient_hang [--rounds 1] [--warm]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def play(root: Path, args: argparse.Namespace, out: Path, bank: Path) -> tuple[int, float, dict[str, float]]:
    """One oracle evaluation with the code of ``root``: (episodes played, wall seconds, the mean
    seconds of an episode per phase)."""
    env = {**os.environ, "PYTHONPATH": str(root), "SANDBOX_ENV_REFERENCE_BANK": str(bank)}
    cmd = [sys.executable, "-m", "sandbox_env.cli", "eval", "--agent", "oracle", "--mode", args.mode,
           "--split", "test", "--tasks", ",".join(args.task), "--concurrency", str(args.concurrency),
           "--out", str(out), "--no-progress"]
    subprocess.run(cmd, cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)
    run = json.loads((out / "runs.jsonl").read_text().splitlines()[-1])
    return int(run["ran"]), float(run["wall_s"]), phases(out / "episodes.jsonl")


def phases(episodes: Path) -> dict[str, float]:
    """Mean seconds per episode: reset, each action type (submit_fix is the verification), total."""
    timings = [json.loads(line)["timings"] for line in episodes.read_text().splitlines() if line.strip()]
    out: dict[str, float] = {}
    for t in timings:
        for key, sec in {"reset": t["reset_s"], **t["by_action"], "total": t["total_s"]}.items():
            out[key] = out.get(key, 0.0) + sec / len(timings)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vs", action="append", default=[], help="NAME=DIR: another checkout to compare")
    ap.add_argument("--task", action="append", required=True, help="a family (its test variants are played)")
    ap.add_argument("--mode", default="docker")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--concurrency", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--warm", action="store_true", help="also play each round again on its warmed bank")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    sides = [("this", ROOT)] + [(n, Path(d).resolve()) for n, d in (v.split("=", 1) for v in args.vs)]
    cores = os.cpu_count() or 1
    rates: dict[str, list[float]] = {}
    spent: dict[str, list[dict[str, float]]] = {}
    work = Path(tempfile.mkdtemp(prefix="eval-throughput-"))
    try:
        for rnd in range(args.rounds):
            for name, root in sides[rnd % len(sides):] + sides[:rnd % len(sides)]:
                bank = work / f"bank-{name}-{rnd}"
                for phase in ("cold", "warm") if args.warm else ("cold",):
                    out = work / f"eval-{name}-{rnd}-{phase}"
                    n, wall, per = play(root, args, out, bank)
                    rate = n / (wall / 3600 * cores)
                    rates.setdefault(f"{name} ({phase})", []).append(rate)
                    spent.setdefault(f"{name} ({phase})", []).append(per)
                    print(f"[round {rnd + 1}] {name:10s} {phase}: {n} episodes in {wall:.0f}s = "
                          f"{rate:.1f} per core-hour", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    base = f"{sides[1][0]} (cold)" if len(sides) > 1 else None
    lines = [f"Oracle episodes per core-hour, {args.mode}, test split of {', '.join(args.task)}, {when}, "
             f"medians of {args.rounds} round(s), concurrency {args.concurrency} on {cores} cores", "",
             "| side | episodes per core-hour | vs " + (base or "-") + " |", "|---|---:|---:|"]
    for side, vals in rates.items():
        med = statistics.median(vals)
        ratio = f"{med / statistics.median(rates[base]):.2f}x" if base else "-"
        lines.append(f"| {side} | {med:.1f} | {ratio} |")
    actions = {k for runs in spent.values() for per in runs for k in per} - {"total"}
    keys = [*sorted(actions, key=lambda k: (k == "submit_fix", k != "reset", k)), "total"]
    lines += ["", "Where an episode's time goes (mean seconds per episode, medians over rounds; submit_fix "
              "is the verification; concurrent episodes overlap, so phases are wall time, not CPU time)", "",
              "| side | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
    for side, runs in spent.items():
        lines.append(f"| {side} | " + " | ".join(
            f"{statistics.median(per.get(k, 0.0) for per in runs):.1f}" for k in keys) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
