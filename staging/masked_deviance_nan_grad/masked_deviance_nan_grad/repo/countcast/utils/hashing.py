"""Stable digests of configs (the regression gate keys its baselines by them)."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def digest(obj: Any, length: int = 12) -> str:
    text = json.dumps(obj, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]
