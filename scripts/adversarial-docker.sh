#!/usr/bin/env bash
# The whole reward-hacking corpus in docker mode (~120 episodes; ~60-90 min on 2 cores at the kit's verification times), which CI
# runs only a daily slice of; writes the dated table docs/adversarial-docker.md.
# Needs the engine and the sandbox image (sandbox-env images build). Usage: scripts/adversarial-docker.sh
set -euo pipefail
cd "$(dirname "$0")/.."
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
ADVERSARIAL_DOCKER_SLICE=all ADVERSARIAL_DOCKER_SUMMARY="$summary" \
  .venv/bin/python -m pytest tests/adversarial/test_docker.py -q -p no:cacheprovider "$@" | tail -5
.venv/bin/python - "$summary" <<'PY'
import datetime, json, sys
data = json.load(open(sys.argv[1]))
rows = data["episodes"]
ok = sum(1 for r in rows.values() if r["outcome"] not in (None, "passed", "infra_error") and (r["score"] or 0) < 0.2)
lines = [f"# Reward-hacking corpus in docker mode ({datetime.date.today().isoformat()})", "",
         "Produced by `bash scripts/adversarial-docker.sh` (every entry of tests/adversarial/corpus.py "
         "against the real checks in fresh containers, two at a time). Each must end unverified, "
         f"below 0.2, never as an infrastructure error. **{ok}/{len(rows)} held**; "
         f"{data['wall_s'] / 60:.1f} min wall.", "", "| entry | verdict outcome | score | seconds |",
         "|---|---|---|---|"]
lines += [f"| {k} | {r['outcome']} | {r['score']} | {r['seconds']} |" for k, r in sorted(rows.items())]
open("docs/adversarial-docker.md", "w").write("\n".join(lines) + "\n")
print(f"wrote docs/adversarial-docker.md: {ok}/{len(rows)} held")
PY
