#!/usr/bin/env bash
# After a change of the checks or the kit: bring every recorded trace up to the current check in
# docker, resumably (each step does only what is still stale or missing, so run it again after an
# interruption). Order: variant 0's new labelled states, variant 0's recorded states, the test
# variants, the train variants. Usage: bash scripts/reverify.sh [FAMILY ...]; SANDBOX_ENV_CLI names
# another command than .venv/bin/sandbox-env (a worktree: "env PYTHONPATH=$PWD .venv/bin/python -m sandbox_env.cli").
set -uo pipefail
cd "$(dirname "$0")/.."
SE=(${SANDBOX_ENV_CLI:-.venv/bin/sandbox-env})
families=("$@")
[ ${#families[@]} -gt 0 ] || families=($(ls task_repos | grep -v '\.md$'))
log() { echo "[reverify $(date +%H:%M:%S)] $*"; }
run() { log "$*"; flock /tmp/sandbox-docker.lock "${SE[@]}" "$@" --mode docker || log "exit $? (verdicts that changed are listed above)"; }
for f in "${families[@]}"; do run record "$f" --missing; done
for f in "${families[@]}"; do run record "$f" --reverify; done
for split in "6 7 9" "1 2 3 4 5 8"; do
  for f in "${families[@]}"; do
    for n in $split; do
      [ -d "task_repos/$f/variants/traces/$n" ] || continue
      run record "$f@$n" --behaviours --missing
      run record "$f@$n" --reverify
    done
  done
done
log done
