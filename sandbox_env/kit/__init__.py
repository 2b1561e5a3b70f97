"""The check kit: what runs inside a verification sandbox beside a task's hidden check.

These modules are copied by file name next to ``checks/check.py`` (``check_runtime.kit_files``)
and import one another by bare name there; on the host they are ``sandbox_env.kit.*``. Standard
library only, except the verifier (``check_kit``) and the driver side (``kit_driver``,
``tamper_guard``), which use torch inside the sandbox.
"""
