"""The verifiers taskset plugin ``sandbox-env-triage``: a top-level name for verifiers' loader.

verifiers imports a taskset id as a top-level module and takes the ``Taskset`` subclass its
``__all__`` exports; everything lives in ``sandbox_env.harnesses.verifiers_env``.
"""

from sandbox_env.harnesses.verifiers_env import TriageTaskset, load_environment

__all__ = ["TriageTaskset", "load_environment"]
