"""API fuzzing: schemathesis against the server's own OpenAPI schema, on a real uvicorn server.

Every check schemathesis has (no 5xx, documented status codes, response bodies and headers
matching the schema, schema-valid data accepted, schema-violating data rejected), over every
route, at least 1000 generated requests. Failures are fixed in the models and the schema.
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from pathlib import Path

from .conftest import ROOT, start_server

SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"


def test_schemathesis_finds_no_failure_in_1000_requests(tmp_path: Path) -> None:
    proc, url = start_server(ROOT / "task_repos", "mock", "--max-sessions", "500")
    har = tmp_path / "requests.har"
    try:
        run = subprocess.run(
            [str(SCHEMATHESIS), "--config-file", str(ROOT / "tests" / "schemathesis.toml"), "run",
             f"{url}/openapi.json", "--checks", "all", "--max-examples", "200", "--seed", "20261130",
             "--generation-database", "none", "--no-color", "--report", "har",
             "--report-har-path", str(har)],
            check=False, capture_output=True, text=True, timeout=900)
    finally:
        proc.terminate()
        server_log = proc.communicate(timeout=10)[0].decode()
    summary = run.stdout[-6000:]
    assert run.returncode == 0, summary
    entries = json.loads(har.read_text())["log"]["entries"]
    statuses = collections.Counter(e["response"]["status"] for e in entries)
    paths = {e["request"]["url"].split("?")[0].removeprefix(url) for e in entries}
    assert len(entries) >= 1000, statuses
    assert not [s for s in statuses if s >= 500], statuses
    assert {"/reset", "/step", "/state", "/close", "/mcp", "/health", "/metadata", "/schema",
            "/tasks"} <= paths, paths
    assert statuses[200] > 100, statuses  # not only rejections: valid requests were served too
    assert "Traceback" not in server_log, server_log[-4000:]
