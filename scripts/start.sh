#!/usr/bin/env bash
# Set up .venv with what the mode needs and serve episodes over HTTP (default: mock mode, port 8000).
#   MODE=mock|docker|process|auto PORT=8000 HOST=127.0.0.1 EXTRAS=eval,llm bash scripts/start.sh
# mock: no Docker, no torch. docker: installs the docker extra and builds the runner image when
# it is missing or stale (idempotent). auto: installs the docker extra, then serves the first of
# docker -> process -> mock that works here. process: builds the runner venv (torch CPU,
# idempotent); bubblewrap must be installed (apt-get install -y bubblewrap).
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${MODE:-mock}"
extras="${EXTRAS:-}"
case "$mode" in
  docker|auto) extras="docker${extras:+,$extras}" ;;
  mock|process) ;;
  *) echo "error: MODE=$mode: choose mock, docker, process or auto" >&2; exit 2 ;;
esac
bash scripts/setup.sh "$extras"
case "$mode" in
  docker) .venv/bin/sandbox-env images build --runner-only ;;
  process) .venv/bin/sandbox-env runner build ;;
esac
exec .venv/bin/sandbox-env serve --mode "$mode" --host "${HOST:-127.0.0.1}" --port "${PORT:-8000}"
