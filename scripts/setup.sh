#!/usr/bin/env bash
# Create .venv and install sandbox-env with the extras given (default: none).
# Usage: scripts/setup.sh [dev,torch,...]   Idempotent; torch is pinned to the CPU build 2.13.0.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
spec="."
[ -n "$extras" ] && spec=".[${extras}]"
.venv/bin/python -m pip install -q -e "$spec"
