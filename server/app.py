"""OpenEnv's entry point (`server/app.py` with `main()`): the same app as `sandbox-env serve`.

`python server/app.py [--mode docker] [--port 8000] ...` or the `server` console script
(`uv run server`) serve it; both go through `sandbox_env.server.asgi.main`, so they take
`sandbox-env serve`'s flags and the SANDBOX_ENV_* / HOST / PORT environment variables.
`uvicorn server.app:app` (run from the repository root) serves the manifest's
`sandbox_env.server.asgi:app`.
"""

from __future__ import annotations

from typing import Any

from sandbox_env.server import asgi


def main(argv: list[str] | None = None) -> int:
    """Serve over HTTP; `argv` defaults to the command line."""
    return asgi.main(argv)


def __getattr__(name: str) -> Any:
    if name == "app":
        return asgi.app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    raise SystemExit(main())
