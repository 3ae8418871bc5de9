#!/usr/bin/env bash
# Fetches pi's own RPC client from the npm package of a pi release (default
# 1.5.2, `@earendil-works/pi-coding-agent`) for the makai-cli test that drives
# `makai --mode rpc` with it. Only the two files the client needs are kept
# (dist/modes/rpc/rpc-client.js and its neighbour jsonl.js, which import
# nothing else): installing the whole package fails on registries that lack one
# of its dependencies, and the client needs none of them.
#
#   scripts/setup-pi-rpc-client.sh [VERSION]
#
# Files go to $MAKAI_PI_RPC_CLIENT_DIR, else ~/.cache/makai/pi-rpc-client/VERSION;
# nothing is written inside the repository. Prints the folder on success.
# Exits 3 (saying why) when node/npm is missing or the download fails.
set -euo pipefail

version="${1:-1.5.2}"
package="@earendil-works/pi-coding-agent"
dir="${MAKAI_PI_RPC_CLIENT_DIR:-${HOME}/.cache/makai/pi-rpc-client/$version}"

for tool in node npm tar; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "setup-pi-rpc-client: '$tool' is not installed; install Node.js 20+ to run the pi $version RPC client test" >&2
    exit 3
  fi
done

if [ -f "$dir/rpc-client.js" ] && [ -f "$dir/jsonl.js" ] && [ -f "$dir/VERSION" ] \
    && [ "$(cat "$dir/VERSION")" = "$version" ]; then
  echo "$dir"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
limit=""
if command -v timeout >/dev/null 2>&1; then
  limit="timeout ${MAKAI_PI_CLIENT_INSTALL_TIMEOUT:-300}"
fi
if ! (cd "$work" && $limit npm pack --silent "$package@$version" >/dev/null); then
  echo "setup-pi-rpc-client: npm pack $package@$version failed" >&2
  exit 3
fi
tarball=$(ls "$work"/*.tgz 2>/dev/null | head -n1)
if [ -z "$tarball" ]; then
  echo "setup-pi-rpc-client: npm pack produced no tarball" >&2
  exit 3
fi
tar -xzf "$tarball" -C "$work" package/dist/modes/rpc/rpc-client.js package/dist/modes/rpc/jsonl.js package/package.json
if ! grep -q "\"version\": \"$version\"" "$work/package/package.json"; then
  echo "setup-pi-rpc-client: the tarball is not version $version" >&2
  exit 3
fi
mkdir -p "$dir"
cp "$work/package/dist/modes/rpc/rpc-client.js" "$work/package/dist/modes/rpc/jsonl.js" "$dir/"
# The files are ES modules; a package.json beside them says so to node.
printf '{"type": "module"}\n' > "$dir/package.json"
echo "$version" > "$dir/VERSION"
echo "$dir"
