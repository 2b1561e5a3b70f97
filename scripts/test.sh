#!/usr/bin/env bash
# Install the dev, torch (pinned to 2.13.0 CPU), trl and ray extras and run lint and the test suite.
# Extra arguments go to pytest (e.g. scripts/test.sh -m "not real").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev,torch,trl,ray
.venv/bin/ruff check sandbox_env tests tools bench task_repos
exec .venv/bin/python -m pytest --durations=30 "$@"
