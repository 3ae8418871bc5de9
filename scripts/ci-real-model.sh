#!/usr/bin/env bash
# CI step: the end-to-end tests against a real model (every `tests/real_model.rs`
# of the workspace), run after the workspace build.
#
# 1. builds the real_model test binaries (before the server starts: generation
#    is ~25x slower while cargo compiles),
# 2. starts the local server with scripts/real-model.sh (installs the server and
#    the model on first use; cached under ${MAKAI_HOME:-$HOME/.makai}/local-model),
# 3. runs the tests with MAKAI_REAL_MODEL_URL / _NAME / _RUNTIME set,
# 4. stops the server, if this script started it.
#
# Prints how long each part took. Set MAKAI_SKIP_REAL_MODEL=1 to skip the step
# (it says so) on a machine that cannot reach PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'ci-real-model: %s\n' "$*" >&2; }
now() { date +%s; }

if [[ "${MAKAI_SKIP_REAL_MODEL:-}" == 1 ]]; then
    say "skipped: MAKAI_SKIP_REAL_MODEL=1"
    exit 0
fi

t_all=$(now)
started_here=0
stop_server() {
    if ((started_here)); then
        scripts/real-model.sh stop || true
    fi
    say "total: $(($(now) - t_all))s"
}
trap stop_server EXIT

t0=$(now)
cargo test --workspace --test real_model --no-run
say "build of the real_model tests: $(($(now) - t0))s"

t0=$(now)
if scripts/real-model.sh status >/dev/null 2>&1; then
    say "a local model server is already running; using it and leaving it running"
else
    started_here=1
fi
MAKAI_REAL_MODEL_URL=$(scripts/real-model.sh start)
MAKAI_REAL_MODEL_NAME=$(scripts/real-model.sh model)
MAKAI_REAL_MODEL_RUNTIME=$(scripts/real-model.sh runtime)
export MAKAI_REAL_MODEL_URL MAKAI_REAL_MODEL_NAME MAKAI_REAL_MODEL_RUNTIME
say "server (install, model, start): $(($(now) - t0))s; $MAKAI_REAL_MODEL_URL, model $MAKAI_REAL_MODEL_NAME, runtime $MAKAI_REAL_MODEL_RUNTIME"

t0=$(now)
cargo test --workspace --test real_model
say "real-model tests: $(($(now) - t0))s"
