#!/usr/bin/env bash
# Nightly activation sweep: the same model and data with every activation we ship.
set -euo pipefail
cd "$(dirname "$0")"
for act in gelu relu tanh; do
    python train.py --activation "$act" "$@"
done
