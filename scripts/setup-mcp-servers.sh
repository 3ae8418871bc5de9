#!/usr/bin/env bash
# Installs the official MCP reference servers and the MCP inspector CLI (npm
# packages) into a cache folder, for the makai-mcp tests that run them as real
# processes:
#
#   @modelcontextprotocol/server-everything   (every MCP feature, incl. progress)
#   @modelcontextprotocol/server-filesystem   (file tools confined to given folders)
#   @modelcontextprotocol/inspector           (its `--cli` mode is an independent MCP
#                                              client; it checks `makai mcp serve`. The
#                                              standalone @modelcontextprotocol/inspector-cli
#                                              1.0.x cannot start outside the inspector's
#                                              own repository, so the full package is used.)
#
#   scripts/setup-mcp-servers.sh [DIR]
#
# DIR defaults to $MAKAI_MCP_SERVERS_DIR, else ~/.cache/makai/mcp-servers.
# Nothing is installed inside the repository. Prints the folder on success.
# Exits 3 (and says why) when node or npm is missing or the install fails, so
# callers can skip. Versions can be pinned with MAKAI_MCP_EVERYTHING_VERSION,
# MAKAI_MCP_FILESYSTEM_VERSION and MAKAI_MCP_INSPECTOR_VERSION.
set -euo pipefail

dir="${1:-${MAKAI_MCP_SERVERS_DIR:-${HOME}/.cache/makai/mcp-servers}}"
everything="${MAKAI_MCP_EVERYTHING_VERSION:-2026.8.31}"
filesystem="${MAKAI_MCP_FILESYSTEM_VERSION:-2026.8.31}"
inspector="${MAKAI_MCP_INSPECTOR_VERSION:-2.12.0}"

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "setup-mcp-servers: '$tool' is not installed; install Node.js 20+ to run the MCP reference-server tests" >&2
    exit 3
  fi
done

# One marker per package: "<name>@<version>" installed when its package.json says so.
installed() {
  local pkg="$1" version="$2"
  local manifest="$dir/node_modules/$pkg/package.json"
  [ -f "$manifest" ] && grep -q "\"version\": \"$version\"" "$manifest"
}

if installed @modelcontextprotocol/server-everything "$everything" \
  && installed @modelcontextprotocol/server-filesystem "$filesystem" \
  && installed @modelcontextprotocol/inspector "$inspector"; then
  echo "$dir"
  exit 0
fi

mkdir -p "$dir"
# Test binaries may run this at the same time: one installs, the others wait.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$dir/.install.lock"
  flock 9
  if installed @modelcontextprotocol/server-everything "$everything" \
    && installed @modelcontextprotocol/server-filesystem "$filesystem" \
    && installed @modelcontextprotocol/inspector "$inspector"; then
    echo "$dir"
    exit 0
  fi
fi
limit=""
if command -v timeout >/dev/null 2>&1; then
  limit="timeout ${MAKAI_MCP_INSTALL_TIMEOUT:-600}"
fi
if ! $limit npm install --prefix "$dir" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/server-everything@$everything" \
    "@modelcontextprotocol/server-filesystem@$filesystem" \
    "@modelcontextprotocol/inspector@$inspector" >&2; then
  echo "setup-mcp-servers: npm install into $dir failed" >&2
  exit 3
fi
for pkg in server-everything server-filesystem inspector; do
  if [ ! -f "$dir/node_modules/@modelcontextprotocol/$pkg/package.json" ]; then
    echo "setup-mcp-servers: @modelcontextprotocol/$pkg did not land in $dir/node_modules" >&2
    exit 3
  fi
done
echo "$dir"
