#!/usr/bin/env bash
# The standard agent-loop workload: makai, yoagent and pi-agent-core side by side
# in one run, against one scripted server per pacing.
#
#   scripts/bench-peers.sh                  # medians of 3, both APIs, all tables
#   N=5 APIS=openai-completions TABLES="stream" scripts/bench-peers.sh
#
# Workload: 200 runs x 6 responses x 200 tokens, 5 tool rounds, every run verified
# (crates/makai-agent/examples/loop_bench). Tables (TABLES, default all three):
#   stream   the headline: the server writes each SSE event on its own, as a
#            provider streaming token by token does (one read per event),
#            concurrency 1 and 50 (CONCURRENCY_LIST);
#   paced    the same at 1 ms per token (DELAY_US), concurrency 50;
#   replay   each response in one write (a few large reads per response): the
#            decoding cost alone, not what users see.
# Each row starts with the floor: the same streams read and thrown away by a
# client that parses nothing (crates/makai-mockllm/examples/read_floor, Tokio's
# current-thread runtime), the per-event cost the kernel and the wake-ups put
# under every client on this machine.
# Every configuration runs each peer N times, the peers interleaved run by run so
# they share the machine's load; printed: median CPU time (user+sys) and peak
# resident memory of the peer's process, CPU per token event (1,200 text deltas
# per run), and the multiples against makai on the runtime the `makai` CLI runs
# a session on (Tokio's multi-thread runtime with one worker, the session a task
# on it). makai also runs on two workers (`makai serve`'s runtime on two cores),
# each figure with its ratio to current-thread. "CLI above the floor" is the
# CLI's runtime less the floor, per token event: the part that is makai's own.
# "makai as the binary reads" is the CLI's runtime with the `makai` binary's
# read interval (READ_INTERVAL_US, default 16000: StreamOptions::read_interval,
# the streamReadIntervalMs setting), with its ratio to the CLI's runtime
# reading every event; the other makai columns read as data arrives, the
# library's default.
#
# Builds makai's bench (profile release-lto) and the scripted server; yoagent
# 0.26.6's bench (benches/peers/yoagent_loop_bench, its own workspace, release)
# unless YOAGENT=0; pi runs when node and pi's packages are present
# (scripts/setup-pi-client.sh installs them) unless PI=0.
set -euo pipefail
cd "$(dirname "$0")/.."

N="${N:-3}"
APIS="${APIS:-openai-completions anthropic-messages}"
CONCURRENCY_LIST="${CONCURRENCY_LIST:-1 50}"
TABLES="${TABLES:-stream paced replay}"
DELAY_US="${DELAY_US:-1000}"
PROFILE="${PROFILE:-release-lto}"
TOKENS="${TOKENS:-200}"
TOOL_ROUNDS="${TOOL_ROUNDS:-5}"
RUNS="${RUNS:-200}"
READ_INTERVAL="${READ_INTERVAL_US:-16000}"
unset READ_INTERVAL_US # the other makai columns read as data arrives
target="${CARGO_TARGET_DIR:-target}"

cargo build --quiet --profile "$PROFILE" -p makai-mockllm --bin makai-mockllm
cargo build --quiet --profile "$PROFILE" -p makai-agent --example loop_bench
cargo build --quiet --profile "$PROFILE" -p makai-mockllm --example read_floor
cargo build --quiet --profile "$PROFILE" -p makai-mockllm --example cpu_time
makai_bench="$target/$PROFILE/examples/loop_bench"
floor_bench="$target/$PROFILE/examples/read_floor"
cpu_time="$target/$PROFILE/examples/cpu_time"

yoagent_bench=""
if [ "${YOAGENT:-1}" != 0 ]; then
  if cargo build --quiet --release --manifest-path benches/peers/yoagent_loop_bench/Cargo.toml \
      --target-dir "$target/peers"; then
    yoagent_bench="$target/peers/release/yoagent-loop-bench"
  else
    echo "bench-peers: yoagent's bench did not build; running without it" >&2
  fi
fi

pi_modules=""
if [ "${PI:-1}" != 0 ] && command -v node >/dev/null 2>&1; then
  if dir=$(scripts/setup-pi-client.sh 2>/dev/null); then pi_modules="$dir/node_modules"; fi
fi

out=$(mktemp -d)
servers=()
trap 'for s in "${servers[@]}"; do kill "$s" 2>/dev/null || true; done; rm -rf "$out"' EXIT

# start_server NAME ARGS...: a scripted server; sets $url to its base URL.
start_server() {
  local name=$1
  shift
  "$target/$PROFILE/makai-mockllm" --port 0 --no-record --bench-tokens "$TOKENS" \
    --bench-tool-rounds "$TOOL_ROUNDS" "$@" > "$out/server-$name" &
  servers+=($!)
  for _ in $(seq 100); do grep -q "listening on" "$out/server-$name" 2>/dev/null && break; sleep 0.05; done
  url="$(sed -n 's/^listening on //p' "$out/server-$name")/v1"
}

# run_once FILE CMD...: one verified run; appends "cpu_s peak_kib" to FILE.
run_once() {
  local file=$1
  shift
  # CPU time to the microsecond (examples/cpu_time.rs): /usr/bin/time prints
  # hundredths, too coarse for the replay rows.
  "$cpu_time" "$out/t" "$@" > "$out/line" 2>"$out/err" || {
    echo "FAILED: $* ($(cat "$out/err"))" >&2; return 1; }
  grep -q "verified=ok" "$out/line" || { echo "unverified: $(cat "$out/line")" >&2; return 1; }
  awk '{printf "%.4f %d\n", $1, $2}' "$out/t" >> "$file"
}

# median FILE COLUMN
median() {
  cut -d' ' -f"$2" "$1" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'
}

token_events=$((RUNS * TOKENS * (TOOL_ROUNDS + 1)))

# table TITLE URL CONCURRENCIES
table() {
  local title=$1 url=$2 concurrencies=$3
  echo
  echo "### $title"
  echo
  echo "| API, concurrency | floor (read, parse nothing) | makai current-thread | makai, the CLI's runtime (multi-thread, 1 worker) | CLI / current | CLI above the floor | makai multi-thread, 2 workers (/ current) | makai as the binary reads (every $((READ_INTERVAL / 1000)) ms; / CLI's runtime) | yoagent 0.26.6 | pi-agent-core 0.73.1 |"
  echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
  for api in $APIS; do
    for c in $concurrencies; do
      export MOCK_URL="$url" API="$api" CONCURRENCY="$c" RUNS TOKENS TOOL_ROUNDS
      rm -f "$out"/runs-*
      for _ in $(seq "$N"); do
        READER=tokio run_once "$out/runs-floor" "$floor_bench"
        RUNTIME=current-thread run_once "$out/runs-ct" "$makai_bench"
        RUNTIME=multi-thread WORKERS=1 run_once "$out/runs-mt" "$makai_bench"
        RUNTIME=multi-thread WORKERS=2 run_once "$out/runs-mt2" "$makai_bench"
        READ_INTERVAL_US="$READ_INTERVAL" RUNTIME=multi-thread WORKERS=1 \
          run_once "$out/runs-mtp" "$makai_bench"
        if [ -n "$yoagent_bench" ]; then run_once "$out/runs-yo" "$yoagent_bench"; fi
        if [ -n "$pi_modules" ]; then
          PI_MODULES="$pi_modules" run_once "$out/runs-pi" node benches/peers/pi_loop_bench.mjs
        fi
      done
      local mt_cpu mt_rss row
      mt_cpu=$(median "$out/runs-mt" 1)
      mt_rss=$(median "$out/runs-mt" 2)
      row="| $api, $c"
      for peer in floor ct mt mt2 mtp yo pi; do
        if [ ! -f "$out/runs-$peer" ]; then
          row="$row | n/a"
          continue
        fi
        local cpu rss cell
        cpu=$(median "$out/runs-$peer" 1)
        rss=$(median "$out/runs-$peer" 2)
        cell=$(awk -v c="$cpu" -v r="$rss" -v e="$token_events" \
          'BEGIN{printf "%.2f s (%.2f µs/token), %.1f MiB", c, c * 1e6 / e, r / 1024}')
        case $peer in
          mt|mt2)
            local ratio
            ratio=$(awk -v m="$cpu" -v c="$(median "$out/runs-ct" 1)" \
              'BEGIN{if (c > 0) printf "%.2fx", m / c; else printf "n/a"}')
            if [ "$peer" = mt ]; then
              # makai's own part of the cost: the CLI's runtime less the floor.
              local above
              above=$(awk -v m="$cpu" -v f="$(median "$out/runs-floor" 1)" -v e="$token_events" \
                'BEGIN{printf "%.2f µs/token", (m - f) * 1e6 / e}')
              cell="$cell | $ratio | $above"
            else
              cell="$cell ($ratio)"
            fi ;;
          mtp)
            cell="$cell ($(awk -v p="$cpu" -v m="$mt_cpu" \
              'BEGIN{if (m > 0) printf "%.2fx", p / m; else printf "n/a"}'))" ;;
          yo|pi)
            cell="$cell: $(awk -v c="$cpu" -v m="$mt_cpu" -v r="$rss" -v mr="$mt_rss" \
              'BEGIN{if (m > 0) printf "%.1fx CPU, %.1fx memory", c / m, r / mr; else printf "n/a"}')" ;;
        esac
        row="$row | $cell"
      done
      echo "$row |"
    done
  done
}

echo "Medians of $N runs, peers interleaved run by run; $RUNS runs x $((TOOL_ROUNDS + 1)) responses x $TOKENS tokens per workload; multiples against makai on the CLI's runtime."
for t in $TABLES; do
  case $t in
    stream)
      start_server stream --bench-stream
      table "Streaming: one SSE event per write, no delay" "$url" "$CONCURRENCY_LIST" ;;
    paced)
      start_server paced --bench-delay-us "$DELAY_US"
      table "Streaming: one SSE event per write, ${DELAY_US} µs apart" "$url" "50" ;;
    replay)
      start_server replay
      table "Replay: each response in one write (decoding cost, not what users see)" \
        "$url" "$CONCURRENCY_LIST" ;;
    *) echo "bench-peers: unknown table $t (stream, paced, replay)" >&2; exit 2 ;;
  esac
done
