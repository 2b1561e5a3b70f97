"""``key=value`` overrides of a :class:`JobConfig` (the CLI's ``--set``)."""

from __future__ import annotations

from dataclasses import fields, replace

from countcast.config.job import JobConfig

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _coerce(kind: type, text: str):
    if kind is bool:
        low = text.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError(f"not a boolean: {text!r}")
    if kind is int:
        return int(float(text)) if "e" in text.lower() else int(text)
    return kind(text)


def apply_overrides(job: JobConfig, pairs: list[str]) -> JobConfig:
    kinds = {f.name: type(getattr(job, f.name)) for f in fields(job)}
    changes = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in kinds:
            raise SystemExit(f"--set {pair!r}: expected KEY=VALUE with KEY one of {', '.join(sorted(kinds))}")
        try:
            changes[key] = _coerce(kinds[key], value.strip())
        except ValueError as exc:
            raise SystemExit(f"--set {pair!r}: {exc}") from None
    return replace(job, **changes)
