# Shared by scripts/bench-cli.sh and scripts/bench-tui.sh (sourced): the
# builds, the scripted servers and the medians. Uses $PROFILE, $target, $out
# and the array $servers, which the caller sets (and kills at exit).

# bench_build: builds makai, makai-mockllm and cpu_time; sets $cpu_time.
bench_build() {
  cargo build --quiet --profile "$PROFILE" -p makai-cli --bin makai
  cargo build --quiet --profile "$PROFILE" -p makai-mockllm --bin makai-mockllm
  cargo build --quiet --profile "$PROFILE" -p makai-mockllm --example cpu_time
  cpu_time="$(pwd)/$target/$PROFILE/examples/cpu_time"
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
