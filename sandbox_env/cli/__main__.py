"""`python -m sandbox_env.cli`: the sandbox-env command."""

from __future__ import annotations

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
