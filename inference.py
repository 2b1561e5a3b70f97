"""Baseline inference entry point: run the LLM agent on every task of a sandbox-env server.

Environment variables (the seed's): API_BASE_URL (default https://router.huggingface.co/v1),
MODEL_NAME (default Qwen/Qwen2.5-72B-Instruct), HF_TOKEN or OPENAI_API_KEY (required),
ENV_URL (default http://localhost:8000); optional TASKS (comma-separated ids) and SEED.

stdout carries only the [START] / [STEP] / [END] lines; diagnostics and the summary go to
stderr. Exit code 0 when the run happened (whatever the scores), 2 on a configuration error,
1 when the environment never answered /health.
"""

from __future__ import annotations

import sys

from sandbox_env.agent import main

if __name__ == "__main__":
    sys.exit(main())
