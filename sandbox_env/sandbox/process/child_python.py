"""The interpreter a hidden check runs agent code with: ``python`` in a nested sandbox.

Standard library only; it is the check's ``sys.executable`` inside the verification sandbox
(see ``launch_check``). It execs bubblewrap with the nested sandbox's arguments (written by
the host to ``nested.json`` beside it: the same system view, the workspace and /tmp of the
verification sandbox, its /proc, and no /checks), binds in read-only only the check files the
command names (its drivers), and runs the runner's interpreter there with the same arguments,
in the same directory, under ``nested_init`` as PID 1. exec keeps the pid, so the check's
timeout, wait status and peak RSS (``wait4``) apply to the nested sandbox as they would to a
plain child.
"""

import json
import os
import sys

CHECKS = "/checks/"

if __name__ == "__main__":
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "nested.json")) as f:
        nested = json.load(f)
    args = list(nested["args"])
    for a in sys.argv[1:]:
        if a.startswith(CHECKS) and a.endswith(".py") and os.path.isfile(a):
            args += ["--ro-bind", a, a]
    for name, value in os.environ.items():
        args += ["--setenv", name, value]
    os.execv(nested["bwrap"], [nested["bwrap"], *args, "--remount-ro", "/", "--chdir", os.getcwd(),
                               "--as-pid-1", "--", *nested["init"], nested["python"], *sys.argv[1:]])
