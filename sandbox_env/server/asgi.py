"""Module-level ASGI app for `uvicorn sandbox_env.server.asgi:app` (the OpenEnv manifest's `app`),
and `main()`, the `server` console script and OpenEnv's `server/app.py` entry point.

Configured from the environment: SANDBOX_ENV_MODE (mock | docker | auto; default mock),
SANDBOX_ENV_RAY_ADDRESS (when set, SANDBOX_ENV_MODE, else SANDBOX_ENV_RAY_INNER, runs on the
nodes of that Ray cluster; unset, Ray is never imported), SANDBOX_ENV_TASK_ROOT,
SANDBOX_ENV_MAX_SESSIONS, SANDBOX_ENV_IDLE_TIMEOUT_S, SANDBOX_ENV_OWNER;
`main()` also reads HOST and PORT (as scripts/start.sh does) and takes `sandbox-env serve`'s flags,
which win over the environment. `app` is built on first access, so importing `main` builds nothing.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from typing import Any

# The environment variables `main()` turns into `sandbox-env serve` flags.
_ENV_FLAGS: tuple[tuple[str, str], ...] = (
    ("SANDBOX_ENV_MODE", "--mode"),
    ("SANDBOX_ENV_MAX_SESSIONS", "--max-sessions"),
    ("SANDBOX_ENV_IDLE_TIMEOUT_S", "--idle-timeout"),
    ("SANDBOX_ENV_OWNER", "--owner"),
    ("HOST", "--host"),
    ("PORT", "--port"),
)


@cache
def _build_app() -> Any:
    from ..sandbox import make_sandbox
    from ..sandbox.ray_backend import env_mode, ray_mode
    from ..suite.tasks import TaskRegistry
    from .app import ServerConfig, create_app
    from .limits import limit_malloc_arenas

    limit_malloc_arenas()
    env = os.environ.get
    mode = env("SANDBOX_ENV_MODE")
    return create_app(
        TaskRegistry(),
        make_sandbox(ray_mode(mode) if mode else env_mode("mock"), owner=env("SANDBOX_ENV_OWNER", "asgi")),
        ServerConfig(max_sessions=int(env("SANDBOX_ENV_MAX_SESSIONS", "0")) or None,
                     idle_timeout_s=float(env("SANDBOX_ENV_IDLE_TIMEOUT_S", "900"))),
    )


def __getattr__(name: str) -> Any:
    if name == "app":
        return _build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def serve_args(argv: list[str] | None = None) -> list[str]:
    """`sandbox-env serve` arguments: the environment's settings, then `argv` (later flags win)."""
    env = [arg for name, flag in _ENV_FLAGS if os.environ.get(name) for arg in (flag, os.environ[name])]
    return ["serve", *env, *(sys.argv[1:] if argv is None else argv)]


def main(argv: list[str] | None = None) -> int:
    """Serve over HTTP like `sandbox-env serve` (its code, its flags), configured as above."""
    from ..cli import main as cli_main

    return cli_main(serve_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
