#!/bin/bash
# the family's docker jobs, in one hold of the shared lock (run: flock /tmp/sandbox-docker.lock <this>);
# each step runs only if it can end before the session's 08:05 UTC stop
set -u
cd "$(cd "$(dirname "$0")/../.." && pwd)"
export SANDBOX_ENV_TASK_ROOT="$(cd "$(dirname "$0")/../.." && pwd)"/staging/missing_eval_mode_bn_stats_drift
export SANDBOX_ENV_VARIANT_CACHE=/tmp/mev_docker_vcache
S="$(cd "$(dirname "$0")/../.." && pwd)"/staging/missing_eval_mode_bn_stats_drift
J="nice .venv/bin/python $S/tools_local/docker_jobs.py"
before() { [ "$(date -u +%H%M)" -lt "$1" ]; }
echo "[chain] start $(date -u +%H:%M:%S)"
before 0750 && { $J certify $S/CERTIFICATION-v0.md 5 missing_eval_mode_bn_stats_drift; echo "[chain] certify v0 rc=$? $(date -u +%H:%M:%S)"; }
before 0700 && { $J record missing_eval_mode_bn_stats_drift; echo "[chain] record v0 rc=$? $(date -u +%H:%M:%S)"; }
before 0700 && { $J certify $S/CERTIFICATION-variants.md 5 missing_eval_mode_bn_stats_drift@6 missing_eval_mode_bn_stats_drift@7 missing_eval_mode_bn_stats_drift@9 --record-certified; echo "[chain] certify test rc=$? $(date -u +%H:%M:%S)"; }
echo "[chain] end $(date -u +%H:%M:%S)"
