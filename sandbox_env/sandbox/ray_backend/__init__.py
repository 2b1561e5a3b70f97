"""The ``ray`` mode: sandboxes on the nodes of a Ray cluster, behind the ordinary Sandbox protocol.

Importing this package does not import Ray: it holds only the settings (the cluster address
and the inner mode each node runs), ``ray_mode``, which the CLI calls for ``--ray ADDRESS``,
and ``env_mode``, which the ASGI app and the TRL adapter call so that ``SANDBOX_ENV_RAY_ADDRESS``
alone turns the mode on. The
driver side is ``sandbox.RaySandbox``; the per-node side is ``actor.NodeSandbox``.
"""

from __future__ import annotations

import os

ADDRESS_ENV = "SANDBOX_ENV_RAY_ADDRESS"
"""The Ray cluster to send runs to (``HOST:PORT`` of the head's GCS, or ``auto``)."""
INNER_ENV = "SANDBOX_ENV_RAY_INNER"
"""The mode each node's actor runs (docker, process, mock or auto: the node's own choice)."""
SLOT_RESOURCE = "sandbox_slots"
"""The custom resource a node offers, one unit per sandbox it can hold (``ray start --resources``)."""
MODE = "ray"


def env_mode(default: str) -> str:
    """The mode of a face configured only by the environment (the TRL adapter, the ASGI app):
    ``ray`` when ``SANDBOX_ENV_RAY_ADDRESS`` is set, each node running ``SANDBOX_ENV_RAY_INNER``
    (default: ``default``); else ``default``. Reads variables only: Ray is imported by the
    backend when the sandbox is created, never here."""
    if not os.environ.get(ADDRESS_ENV):
        return default
    return ray_mode(os.environ.get(INNER_ENV) or default)


def ray_mode(mode: str, address: str | None = None) -> str:
    """The mode to create: ``ray`` (with ``mode`` run on each node) when a cluster address is
    given or ``SANDBOX_ENV_RAY_ADDRESS`` is set, else ``mode`` unchanged."""
    address = address or os.environ.get(ADDRESS_ENV)
    if not address or mode == MODE:
        return mode
    os.environ[ADDRESS_ENV] = address
    os.environ[INNER_ENV] = mode
    return MODE


__all__ = ["ADDRESS_ENV", "INNER_ENV", "MODE", "SLOT_RESOURCE", "env_mode", "ray_mode"]
