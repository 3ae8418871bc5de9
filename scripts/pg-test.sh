#!/usr/bin/env bash
# A throwaway PostgreSQL server for makai's tests (and benchmarks).
#
#   scripts/pg-test.sh start [--watch PID] [--durable]
#       Installs Debian's `postgresql` package when missing, runs initdb into a
#       new temporary folder and starts the server on a free 127.0.0.1 port (and
#       a Unix socket in that folder), as an unprivileged user (`postgres`, or a
#       `makai-pg` user created for it when running as root). Password login
#       (scram-sha-256) for a superuser `makai_admin`. Prints, for `eval`:
#           export MAKAI_TEST_PG='postgres://makai_admin:PASSWORD@127.0.0.1:PORT/postgres'
#           export MAKAI_TEST_PG_DIR='/tmp/makai-pg.XXXX'
#           export MAKAI_TEST_PG_CA='/tmp/makai-pg.XXXX/tls/ca.pem'
#       The server also speaks TLS (optional for clients) with a certificate
#       for localhost and 127.0.0.1 signed by a throwaway CA (MAKAI_TEST_PG_CA;
#       `tls/other-ca.pem` is a CA that did not sign it), made with openssl.
#       --watch PID stops the server when process PID ends. --durable keeps
#       fsync on (benchmarks); tests run without it (they kill makai, not the
#       database, so the database's own crash safety is not what they test).
#   scripts/pg-test.sh stop DIR      stops the server and deletes DIR
#   scripts/pg-test.sh pause DIR     stops the server at once (-m immediate), keeps DIR
#   scripts/pg-test.sh resume DIR    starts it again on the same port
set -euo pipefail

die() { echo "pg-test: $*" >&2; exit 1; }

bindir() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/pg_ctl" ] && [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
  done
  if command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; then
    dirname "$(command -v pg_ctl)"; return 0
  fi
  return 1
}

ensure_installed() {
  if bindir >/dev/null; then return 0; fi
  [ "$(id -u)" = 0 ] || die "PostgreSQL is not installed and installing it needs root (apt-get install postgresql)"
  echo "pg-test: installing Debian's postgresql package" >&2
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null) >&2 \
    || die "apt-get install postgresql failed"
  bindir >/dev/null || die "postgresql was installed but pg_ctl/initdb were not found"
}

# The unprivileged user the server runs as (PostgreSQL refuses to run as root).
os_user() {
  if [ "$(id -u)" != 0 ]; then id -un; return; fi
  if id postgres >/dev/null 2>&1; then echo postgres; return; fi
  if ! id makai-pg >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin makai-pg >&2 || die "cannot create the user makai-pg"
  fi
  echo makai-pg
}

as_user() {
  local user=$1; shift
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$user" -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
    || echo $(( 20000 + RANDOM % 30000 ))
}

server_start() {
  local dir=$1 user bin port
  user=$(cat "$dir/user"); bin=$(cat "$dir/bin"); port=$(cat "$dir/port")
  (cd "$dir" && as_user "$user" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 $(cat "$dir/options")") >&2 \
    || { tail -n 20 "$dir/server.log" >&2 || true; die "the server did not start (log: $dir/server.log)"; }
}

# A throwaway CA, a server certificate it signs for localhost and 127.0.0.1,
# and a second CA that signed nothing, in folder $1.
make_certs() {
  local tls=$1
  if ! command -v openssl >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || die "openssl is needed for the test server's TLS certificate (apt-get install openssl)"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >/dev/null) >&2 \
      || die "apt-get install openssl failed"
  fi
  mkdir -p "$tls"
  (
    cd "$tls"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3 -subj "/CN=makai test CA" \
      -keyout ca.key -out ca.pem
    openssl req -x509 -newkey rsa:2048 -nodes -days 3 -subj "/CN=makai other CA" \
      -keyout other-ca.key -out other-ca.pem
    openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' > server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3 \
      -extfile server.ext -out server.pem
    chmod 600 server.key ca.key other-ca.key
  ) >"$tls/openssl.log" 2>&1 || { cat "$tls/openssl.log" >&2; die "openssl could not make the certificates"; }
}

cmd=${1:-}
case "$cmd" in
  start)
    shift
    watch="" durable=""
    while [ $# -gt 0 ]; do
      case "$1" in
        --watch) watch=${2:-}; shift 2 ;;
        --durable) durable=1; shift ;;
        *) die "unknown option $1" ;;
      esac
    done
    ensure_installed
    bin=$(bindir); user=$(os_user)
    dir=$(mktemp -d /tmp/makai-pg.XXXXXX)
    password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=' | head -c 24)
    echo "$password" > "$dir/pw"
    echo "$user" > "$dir/user"; echo "$bin" > "$dir/bin"; free_port > "$dir/port"
    if [ -n "$durable" ]; then
      echo "-c max_connections=300 -c shared_buffers=128MB" > "$dir/options"
    else
      echo "-c max_connections=300 -c shared_buffers=64MB -c fsync=off -c full_page_writes=off" > "$dir/options"
    fi
    make_certs "$dir/tls"
    # One line: pg_ctl hands the options to a shell, where a newline ends them.
    printf '%s -c ssl=on -c ssl_cert_file=%s -c ssl_key_file=%s\n' "$(cat "$dir/options")" \
      "$dir/tls/server.pem" "$dir/tls/server.key" > "$dir/options.new"
    mv "$dir/options.new" "$dir/options"
    chmod 700 "$dir"; chown -R "$user" "$dir"
    (cd "$dir" && as_user "$user" "$bin/initdb" -D "$dir/data" -U makai_admin --pwfile="$dir/pw" \
        --auth-host=scram-sha-256 --auth-local=trust -E UTF8 --locale=C.UTF-8 --no-sync) >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
    server_start "$dir"
    if [ -n "$watch" ]; then
      # Stops the server once the watched process is gone.
      nohup bash -c "while kill -0 $watch 2>/dev/null; do sleep 1; done; \
        runuser -u $user -- $bin/pg_ctl -D $dir/data stop -m immediate >/dev/null 2>&1 || $bin/pg_ctl -D $dir/data stop -m immediate >/dev/null 2>&1; \
        rm -rf $dir" >/dev/null 2>&1 &
    fi
    echo "export MAKAI_TEST_PG='postgres://makai_admin:$password@127.0.0.1:$(cat "$dir/port")/postgres'"
    echo "export MAKAI_TEST_PG_DIR='$dir'"
    echo "export MAKAI_TEST_PG_CA='$dir/tls/ca.pem'"
    ;;
  stop)
    dir=${2:-}; [ -n "$dir" ] && [ -d "$dir" ] || die "stop needs the server's folder"
    as_user "$(cat "$dir/user")" "$(cat "$dir/bin")/pg_ctl" -D "$dir/data" stop -m fast >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
  pause)
    dir=${2:-}; [ -n "$dir" ] && [ -d "$dir" ] || die "pause needs the server's folder"
    as_user "$(cat "$dir/user")" "$(cat "$dir/bin")/pg_ctl" -D "$dir/data" stop -m immediate >&2
    ;;
  resume)
    dir=${2:-}; [ -n "$dir" ] && [ -d "$dir" ] || die "resume needs the server's folder"
    server_start "$dir"
    ;;
  *)
    die "usage: pg-test.sh start [--watch PID] [--durable] | stop DIR | pause DIR | resume DIR"
    ;;
esac
