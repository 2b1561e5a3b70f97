#!/bin/bash
# Docker steps of grad_accumulation_loss_normalization, run under the shared lock in one go.
# Each step starts only before 07:58 UTC (the session ends at 08:05); logs go beside this file.
R="$(cd "$(dirname "$0")/.." && pwd)"/staging/grad_accumulation_loss_normalization
F=grad_accumulation_loss_normalization
cd "$(cd "$(dirname "$0")/.." && pwd)"
export SANDBOX_ENV_TASK_ROOT=$R SANDBOX_ENV_OWNER=fam-$F
SE=".venv/bin/sandbox-env --task-root $R"
step() { if [ "$(date -u +%H%M)" -ge 0758 ]; then echo "$(date -u +%T) skipped (time): $*" >> $R/chain.log; return 1; fi
         echo "$(date -u +%T) start: $*" >> $R/chain.log; "$@" >> $R/chain.log 2>&1; echo "$(date -u +%T) rc=$? $*" >> $R/chain.log; }
step $SE record $F --mode docker
step $SE certify $F --mode docker --runs 5 --out $R/certification.md
step $SE certify $F@6 $F@7 $F@9 --mode docker --runs 5 --record-certified --out $R/certification-variants-test.md
for n in 6 7 9; do step $SE record $F@$n --behaviours --mode docker; done
step $SE certify $F --variants 1,2,3,4,5,8 --mode docker --runs 3 --record-certified --out $R/certification-variants-train.md
for n in 1 2 3 4 5 8; do step $SE record $F@$n --behaviours --mode docker; done
echo "$(date -u +%T) chain done" >> $R/chain.log
