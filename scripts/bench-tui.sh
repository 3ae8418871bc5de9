#!/usr/bin/env bash
# The interactive UI streaming one answer in a real terminal (tmux, COLS x
# ROWS): CPU per token event in interactive mode, the mode users meet first,
# in each of MODES (pi's two: fullscreen, the default, and regular).
#
#   scripts/bench-tui.sh                          # medians of 5, 3,000 tokens, 1 ms apart
#   N=7 TOKENS=6000 PARAGRAPH=0 scripts/bench-tui.sh
#   MODES=regular scripts/bench-tui.sh
#   OTHER="/path/to/an/older/makai ..." scripts/bench-tui.sh   # all, interleaved
#   (a makai older than regular mode: MODES=fullscreen)
#
# Each run starts `makai` in a detached tmux session, types `hi`, waits for
# the answer's last token on the screen and exits with Ctrl+D. The answer is
# makai-mockllm's bench script, TOKENS text deltas DELAY_US apart, each SSE
# event its own write, in paragraphs of PARAGRAPH tokens (0: one paragraph),
# as a model writes. A run against a two-token answer is measured the same
# way, and the difference over TOKENS is the CPU per token event (start-up and
# the exit cancel out; what waiting costs, the UI's 30 Hz tick, does not
# quite). Printed: median CPU per token event and the median peak resident
# memory of the long runs, and the terminal's side: the CPU the tmux server
# spent from the prompt to the answer's end (what a terminal emulator spends
# parsing and painting what makai writes; /proc's ticks, 10 ms), per token
# event, the short answer's subtracted likewise. Needs tmux.
set -euo pipefail
cd "$(dirname "$0")/.."

N="${N:-5}"
TOKENS="${TOKENS:-3000}"
DELAY_US="${DELAY_US:-1000}"
PARAGRAPH="${PARAGRAPH:-60}"
COLS="${COLS:-120}"
ROWS="${ROWS:-40}"
MODES="${MODES:-fullscreen regular}"
PROFILE="${PROFILE:-release-lto}"
target="${CARGO_TARGET_DIR:-target}"

command -v tmux > /dev/null || { echo "bench-tui.sh needs tmux" >&2; exit 2; }
source scripts/bench-lib.sh
bench_build
bench_bins

out=$(mktemp -d)
sock="makai-bench-tui-$$"
servers=()
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; for s in "${servers[@]}"; do kill "$s" 2>/dev/null || true; done; rm -rf "$out"' EXIT

start_server long "$TOKENS" --bench-delay-us "$DELAY_US" --bench-paragraph "$PARAGRAPH"
long_url=$url
start_server short 2 --bench-paragraph "$PARAGRAPH"
short_url=$url

mkdir -p "$out/home"

# server_ticks: the CPU clock ticks (user + system) of the tmux server.
server_ticks() {
  local pid
  pid=$(tmux -L "$sock" display-message -p '#{pid}')
  awk '{print $14 + $15}' "/proc/$pid/stat"
}

# run_once FILE BIN URL MODE: one run; appends "cpu_s peak_kib terminal_ticks user_s" to FILE.
run_once() {
  local file=$1 bin=$2 url=$3 mode=$4
  rm -f "$out/t"
  tmux -L "$sock" new-session -d -s bench -x "$COLS" -y "$ROWS" \
    "env MAKAI_HOME='$out/home' MAKAI_AUTO_TITLE=0 MAKAI_AUTO_LOCAL=0 '$cpu_time' '$out/t' '$bin' --tui-mode '$mode' --no-session --no-tools --base-url '$url' --api openai-completions --model mock-model 2> '$out/stderr'"
  wait_for "enter send"
  local ticks_before ticks_after
  ticks_before=$(server_ticks)
  tmux -L "$sock" send-keys -t bench -l hi
  tmux -L "$sock" send-keys -t bench Enter
  wait_for "[final]"
  ticks_after=$(server_ticks)
  tmux -L "$sock" send-keys -t bench C-d
  for _ in $(seq 200); do [ -s "$out/t" ] && break; sleep 0.05; done
  [ -s "$out/t" ] || { echo "bench-tui.sh: makai did not exit" >&2; cat "$out/stderr" >&2; exit 1; }
  awk -v t=$((ticks_after - ticks_before)) '{printf "%.6f %d %d %.6f\n", $1, $2, t, $3}' "$out/t" >> "$file"
}


for _ in $(seq "$N"); do
  for i in "${!bins[@]}"; do
    for mode in $MODES; do
      run_once "$out/long-$i-$mode" "${bins[$i]}" "$long_url" "$mode"
      run_once "$out/short-$i-$mode" "${bins[$i]}" "$short_url" "$mode"
    done
  done
done

echo "### The interactive UI at ${COLS}x${ROWS}: one answer of $TOKENS token events, ${DELAY_US} µs apart, paragraphs of $PARAGRAPH (medians of $N)"
echo
echo "| binary | mode | CPU per token event | of which user | CPU of the answer | the long run, the short one | peak memory | the terminal's (tmux) CPU per token event |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
tick=$(getconf CLK_TCK)
for i in "${!bins[@]}"; do
  for mode in $MODES; do
    long=$(median "$out/long-$i-$mode" 1)
    short=$(median "$out/short-$i-$mode" 1)
    rss=$(median "$out/long-$i-$mode" 2)
    tlong=$(median "$out/long-$i-$mode" 3)
    tshort=$(median "$out/short-$i-$mode" 3)
    ulong=$(median "$out/long-$i-$mode" 4)
    ushort=$(median "$out/short-$i-$mode" 4)
    awk -v b="${bins[$i]}" -v m="$mode" -v l="$long" -v s="$short" -v t="$TOKENS" -v r="$rss" \
      -v tl="$tlong" -v ts="$tshort" -v hz="$tick" -v ul="$ulong" -v us="$ushort" \
      'BEGIN{printf "| %s | %s | %.2f µs | %.2f µs | %.3f s | %.3f s, %.3f s | %.1f MiB | %.2f µs |\n", b, m, (l - s) * 1e6 / t, (ul - us) * 1e6 / t, l - s, l, s, r / 1024, (tl - ts) / hz * 1e6 / t}'
  done
done
