#!/usr/bin/env bash
# A long session resumed: CPU and peak memory of one more turn in a session
# of TURNS earlier turns (each a question, a `bash` call, its 25-line
# output and a markdown answer: about 3.2 KB of JSONL a turn), in the
# interactive UI (tmux, COLS x ROWS, each of MODES) and in print mode.
#
#   scripts/bench-long-session.sh                       # 2,000 turns, medians of 5
#   N=3 TURNS=500 scripts/bench-long-session.sh
#   OTHER="/path/to/an/older/makai ..." scripts/bench-long-session.sh   # interleaved
#
# Each run copies the generated session file, resumes it with `--session`,
# sends `hi` (answered by makai-mockllm's bench script: TOKENS tokens, no
# tool round; compaction off, the session being past any context window)
# and exits (the UI with Ctrl+D once the answer's last token
# shows). Printed per binary and mode: the median CPU (user + system) and
# peak resident memory of the whole run, start-up and exit included, and
# the same for a run without a session (`--no-session`): the difference is
# what the long session costs. Needs tmux and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

N="${N:-5}"
TURNS="${TURNS:-2000}"
TOKENS="${TOKENS:-200}"
COLS="${COLS:-120}"
ROWS="${ROWS:-40}"
MODES="${MODES:-fullscreen regular print}"
PROFILE="${PROFILE:-release-lto}"
target="${CARGO_TARGET_DIR:-target}"

command -v tmux > /dev/null || { echo "bench-long-session.sh needs tmux" >&2; exit 2; }
command -v python3 > /dev/null || { echo "bench-long-session.sh needs python3" >&2; exit 2; }
source scripts/bench-lib.sh
bench_build
bench_bins

out=$(mktemp -d)
sock="makai-bench-long-$$"
servers=()
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; for s in "${servers[@]}"; do kill "$s" 2>/dev/null || true; done; rm -rf "$out"' EXIT

start_server answer "$TOKENS"
mkdir -p "$out/home" "$out/work"
# The session is far past the mock model's context window: no compaction,
# the turn is sent whole.
echo '{"compaction": {"enabled": false}}' > "$out/home/settings.json"

# The session: pi's format (version 3), one branch of TURNS turns.
python3 - "$TURNS" "$out/long.jsonl" "$out/work" <<'EOF'
import json, random, sys
turns, path, cwd = int(sys.argv[1]), sys.argv[2], sys.argv[3]
random.seed(1)
words = "the quick brown fox jumps over a lazy dog while the agent reads files and writes code with tests".split()
def para(k): return " ".join(random.choice(words) for _ in range(k))
usage = {"input": 100, "output": 50, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 150,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
lines = [json.dumps({"type": "session", "version": 3, "id": "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
                     "timestamp": "2026-11-29T00:00:00.000Z", "cwd": cwd})]
parent, n = None, 0
def add(message):
    global parent, n
    n += 1
    entry = "%08x" % n
    lines.append(json.dumps({"type": "message", "id": entry, "parentId": parent,
                             "timestamp": "2026-11-29T00:00:00.000Z", "message": message}))
    parent = entry
def assistant(content, stop):
    return {"role": "assistant", "content": content, "api": "openai-completions", "provider": "mock",
            "model": "mock-model", "usage": usage, "stopReason": stop, "timestamp": 0}
for t in range(turns):
    add({"role": "user", "content": [{"type": "text", "text": "question %d: %s" % (t, para(20))}], "timestamp": 0})
    add(assistant([{"type": "text", "text": "Let me look. " + para(30)},
                   {"type": "toolCall", "id": "c%d" % t, "name": "bash", "arguments": {"command": "ls -la src/%d" % t}}],
                  "toolUse"))
    add({"role": "toolResult", "toolCallId": "c%d" % t, "toolName": "bash",
         "content": [{"type": "text", "text": "\n".join("file%d.rs %s" % (k, para(6)) for k in range(25))}],
         "isError": False, "timestamp": 0})
    add(assistant([{"type": "text", "text": "## Answer %d\n\n%s\n\n- %s\n- %s\n\n```rust\nfn f() { let x = %d; }\n```\n"
                    % (t, para(60), para(10), para(10), t)}], "stop"))
open(path, "w").write("\n".join(lines) + "\n")
EOF

# run_once FILE BIN MODE SESSION: one run; appends "cpu_s peak_kib" to FILE.
run_once() {
  local file=$1 bin=$2 mode=$3 session=$4
  local args=(--no-tools --base-url "$url" --api openai-completions --model mock-model)
  if [ "$session" = long ]; then
    cp "$out/long.jsonl" "$out/run.jsonl"
    args+=(--session "$out/run.jsonl")
  else
    args+=(--no-session)
  fi
  rm -f "$out/t"
  if [ "$mode" = print ]; then
    (cd "$out/work" && env MAKAI_HOME="$out/home" MAKAI_AUTO_TITLE=0 MAKAI_AUTO_LOCAL=0 \
      "$cpu_time" "$out/t" "$bin" -p "${args[@]}" hi > "$out/stdout")
  else
    tmux -L "$sock" new-session -d -s bench -x "$COLS" -y "$ROWS" -c "$out/work" \
      "env MAKAI_HOME='$out/home' MAKAI_AUTO_TITLE=0 MAKAI_AUTO_LOCAL=0 '$cpu_time' '$out/t' '$bin' --tui-mode '$mode' ${args[*]} 2> '$out/stderr'"
    wait_for "mock-model" 120
    tmux -L "$sock" send-keys -t bench -l hi
    tmux -L "$sock" send-keys -t bench Enter
    # The answer's last word, then its end mark: `[final]`, or, after the
    # session's own tool calls, `[bad-tool-result]` (the bench script checks
    # the tool results it asked for).
    wait_for "w$((TOKENS - 2)) [" 120
    tmux -L "$sock" send-keys -t bench C-d
    for _ in $(seq 400); do [ -s "$out/t" ] && break; sleep 0.05; done
    [ -s "$out/t" ] || { echo "bench-long-session.sh: makai did not exit" >&2; cat "$out/stderr" >&2; exit 1; }
  fi
  awk '{printf "%.6f %d\n", $1, $2}' "$out/t" >> "$file"
}

for _ in $(seq "$N"); do
  for i in "${!bins[@]}"; do
    for mode in $MODES; do
      run_once "$out/long-$i-$mode" "${bins[$i]}" "$mode" long
      run_once "$out/none-$i-$mode" "${bins[$i]}" "$mode" none
    done
  done
done

size=$(du -k "$out/long.jsonl" | cut -f1)
echo "### One more turn in a session of $TURNS turns ($((size / 1024)) MiB of JSONL), answer $TOKENS tokens (medians of $N)"
echo
echo "| binary | mode | CPU, the long session | CPU, no session | peak memory, the long session | peak memory, no session |"
echo "| --- | --- | --- | --- | --- | --- |"
for i in "${!bins[@]}"; do
  for mode in $MODES; do
    awk -v b="${bins[$i]}" -v m="$mode" \
      -v lc="$(median "$out/long-$i-$mode" 1)" -v nc="$(median "$out/none-$i-$mode" 1)" \
      -v lr="$(median "$out/long-$i-$mode" 2)" -v nr="$(median "$out/none-$i-$mode" 2)" \
      'BEGIN{printf "| %s | %s | %.3f s | %.3f s | %.1f MiB | %.1f MiB |\n", b, m, lc, nc, lr / 1024, nr / 1024}'
  done
done
