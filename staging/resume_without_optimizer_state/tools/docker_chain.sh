#!/bin/sh
# certification chain for resume_without_optimizer_state (run under the shared docker lock)
cd "$(cd "$(dirname "$0")/../.." && pwd)"
export SANDBOX_ENV_TASK_ROOT="$(cd "$(dirname "$0")/../.." && pwd)"/staging/resume_without_optimizer_state
OPS=staging/resume_without_optimizer_state/tools/docker_ops.py
OUT=staging/resume_without_optimizer_state
L=/tmp/rwos_chain.log
echo "== record @0 --missing $(date -u +%T)" >> $L
nice .venv/bin/python $OPS record resume_without_optimizer_state --missing --mode docker >> $L 2>&1
echo "== certify @0 K=5 $(date -u +%T)" >> $L
nice .venv/bin/python $OPS certify resume_without_optimizer_state --mode docker --runs 5 --out $OUT/certification.md >> $L 2>&1
# (variant certification and recordings: not reached before the 08:05 stop; see STATUS.md)
echo "== chain done $(date -u +%T)" >> $L
