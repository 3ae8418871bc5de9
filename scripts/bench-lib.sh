# Shared by the scripts/bench-*.sh scripts (sourced): the builds, the
# binaries compared, the scripted servers, the screen waits and the medians.
# Uses $PROFILE, $target, $out, $sock (the tmux socket) and the array
# $servers, which the caller sets (and kills at exit).

# bench_build: builds makai (unless NO_BUILD=1: the one built is measured),
# makai-mockllm and cpu_time; sets $cpu_time.
bench_build() {
  [ "${NO_BUILD:-}" = 1 ] || cargo build --quiet --profile "$PROFILE" -p makai-cli --bin makai
  cargo build --quiet --profile "$PROFILE" -p makai-mockllm --bin makai-mockllm
  cargo build --quiet --profile "$PROFILE" -p makai-mockllm --example cpu_time
  cpu_time="$(pwd)/$target/$PROFILE/examples/cpu_time"
}

# bench_bins: sets the array $bins: this tree's makai, then each of $OTHER.
bench_bins() {
  bins=("$(pwd)/$target/$PROFILE/makai")
  for other in ${OTHER:-}; do bins+=("$(realpath "$other")"); done
}

# wait_for TEXT [SECONDS]: polls the tmux pane `bench` on $sock until it
# shows TEXT (60 s at most unless SECONDS says).
wait_for() {
  for _ in $(seq $((${2:-60} * 20))); do
    tmux -L "$sock" capture-pane -p -t bench 2> /dev/null | grep -qF -- "$1" && return 0
    sleep 0.05
  done
  echo "$(basename "$0"): the screen never showed '$1':" >&2
  tmux -L "$sock" capture-pane -p -t bench >&2 || true
  exit 1
}

# start_server NAME TOKENS ARGS...: a bench server streaming TOKENS tokens
# an event per write (ARGS: more makai-mockllm options); sets $url.
start_server() {
  local name=$1 tokens=$2
  shift 2
  "$target/$PROFILE/makai-mockllm" --port 0 --no-record --bench-tokens "$tokens" \
    --bench-tool-rounds 0 --bench-stream "$@" > "$out/server-$name" &
  servers+=($!)
  for _ in $(seq 100); do grep -q "listening on" "$out/server-$name" 2>/dev/null && break; sleep 0.05; done
  url="$(sed -n 's/^listening on //p' "$out/server-$name")/v1"
}

# median FILE FIELD: the median of a column of numbers.
median() {
  cut -d' ' -f"$2" "$1" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'
}
