#!/bin/bash
# docker steps for iterable_dataset_worker_duplication, run under one acquisition of the docker lock;
# a step starts only if it can end before the 08:05 stop (estimates from host timings)
cd "$(cd "$(dirname "$0")/../.." && pwd)"
export SANDBOX_ENV_TASK_ROOT="$(cd "$(dirname "$0")/../.." && pwd)"/staging/iterable_dataset_worker_duplication
export SANDBOX_ENV_OWNER=fam-iterable_dataset_worker_duplication
F=iterable_dataset_worker_duplication
OUT="$(cd "$(dirname "$0")/../.." && pwd)"/staging/iterable_dataset_worker_duplication/certification
mkdir -p $OUT
END=$(date -u -d "08:02" +%s)
step() {  # step MINUTES command...
  local need=$1; shift
  if [ $(( $(date -u +%s) + need * 60 )) -gt "$END" ]; then echo "=== $(date -u +%T) skipped (no time for ~${need} min): $*"; return 1; fi
  echo "=== $(date -u +%T) $*"; "$@"; local rc=$?; echo "=== $(date -u +%T) rc=$rc $2 $3"; return $rc
}
echo "=== $(date -u +%T) lock acquired"
step 35 .venv/bin/sandbox-env record $F --mode docker
step 12 .venv/bin/sandbox-env certify $F --mode docker --runs 5 --record-certified --out $OUT/variant0.md
for N in ${VARIANTS:-6 7 1 2 3 4 5 8 9}; do
  step 12 .venv/bin/sandbox-env certify $F@$N --mode docker --runs 5 --record-certified --out $OUT/variant$N.md || continue
  step 8 .venv/bin/sandbox-env record $F@$N --behaviours --mode docker
done
echo "=== $(date -u +%T) chain done"
