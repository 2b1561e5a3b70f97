#!/bin/bash
# Author's helper: dev_check each named patch (or "original" / "solution") in turn, one log each, a summary line in logs/summary.txt
cd "$(cd "$(dirname "$0")/../.." && pwd)"
F=staging/rank0_eval_through_ddp_wrapper_hang/rank0_eval_through_ddp_wrapper_hang
L=staging/rank0_eval_through_ddp_wrapper_hang/dev/logs
for p in "$@"; do
  s=$(date +%s)
  PYTHONPATH="$(cd "$(dirname "$0")/../.." && pwd)" nice -n 15 python staging/rank0_eval_through_ddp_wrapper_hang/dev/check_one.py $F $p > $L/$p.log 2>&1
  echo "$p | $(( $(date +%s) - s ))s | $(grep '^RESULT' $L/$p.log)" >> $L/summary.txt
done
