"""HTTP face of the environment (FastAPI); the only package that knows HTTP."""

from .app import ServerConfig, create_app

__all__ = ["ServerConfig", "create_app"]
