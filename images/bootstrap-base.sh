#!/usr/bin/env bash
# Build a Debian bookworm base image with Python 3.11 from Debian packages alone (no registry).
# Usage: images/bootstrap-base.sh [TAG]   (default sandbox-env-base:bookworm)
# Needs root, mmdebstrap and a Docker engine. Mirrors are taken from this machine's apt sources.
set -euo pipefail
tag="${1:-sandbox-env-base:bookworm}"
docker_bin="${DOCKER:-docker}"
if "$docker_bin" image inspect "$tag" >/dev/null 2>&1; then
  echo "base image $tag exists"; exit 0
fi
command -v mmdebstrap >/dev/null || { echo "mmdebstrap missing: apt-get install -y mmdebstrap" >&2; exit 1; }

# One "deb URI SUITE main" line per suite, from deb822 or one-line apt sources.
mirrors=()
while read -r uri suites; do
  for s in $suites; do mirrors+=("deb $uri $s main"); done
done < <(
  { cat /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } | awk '
    /^URIs:/ {u=$2} /^Suites:/ {sub(/^Suites:[ ]*/, ""); s=$0}
    /^$/ {if (u ~ /debian/ && s != "") print u, s; u=""; s=""}
    END {if (u ~ /debian/ && s != "") print u, s}'
  { grep -hE '^deb [^[]*debian' /etc/apt/sources.list 2>/dev/null || true; } | awk '{print $2, $3}'
)
if [ ${#mirrors[@]} -eq 0 ]; then
  mirrors=("deb http://deb.debian.org/debian bookworm main"
           "deb http://deb.debian.org/debian bookworm-updates main"
           "deb http://deb.debian.org/debian-security bookworm-security main")
fi
printf 'mirror: %s\n' "${mirrors[@]}"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mmdebstrap --variant=apt --mode=root --format=tar \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --aptopt='APT::Install-Recommends "false"' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  --include=python3,python3-venv,ca-certificates \
  bookworm "$tmp/rootfs.tar" "${mirrors[@]}"
"$docker_bin" import \
  -c 'ENV LANG=C.UTF-8' \
  -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'CMD ["python3"]' \
  "$tmp/rootfs.tar" "$tag"
echo "built $tag"
