"""Module-level ASGI app for `uvicorn sandbox_env.server.asgi:app` (the OpenEnv manifest's `app`).

Configured from the environment: SANDBOX_ENV_MODE (mock | docker | auto; default mock),
SANDBOX_ENV_TASK_ROOT, SANDBOX_ENV_MAX_SESSIONS, SANDBOX_ENV_IDLE_TIMEOUT_S.
"""

from __future__ import annotations

import os

from ..sandbox import make_sandbox
from ..tasks import TaskRegistry
from .app import ServerConfig, create_app, limit_malloc_arenas

limit_malloc_arenas()
_env = os.environ.get
app = create_app(
    TaskRegistry(),
    make_sandbox(_env("SANDBOX_ENV_MODE", "mock"), owner=_env("SANDBOX_ENV_OWNER", "asgi")),
    ServerConfig(max_sessions=int(_env("SANDBOX_ENV_MAX_SESSIONS", "64")),
                 idle_timeout_s=float(_env("SANDBOX_ENV_IDLE_TIMEOUT_S", "900"))),
)
