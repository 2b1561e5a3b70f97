#!/usr/bin/env bash
# The oracle of the OpenEnv manifest: plays every task's reference fix and prints its score
# (>= 0.9 expected). MODE=mock (default, no Docker) or MODE=docker.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/sandbox-env play --oracle --mode "${MODE:-mock}" all
