#!/usr/bin/env bash
# Build the client venvs the real-client tests run (tests/test_mcp_clients.py), under .venvs/.
# Each line of a client installs the same import package as the other line (mcp 1.x vs 2.x;
# openenv vs openenv-core both install `openenv`), so each gets its own venv. openenv 0.10.0
# (with fastmcp 3.x and mcp 1.x) is in .venv already through the dev extra.
# Idempotent: a venv whose pinned spec is unchanged is left alone. None of them pulls torch.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"

build() {  # build NAME SPEC...
  local name=$1; shift
  local dir=".venvs/$name" want="$*"
  if [ -x "$dir/bin/python" ] && [ "$(cat "$dir/.spec" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  echo "[client-venvs] $name: $want"
  rm -rf "$dir"
  "$python" -m venv "$dir"
  "$dir/bin/python" -m pip install -q --disable-pip-version-check "$@" 2>&1 | { grep -v "^WARNING: Location" || true; }
  if "$dir/bin/python" -c 'import torch' 2>/dev/null; then
    echo "[client-venvs] $name pulled torch: pin it" >&2; exit 1
  fi
  echo "$want" > "$dir/.spec"
}

mkdir -p .venvs
build mcp2 "mcp==2.3.0"
build mcp1 "mcp==1.30.0"
build openenv-core "openenv-core==0.3.0" "fastmcp==4.2.3" "mcp==2.3.0"
