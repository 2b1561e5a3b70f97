#!/usr/bin/env bash
# Set up and serve the environment over HTTP. Default: mock mode on port 8000 (no Docker, no torch).
# MODE=docker|auto|mock PORT=8000 HOST=127.0.0.1 scripts/start.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/sandbox-env serve --mode "${MODE:-mock}" --host "${HOST:-127.0.0.1}" --port "${PORT:-8000}"
