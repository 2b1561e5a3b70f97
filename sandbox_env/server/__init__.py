"""HTTP face of the environment (FastAPI); the only package that knows HTTP."""

from .app import ServerConfig, create_app
from .limits import limit_malloc_arenas

__all__ = ["ServerConfig", "create_app", "limit_malloc_arenas"]
