"""Authoring helper (not part of the family): make a patch from literal replacements.

python pw.py OUT.patch FILE 'OLD' 'NEW' [FILE 'OLD' 'NEW' ...]   (against ../dataloader_worker_rng_duplication/repo)
A FILE with OLD == '' is created with NEW as its content.
"""
import subprocess, sys, shutil, tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent / "dataloader_worker_rng_duplication" / "repo"
out, args = Path(sys.argv[1]), sys.argv[2:]
with tempfile.TemporaryDirectory() as d:
    a, b = Path(d) / "a", Path(d) / "b"
    shutil.copytree(REPO, a); shutil.copytree(REPO, b)
    for i in range(0, len(args), 3):
        f, old, new = args[i:i + 3]
        p = b / f
        if old == "":
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(new)
            continue
        s = p.read_text()
        if s.count(old) != 1:
            sys.exit(f"{f}: OLD found {s.count(old)} times: {old[:80]!r}")
        p.write_text(s.replace(old, new))
    r = subprocess.run(["diff", "-ruN", "a", "b"], cwd=d, capture_output=True, text=True)
    lines = [ln for ln in r.stdout.splitlines(keepends=True) if not ln.startswith("diff -ruN")]
    text = "".join((ln.split("\t")[0] + "\n") if ln.startswith(("--- ", "+++ ")) else ln for ln in lines)
    out.write_text(text)
    print(f"wrote {out} ({len(text.splitlines())} lines)")
