#!/usr/bin/env bash
# Install gVisor's runsc and register it with the running Docker engine as the runtime "runsc".
#
# Idempotent: installs Debian's `runsc` package only when no runsc is on PATH, merges a
# `runtimes.runsc` entry into /etc/docker/daemon.json (every other key is kept), and reloads
# dockerd (SIGHUP: running containers keep running) only when the file changed or the engine
# does not list the runtime yet. Needs root and a running engine (start it first).
#
#   bash scripts/runsc.sh                        # install + register "runsc"
#   RUNSC_ARGS="--network=none --platform=ptrace" bash scripts/runsc.sh   # other runtimeArgs
#
# Environment: DAEMON_JSON (default /etc/docker/daemon.json), DOCKER_CLI (default
# /usr/bin/docker when present), RUNSC_ARGS (space-separated runtimeArgs, default
# "--network=none").
#
# Why --network=none: sandbox containers never have a network (network_mode "none"), and
# gVisor's own "none" gives them a loopback-only netstack inside the sandbox. It is also
# required here: runsc releases before mid-2024 (Debian bookworm ships 0.0~20221219) refuse
# to copy a network namespace on Linux >= 6.11 ("cannot run with network enabled in root
# network namespace", gVisor issue 10704). Every container of this runtime gets no network,
# whatever it asks for, so do not run the server itself under it.
set -euo pipefail
log() { echo "[runsc $(date +%H:%M:%S)] $*"; }

daemon_json=${DAEMON_JSON:-/etc/docker/daemon.json}
docker_cli=${DOCKER_CLI:-$( [ -x /usr/bin/docker ] && echo /usr/bin/docker || command -v docker )}

if ! command -v runsc >/dev/null; then
  log "apt-get install runsc"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q runsc >/dev/null
fi
runsc_path=$(command -v runsc)
log "$("$runsc_path" --version 2>&1 | head -1) at $runsc_path"

"$docker_cli" info >/dev/null 2>&1 || { log "no Docker engine answers: start dockerd first"; exit 1; }

# Merge {"runtimes": {"runsc": {"path": ..., "runtimeArgs": [...]}}} into daemon.json.
mkdir -p "$(dirname "$daemon_json")"
changed=$(python3 - "$daemon_json" "$runsc_path" "${RUNSC_ARGS---network=none}" <<'PY'
import json, os, sys
path, binary, args = sys.argv[1], sys.argv[2], sys.argv[3].split()
try:
    with open(path) as f:
        text = f.read()
    conf = json.loads(text) if text.strip() else {}
except FileNotFoundError:
    conf = {}
if not isinstance(conf, dict):
    sys.exit(f"{path} is not a JSON object")
entry = {"path": binary}
if args:
    entry["runtimeArgs"] = args
runtimes = conf.setdefault("runtimes", {})
if runtimes.get("runsc") == entry:
    print("no")
else:
    runtimes["runsc"] = entry
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(conf, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
    print("yes")
PY
)

registered() { "$docker_cli" info --format '{{range $k, $v := .Runtimes}}{{$k}} {{end}}' 2>/dev/null | grep -qw runsc; }
if [ "$changed" = yes ] || ! registered; then
  log "reloading dockerd (daemon.json changed: $changed)"
  if command -v systemctl >/dev/null && systemctl is-active --quiet docker 2>/dev/null; then
    systemctl reload docker
  else
    pid=$(pidof dockerd || true)
    [ -n "$pid" ] || { log "dockerd is not running on this host: restart the engine by hand"; exit 1; }
    kill -HUP $pid
  fi
  for _ in $(seq 30); do registered && break; sleep 0.5; done
fi
registered || { log "dockerd does not list the runsc runtime after a reload (see its log)"; exit 1; }
log "registered: docker run --runtime=runsc ... (dmesg inside says 'Starting gVisor')"
