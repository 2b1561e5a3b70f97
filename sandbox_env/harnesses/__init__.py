"""Adapters for the harnesses researchers already use: an Inspect task, a verifiers environment,
a Harbor task export (docs/harnesses.md).

Each module has one job and imports its harness itself: importing this package imports none of
them. ``common`` holds what the Inspect and verifiers adapters share (one episode per rollout,
the texts the model sees, the tool table derived from ``actions.ACTIONS``).
"""
