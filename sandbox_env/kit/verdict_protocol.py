"""The nonce-framed verdict line between a hidden check and the host: its one definition.

The host starts ``python check.py --workspace DIR`` and writes a one-line random nonce to
the check's stdin, then closes it. The check answers with exactly one line
``SANDBOX_VERDICT <nonce> <json object>`` on its own stdout. Agent code runs only in the
check's children, which never see the nonce, so a verdict line that agent code prints cannot
carry it and is ignored.

Standard library only: every backend parses verdicts with it on the host, and it travels
with the check runtime into the verifier (``check_runtime.kit_files()``), where the check
writes its verdict with it.
"""

from __future__ import annotations

import json
from typing import IO, Any

VERDICT_TAG = "SANDBOX_VERDICT"


def read_nonce(stream: IO[str]) -> str:
    """The nonce the host wrote to the check's stdin (its first line)."""
    return stream.readline().strip()


def frame_verdict(nonce: str, verdict: dict[str, Any]) -> str:
    """The verdict line the check prints, newline included."""
    return f"{VERDICT_TAG} {nonce} {json.dumps(verdict, sort_keys=True)}\n"


def parse_verdict(stdout: str, nonce: str) -> dict[str, Any] | None:
    """The verdict carried by the last line framed with ``nonce``; None when there is none.

    Lines with another nonce, or with the tag anywhere but at the start of a line, are not
    frames. A frame whose payload is not a JSON object is no verdict.
    """
    prefix = f"{VERDICT_TAG} {nonce} "
    for line in reversed(stdout.splitlines()):
        if line.startswith(prefix):
            try:
                data = json.loads(line[len(prefix):])
            except json.JSONDecodeError:
                return None
            return data if isinstance(data, dict) else None
    return None
