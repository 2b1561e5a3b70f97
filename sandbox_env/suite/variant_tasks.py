"""Variants as tasks: materialise a generated variant into the cache, and the certified list.

A variant's folder (repo/, checks/ copied from its family, solution.patch, patches/, task.json
and the manifest variant.json) lives under :func:`cache_root`, never inside task_repos/, in a
directory keyed by the hash of everything written, so two processes agree on it and a changed
family makes a new one. ``task_repos/<family>/variants_certified.toml`` lists the variants
certified in docker (by repo hash); the registry refuses any other variant >= 1 unless
:data:`ALLOW_UNCERTIFIED_ENV` is set (development, tests).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import tomllib
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from .variants import CERTIFIED_FILE, Draw, Family, Variant, VariantError, VariantManifest, record_draw

CACHE_ENV = "SANDBOX_ENV_VARIANT_CACHE"
ALLOW_UNCERTIFIED_ENV = "SANDBOX_ENV_ALLOW_UNCERTIFIED"
MANIFEST_FILE, TASK_DATA_FILE = "variant.json", "task.json"
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")


def cache_root() -> Path:
    """$SANDBOX_ENV_VARIANT_CACHE, else $XDG_CACHE_HOME/sandbox-env/variants, else ~/.cache/..."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sandbox-env" / "variants"


def allow_uncertified_from_env() -> bool:
    return os.environ.get(ALLOW_UNCERTIFIED_ENV, "").strip().lower() in ("1", "true", "yes")


def materialise(variant: Variant, family: Family) -> Path:
    """The variant's folder in the cache (written once; reused while its content is the same)."""
    checks = family.root / "checks"
    labels = [{**lab} for lab in family.labels if lab["file"] in variant.patches]
    task_data = {**variant.task_toml, "patches": labels}
    h = hashlib.sha256()
    h.update(json.dumps([variant.manifest.model_dump(mode="json"), variant.repo, variant.solution_patch,
                         variant.patches, task_data], sort_keys=True).encode())
    for p in sorted(checks.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(p.relative_to(checks).as_posix().encode() + b"\0" + p.read_bytes())
    m = variant.manifest
    target = cache_root() / f"{m.family}@{m.index}-{h.hexdigest()[:16]}"
    if (target / MANIFEST_FILE).exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".partial-", dir=target.parent))
    try:
        for rel, text in variant.repo.items():
            (tmp / "repo" / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / "repo" / rel).write_text(text)
        shutil.copytree(checks, tmp / "checks", ignore=_SKIP)
        (tmp / "solution.patch").write_text(variant.solution_patch)
        (tmp / "patches").mkdir()
        for name, text in variant.patches.items():
            (tmp / "patches" / name).write_text(text)
        (tmp / TASK_DATA_FILE).write_text(json.dumps(task_data, indent=1, sort_keys=True) + "\n")
        (tmp / MANIFEST_FILE).write_text(m.model_dump_json(indent=1) + "\n")  # last: marks it complete
        try:
            tmp.rename(target)
        except OSError:  # another process wrote it first: same content
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


# --------------------------------------------------------------------------- certified list
class CertifiedVariant(BaseModel):
    """One certified variant: which bytes, how many runs, when, in which mode."""

    index: int = Field(ge=1)
    repo_hash: str
    runs: int = Field(ge=1)
    date: str
    mode: str


def load_certified(family_root: Path) -> list[CertifiedVariant]:
    path = family_root / CERTIFIED_FILE
    if not path.exists():
        return []
    try:
        rows = tomllib.loads(path.read_text()).get("variant", [])
        return [CertifiedVariant.model_validate(r) for r in rows]
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise VariantError(f"{path}: {exc}") from exc


def is_certified(family_root: Path, index: int, repo_hash: str) -> bool:
    return any(c.index == index and c.repo_hash == repo_hash for c in load_certified(family_root))


def record_incident_log(family_root: Path, index: int, log: str) -> Path:
    """Keep a variant's own unfixed run (its last lines) as ``variants/logs/<N>.log``: from then
    on its incident report quotes this run instead of variant 0's (``Family.incident_log``)."""
    path = family_root / "variants" / "logs" / f"{index}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(log)
    return path


def record_certified(family_root: Path, index: int, repo_hash: str, runs: int, mode: str) -> Path:
    """Add (or replace) a variant's entry in the family's variants_certified.toml."""
    rows = [c for c in load_certified(family_root) if c.index != index]
    rows.append(CertifiedVariant(index=index, repo_hash=repo_hash, runs=runs, mode=mode,
                                 date=datetime.now(UTC).strftime("%Y-%m-%d")))
    lines = ["# Variants certified in real runs (sandbox-env certify FAMILY@N --record-certified;",
             "# docs/variants.md). The registry serves a variant >= 1 only when its repo hash is here.", ""]
    for c in sorted(rows, key=lambda c: c.index):
        lines += ["[[variant]]", f"index = {c.index}", f'repo_hash = "{c.repo_hash}"', f"runs = {c.runs}",
                  f'date = "{c.date}"', f'mode = "{c.mode}"', ""]
    path = family_root / CERTIFIED_FILE
    path.write_text("\n".join(lines))
    return path


def keep_certified(family_root: Path, manifest: VariantManifest, runs: int, mode: str,
                   bug_log: str) -> list[Path]:
    """What ``certify --record-certified`` keeps of a certified variant: its entry in
    variants_certified.toml, its draw (so that no later edit of the tables re-draws it) and its
    unfixed run (quoted by its incident report from then on). Returns the files written."""
    paths = [record_certified(family_root, manifest.index, manifest.repo_hash, runs, mode),
             record_draw(family_root, Draw.of(manifest))]
    if bug_log:
        paths.append(record_incident_log(family_root, manifest.index, bug_log))
    return paths
