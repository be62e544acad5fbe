#!/usr/bin/env bash
# Throwaway PostgreSQL (Debian's postgresql-15) for tests and benchmarks.
#
#   scripts/postgres-test-server.sh start DIR   # new cluster in DIR/data, free loopback port
#   scripts/postgres-test-server.sh stop DIR
#   scripts/postgres-test-server.sh restart DIR # stop (fast) and start the same cluster again
#
# `start` runs initdb in DIR/data, starts postgres on 127.0.0.1 (socket in DIR), creates the
# role `sluice` (superuser) with a random password and the database `sluice`, and writes
# DIR/env with:
#   SLUICE_TEST_PG_HOST SLUICE_TEST_PG_PORT SLUICE_TEST_PG_USER SLUICE_TEST_PG_PASSWORD
#   SLUICE_TEST_PG_DATABASE SLUICE_TEST_PG_CONNINFO (without the password)
# PostgreSQL refuses to run as root: as root the server runs as the `postgres` user.
# fsync stays on (the crash tests rely on committed transactions surviving a kill).
set -euo pipefail

cmd=${1:?usage: $0 start|stop|restart DIR}
dir=${2:?usage: $0 start|stop|restart DIR}

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bin" ] && [ -x "$bin/postgres" ] || { echo "postgresql not found: run scripts/setup.sh" >&2; exit 1; }

as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

find_free_port() {
  python3 - <<'PY' 2>/dev/null || echo $(( 20000 + RANDOM % 20000 ))
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

start_server() {  # port
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-p $1 -k $dir -c listen_addresses=127.0.0.1 -c max_connections=50 -c shared_buffers=64MB" \
    start >/dev/null || { echo "postgres did not start; see $dir/server.log:" >&2; tail -20 "$dir/server.log" >&2; exit 1; }
}

case "$cmd" in
  start)
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ -f "$dir/data/postmaster.pid" ] && as_owner "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
      echo "already running in $dir" >&2; exit 0
    fi
    rm -rf "$dir/data"
    mkdir -p "$dir/data"
    [ "$(id -u)" -eq 0 ] && chown postgres "$dir" "$dir/data"
    chmod 700 "$dir/data"
    as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
      -E UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
    port=$(find_free_port)
    echo "$port" >"$dir/port"
    start_server "$port"
    password="t$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
    as_owner "$bin/psql" -X -q -h "$dir" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 <<SQL >/dev/null
CREATE ROLE sluice LOGIN SUPERUSER PASSWORD '$password';
CREATE DATABASE sluice OWNER sluice;
SQL
    cat >"$dir/env" <<ENV
export SLUICE_TEST_PG_HOST=127.0.0.1
export SLUICE_TEST_PG_PORT=$port
export SLUICE_TEST_PG_USER=sluice
export SLUICE_TEST_PG_PASSWORD=$password
export SLUICE_TEST_PG_DATABASE=sluice
export SLUICE_TEST_PG_CONNINFO="host=127.0.0.1 port=$port user=sluice dbname=sluice"
export SLUICE_TEST_PG_DIR=$dir
ENV
    echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (data in $dir)"
    ;;
  restart)
    dir=$(cd "$dir" && pwd)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    start_server "$(cat "$dir/port")"
    ;;
  stop)
    [ -d "$dir/data" ] || exit 0
    dir=$(cd "$dir" && pwd)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null 2>&1 || true
    ;;
  *) echo "usage: $0 start|stop|restart DIR" >&2; exit 2 ;;
esac
