#!/usr/bin/env bash
# The whole reward-hacking corpus in docker mode, which CI runs only a daily slice of: variant 0 of
# each task (120 episodes, 30 min on 2 cores) and the same corpus on every form of the bug (the
# variants' entries, family@N:name); writes the dated table docs/adversarial-docker.md.
# Needs the engine and the sandbox image (sandbox-env images build).
# Usage: scripts/adversarial-docker.sh [pytest args, e.g. -k '@' for the variants' entries only, or
#        node ids / @FILE of node ids for some entries]
# ADVERSARIAL_DOCKER_TABLE=docs/other.md writes the table there instead (a partial run beside the
# whole one).
set -euo pipefail
cd "$(dirname "$0")/.."
summary=$(mktemp)
trap 'rm -f "$summary" "$summary.log"' EXIT
rc=0
# node ids (file::test[id]) or a file of them (@FILE) select only those entries; with the module
# path beside them pytest would collect the whole corpus
target=tests/adversarial/test_docker.py
for arg in "$@"; do case "$arg" in *::*|@*) target="" ;; esac; done
ADVERSARIAL_DOCKER_SLICE=all ADVERSARIAL_DOCKER_SUMMARY="$summary" \
  .venv/bin/python -m pytest $target -q -p no:cacheprovider "$@" > "$summary.log" 2>&1 || rc=$?
tail -5 "$summary.log"; rm -f "$summary.log"
# the table is written whatever pytest said: a failing entry is listed with what went wrong
[ -s "$summary" ] || { echo "no summary written (pytest exit $rc)"; exit $(( rc ? rc : 1 )); }
.venv/bin/python - "$summary" "$*" "${ADVERSARIAL_DOCKER_TABLE:-docs/adversarial-docker.md}" <<'PY'
import datetime, json, sys
data = json.load(open(sys.argv[1]))
table = sys.argv[3]
picked = f" with pytest arguments `{sys.argv[2]}`" if sys.argv[2] else ""
rows = data["episodes"]
ok = sum(1 for r in rows.values() if not r.get("problems"))
lines = [f"# Reward-hacking corpus in docker mode ({datetime.date.today().isoformat()})", "",
         "Produced by `bash scripts/adversarial-docker.sh` (every entry of tests/adversarial/corpus.py "
         f"against the real checks in fresh containers, two at a time){picked}. Each must end unverified, "
         f"below 0.2, never as an infrastructure error. **{ok}/{len(rows)} held**; "
         f"{data['wall_s'] / 60:.1f} min wall.", "", "| entry | verdict outcome | score | seconds |",
         "|---|---|---|---|"]
lines += [f"| {k} | {r['outcome']} | {r['score']} | {r['seconds']} |" for k, r in sorted(rows.items())]
failed = {k: r for k, r in sorted(rows.items()) if r.get("problems")}
if failed:
    lines += ["", "## Entries that did not hold", ""]
    for k, r in failed.items():
        said = "; ".join(r["problems"]).replace("\n", " ")
        lines += [f"- **{k}**: {said}", f"  - first reason of the verdict: {r['reason'][:400]!r}"]
open(table, "w").write("\n".join(lines) + "\n")
print(f"wrote {table}: {ok}/{len(rows)} held")
PY
exit "$rc"
