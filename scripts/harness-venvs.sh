#!/usr/bin/env bash
# Build the pinned harness venvs the harness tests run (tests/test_harness_*.py), under .venvs/:
#   .venvs/inspect    inspect-ai 0.3.285 + sandbox-env with its docker extra (Python 3.11)
#   .venvs/verifiers  verifiers 0.4.0 + sandbox-env without its dependencies (verifiers pins
#                     mcp==2.0.0; sandbox-env's server needs mcp 1.x beside openenv 0.10, and the
#                     adapter never imports the server, so only pydantic, httpx and the Docker SDK
#                     (docker mode) are added),
#                     the taskset plugin package sandbox-env-triage, and uv (verifiers runs its
#                     chat harness as a uv script); .venvs/verifiers-wheels holds that script's
#                     dependencies, so tests resolve it offline (UV_NO_INDEX + UV_FIND_LINKS)
#   .venvs/harbor     harbor 0.26.0 (needs Python >= 3.12: PYTHON312, else python3.12 on PATH);
#                     it runs the exported task folders, so it needs no sandbox-env
# Idempotent: a venv whose pinned spec is unchanged is left alone. None of them pulls torch.
# sandbox-env is installed editable (this checkout), so the adapters are always the tree's.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
# Harbor needs Python >= 3.12: PYTHON312, else a python3.12 that runs (a pyenv shim may not), else
# pyenv's installed 3.12; without one the harbor venv is not built and its tests say so
python312="${PYTHON312:-}"
if [ -z "$python312" ]; then
  for cand in python3.12 "$(pyenv root 2>/dev/null)"/versions/3.12*/bin/python3.12; do
    if [ -n "$cand" ] && "$cand" -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null; then
      python312=$cand; break
    fi
  done
fi

build() {  # build NAME PYTHON SPEC...   (a SPEC "--no-deps-editable:DIR" installs DIR editable, no dependencies)
  local name=$1 py=$2; shift 2
  local dir=".venvs/$name" want="$*"
  if [ -x "$dir/bin/python" ] && [ "$(cat "$dir/.spec" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  echo "[harness-venvs] $name: $want"
  rm -rf "$dir"
  "$py" -m venv "$dir"
  local plain=() nodeps=()
  for spec in "$@"; do
    case $spec in --no-deps-editable:*) nodeps+=(-e "${spec#--no-deps-editable:}") ;; *) plain+=("$spec") ;; esac
  done
  pip() { "$dir/bin/python" -m pip install -q --disable-pip-version-check "$@" 2>&1 | { grep -v "^WARNING: Location" || true; }; }
  [ ${#plain[@]} -eq 0 ] || pip "${plain[@]}"
  [ ${#nodeps[@]} -eq 0 ] || pip --no-deps "${nodeps[@]}"
  if "$dir/bin/python" -c 'import torch' 2>/dev/null; then
    echo "[harness-venvs] $name pulled torch: pin it" >&2; exit 1
  fi
  echo "$want" > "$dir/.spec"
}

mkdir -p .venvs
only="${1:-inspect,verifiers,harbor}"
case ",$only," in *,inspect,*) build inspect "$python" "inspect-ai==0.3.285" "-e" ".[docker]" ;; esac
case ",$only," in *,verifiers,*) build verifiers "$python" "verifiers==0.4.0" "uv==0.13.9" "pydantic>=2.6,<3" "httpx>=0.27" "docker>=7.1" "--no-deps-editable:." "--no-deps-editable:sandbox_env/harnesses/verifiers_package" ;; esac
case ",$only," in *,verifiers,*)
  # the chat program's PEP 723 dependencies (verifiers.v1.harnesses.utils.launch.CHAT_PROGRAM)
  if [ ! -f .venvs/verifiers-wheels/.done ]; then
    .venvs/verifiers/bin/python -m pip download -q --disable-pip-version-check -d .venvs/verifiers-wheels \
      openai "mcp==2.0.0" httpx httpx2 tenacity certifi 2>&1 | { grep -v "^WARNING: Location" || true; }
    touch .venvs/verifiers-wheels/.done
  fi ;;
esac
case ",$only," in *,harbor,*)
  if [ -n "$python312" ]; then build harbor "$python312" "harbor==0.26.0"
  else echo "[harness-venvs] harbor: no Python >= 3.12 here (set PYTHON312): not built" >&2; fi ;;
esac
