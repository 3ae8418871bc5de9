#!/usr/bin/env bash
# Measures the zero-key first run as a new user meets it: the README's
# `makai "What does this repository do?"` with no provider key, an empty
# local-model cache and an empty pip cache, from a built `makai` to the first
# answer. Prints each step's time (and the answer) at the end.
#
# Usage: scripts/cold-install.sh [--build]
#   --build   time `cargo build --release --bin makai` first (into the usual
#             target folder: cold only if that folder is empty)
#
# Environment:
#   MAKAI_LOCAL_MODEL_RUNTIME  measure one runtime: xllamacpp (the default where
#                              it fits) or llama-cpp-python (the fallback)
#   MAKAI_BIN                  the binary to run (default: the release build)
#   COLD_KEEP=1                keep the temporary folders (printed) afterwards
#
# Nothing outside a temporary folder is touched: makai's home, the model cache
# and pip's cache all live in it, and the model server makai starts is stopped
# when makai exits (and again, to be sure, when this script ends).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'cold-install: %s\n' "$*" >&2; }
now_ms() { date +%s%3N; }
secs() { awk -v ms="$1" 'BEGIN { printf "%.1f s", ms / 1000 }'; }

build=0
for arg in "$@"; do
    case "$arg" in
    --build) build=1 ;;
    *)
        sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
        exit 2
        ;;
    esac
done

t_build=""
if ((build)); then
    t0=$(now_ms)
    cargo build --release --bin makai
    t_build=$(($(now_ms) - t0))
fi
bin="${MAKAI_BIN:-${CARGO_TARGET_DIR:-target}/release/makai}"
[[ -x "$bin" ]] || {
    say "no $bin: build it first (cargo build --release --bin makai) or pass --build"
    exit 1
}

tmp=$(mktemp -d)
log="$tmp/stderr.log"
answer="$tmp/answer.txt"
cleanup() {
    MAKAI_LOCAL_MODEL_DIR="$tmp/local-model" bash scripts/real-model.sh stop >/dev/null 2>&1 || true
    if [[ "${COLD_KEEP:-}" == 1 ]]; then
        say "kept $tmp"
    else
        rm -rf "$tmp"
    fi
}
trap cleanup EXIT

# A clean environment: no provider key, an empty makai home and pip cache.
unset_keys=()
for k in ANTHROPIC_API_KEY OPENAI_API_KEY GEMINI_API_KEY GOOGLE_API_KEY GROQ_API_KEY \
    OPENROUTER_API_KEY DEEPSEEK_API_KEY MISTRAL_API_KEY XAI_API_KEY CEREBRAS_API_KEY \
    TOGETHER_API_KEY FIREWORKS_API_KEY MAKAI_AUTO_LOCAL MAKAI_REAL_MODEL_URL; do
    unset_keys+=(-u "$k")
done

say "running $bin -p \"What does this repository do?\" with an empty cache in $tmp"
t0=$(now_ms)
# Every stderr line is stamped with the milliseconds since the start.
env "${unset_keys[@]}" MAKAI_HOME="$tmp/home" MAKAI_LOCAL_MODEL_DIR="$tmp/local-model" \
    PIP_CACHE_DIR="$tmp/pip-cache" MAKAI_AUTO_TITLE=0 \
    "$bin" -p "What does this repository do?" >"$answer" 2> >(
    while IFS= read -r line; do
        printf '%s %s\n' "$(($(now_ms) - t0))" "$line" >>"$log"
        printf '%s\n' "$line" >&2
    done
) </dev/null || {
    status=$?
    say "makai failed (exit $status)"
    exit "$status"
}
t_end=$(($(now_ms) - t0))
sleep 0.2 # the stamping loop's last lines

# The time of the first stderr line matching $1 (ms since start), or empty.
at() { grep -m1 -E "^[0-9]+ .*$1" "$log" | cut -d' ' -f1 || true; }
t_venv=$(at 'creating virtualenv')
t_pkg=$(at 'server: installing')
t_pkg_done=$(at 'server: installed in')
t_model=$(at 'model: downloading')
t_model_done=$(at 'model: ready at')
t_start=$(at 'server: starting')
t_ready=$(at 'server: ready in')
runtime=$(grep -m1 -oE 'server: starting [a-z-]+' "$log" | cut -d' ' -f3 || true)

step() { # label from to
    if [[ -n "$2" && -n "$3" ]]; then
        printf '  %-44s %10s\n' "$1" "$(secs $(($3 - $2)))"
    else
        printf '  %-44s %10s\n' "$1" "-"
    fi
}
{
    echo
    echo "Cold first run of the built-in local model (runtime: ${runtime:-?}, $(nproc) cores)"
    [[ -z "$t_build" ]] || printf '  %-44s %10s\n' "cargo build --release --bin makai" "$(secs "$t_build")"
    step "makai start to the virtualenv" 0 "${t_venv:-$t_pkg}"
    step "virtualenv" "$t_venv" "$t_pkg"
    step "server runtime install (pip)" "$t_pkg" "$t_pkg_done"
    step "model download, assembly, sha256" "$t_model" "$t_model_done"
    step "server start (model load)" "$t_start" "$t_ready"
    step "first answer (prompt + generation)" "$t_ready" "$t_end"
    printf '  %-44s %10s\n' "total: makai start to the first answer" "$(secs "$t_end")"
    echo
    echo "Answer:"
    sed 's/^/  /' "$answer"
}
