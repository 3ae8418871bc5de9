#!/usr/bin/env bash
# Installs pi (npm package @mariozechner/pi-coding-agent) into a cache folder,
# for the makai-cli tests that drive `makai --mode rpc` with pi's RPC client
# (tests/pi_client.rs) and share one session file with pi's own CLI
# (tests/pi_session.rs).
#
#   scripts/setup-pi-client.sh [DIR]
#
# DIR defaults to $MAKAI_PI_CLIENT_DIR, else ~/.cache/makai/pi-client. Nothing is
# installed inside the repository. Prints the folder on success. Exits 3 (and
# says why) when node or npm is missing or the install fails, so callers can skip.
set -euo pipefail

dir="${1:-${MAKAI_PI_CLIENT_DIR:-${HOME}/.cache/makai/pi-client}}"
version="${MAKAI_PI_CLIENT_VERSION:-0.73.1}"

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "setup-pi-client: '$tool' is not installed; install Node.js 20+ to run the pi RPC client test" >&2
    exit 3
  fi
done

marker="$dir/node_modules/@mariozechner/pi-coding-agent/package.json"
if [ -f "$marker" ] && grep -q "\"version\": \"$version\"" "$marker"; then
  echo "$dir"
  exit 0
fi

mkdir -p "$dir"
limit=""
if command -v timeout >/dev/null 2>&1; then
  limit="timeout ${MAKAI_PI_CLIENT_INSTALL_TIMEOUT:-300}"
fi
if ! $limit npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
    "@mariozechner/pi-coding-agent@$version" >&2; then
  echo "setup-pi-client: npm install of @mariozechner/pi-coding-agent@$version into $dir failed" >&2
  exit 3
fi
if [ ! -f "$marker" ]; then
  echo "setup-pi-client: the package did not land in $dir/node_modules" >&2
  exit 3
fi
echo "$dir"
