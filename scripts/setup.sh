#!/usr/bin/env bash
# Create .venv and install sandbox-env (editable) with the install extras given (default: none).
# Usage: scripts/setup.sh [EXTRA[,EXTRA...]]   e.g. scripts/setup.sh docker,eval
# Extras: docker, eval, llm, torch, trl, ray, dev (README "Install extras"). Idempotent: extras
# installed before stay installed. torch is pinned to 2.13.0; TORCH_INDEX_URL (e.g.
# https://download.pytorch.org/whl/cpu) adds an index for the CPU build.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
spec="."
[ -n "$extras" ] && spec=".[${extras}]"
index=()
[ -n "${TORCH_INDEX_URL:-}" ] && index=(--extra-index-url "$TORCH_INDEX_URL")
echo "[setup] .venv: pip install -e '$spec'" >&2
.venv/bin/python -m pip install -q "${index[@]}" -e "$spec"
