"""Starts a hidden check inside the verification sandbox with its children's interpreter set.

Standard library only; runs as ``python launch_check.py CHILD_PYTHON CHECK ARGS...``. The
check runtime runs agent code as ``sys.executable``; setting it to ``CHILD_PYTHON`` (the
``child_python`` wrapper) makes every child start in a nested sandbox that does not show the
checks. The check itself then runs as ``__main__``, as with ``python check.py ARGS...``.
"""

import os
import runpy
import sys

if __name__ == "__main__":
    sys.executable = sys.argv[1]
    sys.argv = sys.argv[2:]
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
    runpy.run_path(sys.argv[0], run_name="__main__")
