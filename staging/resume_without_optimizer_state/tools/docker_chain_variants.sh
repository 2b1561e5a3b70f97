#!/bin/sh
# not run yet: certification of the test and train variants and the test variants' recordings
# (run under the shared docker lock: flock /tmp/sandbox-docker.lock <this script>)
cd "$(cd "$(dirname "$0")/../.." && pwd)"
export SANDBOX_ENV_TASK_ROOT="$(cd "$(dirname "$0")/../.." && pwd)"/staging/resume_without_optimizer_state
OPS=staging/resume_without_optimizer_state/tools/docker_ops.py
OUT=staging/resume_without_optimizer_state
L=/tmp/rwos_chain_variants.log
echo "== certify test 6,7,9 K=5 $(date -u +%T)" >> $L
nice .venv/bin/python $OPS certify resume_without_optimizer_state --variants 6,7,9 --mode docker --runs 5 --record-certified --out $OUT/certification-variants-test.md >> $L 2>&1
for n in 6 7 9; do
  echo "== record @$n behaviours $(date -u +%T)" >> $L
  nice .venv/bin/python $OPS record resume_without_optimizer_state@$n --behaviours --mode docker >> $L 2>&1
done
echo "== certify train 1-5,8 K=3 $(date -u +%T)" >> $L
nice .venv/bin/python $OPS certify resume_without_optimizer_state --variants 1,2,3,4,5,8 --mode docker --runs 3 --record-certified --out $OUT/certification-variants-train.md >> $L 2>&1
echo "== done $(date -u +%T)" >> $L
