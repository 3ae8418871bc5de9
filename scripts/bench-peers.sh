#!/usr/bin/env bash
# The standard agent-loop workload, makai and pi-agent-core side by side in one run.
#
#   scripts/bench-peers.sh            # 5 runs of each, both APIs, concurrency 1 and 50
#   N=7 APIS=openai-completions CONCURRENCY_LIST="1" scripts/bench-peers.sh
#
# Builds makai's bench (profile release-lto) and the scripted server, starts the
# server once, then runs each peer N times per configuration against it and prints
# the median CPU time (user+sys) and peak resident memory of the peer's process,
# and pi's figures as a multiple of makai's. pi runs when node and pi's packages
# are present (scripts/setup-pi-client.sh installs them); otherwise only makai.
set -euo pipefail
cd "$(dirname "$0")/.."

N="${N:-5}"
APIS="${APIS:-openai-completions anthropic-messages}"
CONCURRENCY_LIST="${CONCURRENCY_LIST:-1 50}"
PROFILE="${PROFILE:-release-lto}"

cargo build --quiet --profile "$PROFILE" -p makai-mockllm --bin makai-mockllm
cargo build --quiet --profile "$PROFILE" -p makai-agent --example loop_bench
makai_bench="target/$PROFILE/examples/loop_bench"

pi_modules=""
if command -v node >/dev/null 2>&1; then
  if dir=$(scripts/setup-pi-client.sh 2>/dev/null); then pi_modules="$dir/node_modules"; fi
fi

out=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$out"' EXIT
"target/$PROFILE/makai-mockllm" --port 0 --no-record --bench-tokens "${TOKENS:-200}" \
  --bench-tool-rounds "${TOOL_ROUNDS:-5}" > "$out/server" &
server=$!
for _ in $(seq 100); do grep -q "listening on" "$out/server" 2>/dev/null && break; sleep 0.05; done
url="$(sed -n 's/^listening on //p' "$out/server")/v1"

# median CPU seconds and median peak RSS (KiB) of N runs of "$@"
measure() {
  : > "$out/runs"
  for _ in $(seq "$N"); do
    /usr/bin/time -f "%U %S %M" -o "$out/t" "$@" > "$out/line" 2>"$out/err" || {
      echo "FAILED: $* ($(cat "$out/err"))" >&2; return 1; }
    grep -q "verified=ok" "$out/line" || { echo "unverified: $(cat "$out/line")" >&2; return 1; }
    awk '{printf "%.3f %d\n", $1 + $2, $3}' "$out/t" >> "$out/runs"
  done
  cpu=$(cut -d' ' -f1 "$out/runs" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  rss=$(cut -d' ' -f2 "$out/runs" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  echo "$cpu $rss"
}

printf "%-19s %-5s %-22s %9s %12s\n" api conc peer cpu_s peak_mib
for api in $APIS; do
  for c in $CONCURRENCY_LIST; do
    export MOCK_URL="$url" API="$api" CONCURRENCY="$c"
    read -r m_cpu m_rss < <(RUNTIME=current-thread measure "$makai_bench")
    printf "%-19s %-5s %-22s %9s %12.1f\n" "$api" "$c" "makai (current-thread)" "$m_cpu" "$(echo "$m_rss/1024" | bc -l)"
    read -r t_cpu t_rss < <(RUNTIME=multi-thread measure "$makai_bench")
    printf "%-19s %-5s %-22s %9s %12.1f\n" "$api" "$c" "makai (multi-thread)" "$t_cpu" "$(echo "$t_rss/1024" | bc -l)"
    if [ -n "$pi_modules" ]; then
      read -r p_cpu p_rss < <(PI_MODULES="$pi_modules" measure node benches/peers/pi_loop_bench.mjs)
      printf "%-19s %-5s %-22s %9s %12.1f   (%.1fx the CPU, %.1fx the memory of makai current-thread)\n" \
        "$api" "$c" "pi-agent-core" "$p_cpu" "$(echo "$p_rss/1024" | bc -l)" \
        "$(echo "$p_cpu/$m_cpu" | bc -l)" "$(echo "$p_rss/$m_rss" | bc -l)"
    fi
  done
done
