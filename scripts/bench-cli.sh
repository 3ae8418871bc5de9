#!/usr/bin/env bash
# The `makai` binary itself streaming one answer, in print, JSON and RPC mode:
# CPU per token event where users meet it (the agent-loop bench measures the
# library on the CLI's runtime; this adds what the modes do with each event).
#
#   scripts/bench-cli.sh                       # medians of 5, 3,000 tokens, 1 ms apart
#   N=7 TOKENS=3000 DELAY_US=0 scripts/bench-cli.sh
#   OTHER="/path/to/an/older/makai ..." scripts/bench-cli.sh   # all, interleaved
#
# Each run answers one prompt with one streamed response of TOKENS text
# deltas (makai-mockllm's bench script, each SSE event its own write, DELAY_US
# apart), with sessions and titles off. A run against a two-token answer is
# measured the same way, and the difference over TOKENS is the CPU per token
# event (start-up cancels out). Runs are interleaved so the binaries and modes
# share the machine's load. Printed: median CPU per token event and the
# median peak resident memory of the long runs.
set -euo pipefail
cd "$(dirname "$0")/.."

N="${N:-5}"
TOKENS="${TOKENS:-3000}"
DELAY_US="${DELAY_US:-1000}"
PROFILE="${PROFILE:-release-lto}"
target="${CARGO_TARGET_DIR:-target}"

source scripts/bench-lib.sh
bench_build
bins=("$target/$PROFILE/makai")
for other in ${OTHER:-}; do bins+=("$other"); done

out=$(mktemp -d)
servers=()
trap 'for s in "${servers[@]}"; do kill "$s" 2>/dev/null || true; done; rm -rf "$out"' EXIT

start_server long "$TOKENS" --bench-delay-us "$DELAY_US"
long_url=$url
start_server short 2
short_url=$url

export MAKAI_HOME="$out/home" MAKAI_AUTO_TITLE=0 MAKAI_AUTO_LOCAL=0
mkdir -p "$MAKAI_HOME"

# run_once FILE BIN MODE URL: one run; appends "cpu_s peak_kib" to FILE.
run_once() {
  local file=$1 bin=$2 mode=$3 url=$4
  rm -f "$out/stdout"
  local args=(--no-session --no-tools --base-url "$url" --api openai-completions --model mock-model)
  case $mode in
    print) "$cpu_time" "$out/t" "$bin" -p "${args[@]}" hi > "$out/stdout" ;;
    json) "$cpu_time" "$out/t" "$bin" --mode json "${args[@]}" hi > "$out/stdout" ;;
    rpc)
      # The prompt, then stdin stays open until the answer has ended.
      { echo '{"type":"prompt","message":"hi"}'
        for _ in $(seq 600); do grep -q '"agent_settled"' "$out/stdout" 2>/dev/null && break; sleep 0.02; done
      } | "$cpu_time" "$out/t" "$bin" --mode rpc "${args[@]}" > "$out/stdout" ;;
  esac
  awk '{printf "%.6f %d\n", $1, $2}' "$out/t" >> "$file"
}


for _ in $(seq "$N"); do
  for i in "${!bins[@]}"; do
    for mode in print json rpc; do
      run_once "$out/long-$i-$mode" "${bins[$i]}" "$mode" "$long_url"
      run_once "$out/short-$i-$mode" "${bins[$i]}" "$mode" "$short_url"
    done
  done
done

echo "### The makai binary: one answer of $TOKENS token events, ${DELAY_US} µs apart (medians of $N)"
echo
echo "| binary | mode | CPU per token event | peak memory |"
echo "| --- | --- | --- | --- |"
for i in "${!bins[@]}"; do
  for mode in print json rpc; do
    long=$(median "$out/long-$i-$mode" 1)
    short=$(median "$out/short-$i-$mode" 1)
    rss=$(median "$out/long-$i-$mode" 2)
    awk -v b="${bins[$i]}" -v m="$mode" -v l="$long" -v s="$short" -v t="$TOKENS" -v r="$rss" \
      'BEGIN{printf "| %s | %s | %.2f µs | %.1f MiB |\n", b, m, (l - s) * 1e6 / t, r / 1024}'
  done
done
