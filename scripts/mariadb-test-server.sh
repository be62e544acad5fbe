#!/usr/bin/env bash
# Throwaway MariaDB for tests and the demo.
#
#   scripts/mariadb-test-server.sh start DIR   # new data dir in DIR, free loopback port
#   scripts/mariadb-test-server.sh stop DIR
#   scripts/mariadb-test-server.sh restart DIR   # kill -9, then start again: same data, same port
#
# `start` initialises DIR/data, starts mariadbd on 127.0.0.1 with ROW binlogs
# (log_bin, binlog_format=ROW, binlog_row_image=FULL, binlog_row_metadata=FULL, GTIDs
# are always on in MariaDB), creates the user `sluice` (all privileges) whose password
# is in DIR/env, and writes DIR/env with:
#   SLUICE_TEST_MYSQL_HOST SLUICE_TEST_MYSQL_PORT SLUICE_TEST_MYSQL_USER
#   SLUICE_TEST_MYSQL_PASSWORD SLUICE_TEST_MYSQL_SOCKET SLUICE_TEST_MYSQL_PIDFILE
# Extra mariadbd options can be passed after DIR (e.g. --binlog-row-image=MINIMAL).
set -euo pipefail

cmd=${1:?usage: $0 start|stop DIR [mariadbd options...]}
dir=${2:?usage: $0 start|stop DIR [mariadbd options...]}
shift 2

find_free_port() {
  python3 - <<'PY' 2>/dev/null || echo $(( 20000 + RANDOM % 20000 ))
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
}

case "$cmd" in
  start)
    command -v mariadbd >/dev/null || { echo "mariadbd not found: run scripts/setup.sh" >&2; exit 1; }
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    if [ -f "$dir/mariadbd.pid" ] && kill -0 "$(cat "$dir/mariadbd.pid")" 2>/dev/null; then
      echo "already running in $dir" >&2; exit 0
    fi
    rm -rf "$dir/data"
    mkdir -p "$dir/data" "$dir/tmp"
    # The bootstrap gets its own tmpdir: two installs sharing /tmp (test shards, tests that
    # start a second server) collided on a temporary table name ("Could not remove temporary
    # table '/tmp/#sql-temptable-...'", then "Unknown table 'mysql.tmp_user_sys'").
    TMPDIR="$dir/tmp" mariadb-install-db --no-defaults --datadir="$dir/data" --user="$(id -un)" \
      --auth-root-authentication-method=normal --skip-test-db --tmpdir="$dir/tmp" >"$dir/install.log" 2>&1 \
      || { cat "$dir/install.log" >&2; exit 1; }
    port=$(find_free_port)
    sock="$dir/mysqld.sock"
    # Kept for `restart` (same data directory, port and options).
    printf '%q ' mariadbd --no-defaults --datadir="$dir/data" --user="$(id -un)" \
      --bind-address=127.0.0.1 --port="$port" --socket="$sock" --pid-file="$dir/mariadbd.pid" \
      --tmpdir="$dir/tmp" --log-error="$dir/error.log" \
      --server-id=1 --log-bin=mariadb-bin --binlog-format=ROW --binlog-row-image=FULL \
      --binlog-row-metadata=FULL --log-slave-updates=ON \
      --innodb-buffer-pool-size=128M --innodb-log-file-size=64M --innodb-flush-log-at-trx-commit=2 \
      --sync-binlog=0 --skip-name-resolve --max-connections=200 --max-allowed-packet=256M \
      --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci "$@" >"$dir/mariadbd.cmd"
    mariadbd --no-defaults --datadir="$dir/data" --user="$(id -un)" \
      --bind-address=127.0.0.1 --port="$port" --socket="$sock" --pid-file="$dir/mariadbd.pid" \
      --tmpdir="$dir/tmp" --log-error="$dir/error.log" \
      --server-id=1 --log-bin=mariadb-bin --binlog-format=ROW --binlog-row-image=FULL \
      --binlog-row-metadata=FULL --log-slave-updates=ON \
      --innodb-buffer-pool-size=128M --innodb-log-file-size=64M --innodb-flush-log-at-trx-commit=2 \
      --sync-binlog=0 --skip-name-resolve --max-connections=200 --max-allowed-packet=256M \
      --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
      "$@" >/dev/null 2>&1 &
    for _ in $(seq 1 300); do
      if mariadb-admin --no-defaults --socket="$sock" -uroot ping >/dev/null 2>&1; then break; fi
      sleep 0.1
    done
    mariadb-admin --no-defaults --socket="$sock" -uroot ping >/dev/null 2>&1 \
      || { echo "mariadbd did not start; see $dir/error.log:" >&2; tail -20 "$dir/error.log" >&2; exit 1; }
    password="t$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
    mariadb --no-defaults --socket="$sock" -uroot <<SQL
CREATE USER 'sluice'@'127.0.0.1' IDENTIFIED BY '$password';
CREATE USER 'sluice'@'localhost' IDENTIFIED BY '$password';
GRANT ALL PRIVILEGES ON *.* TO 'sluice'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO 'sluice'@'localhost' WITH GRANT OPTION;
SQL
    cat >"$dir/env" <<ENV
export SLUICE_TEST_MYSQL_HOST=127.0.0.1
export SLUICE_TEST_MYSQL_PORT=$port
export SLUICE_TEST_MYSQL_USER=sluice
export SLUICE_TEST_MYSQL_PASSWORD=$password
export SLUICE_TEST_MYSQL_SOCKET=$sock
export SLUICE_TEST_MYSQL_PIDFILE=$dir/mariadbd.pid
ENV
    echo "MariaDB $(mariadbd --version | awk '{print $3}') on 127.0.0.1:$port (data in $dir)"
    ;;
  stop)
    [ -d "$dir" ] || exit 0
    if [ -f "$dir/mariadbd.pid" ]; then
      pid=$(cat "$dir/mariadbd.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    ;;
  restart)
    dir=$(cd "$dir" && pwd)
    [ -f "$dir/mariadbd.cmd" ] || { echo "no server was started in $dir" >&2; exit 1; }
    if [ -f "$dir/mariadbd.pid" ]; then
      pid=$(cat "$dir/mariadbd.pid")
      kill -9 "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    fi
    rm -f "$dir/mariadbd.pid"
    bash -c "$(cat "$dir/mariadbd.cmd") >/dev/null 2>&1 &"
    for _ in $(seq 1 300); do
      if mariadb-admin --no-defaults --socket="$dir/mysqld.sock" -uroot ping >/dev/null 2>&1; then exit 0; fi
      sleep 0.1
    done
    echo "mariadbd did not restart; see $dir/error.log:" >&2; tail -20 "$dir/error.log" >&2; exit 1
    ;;
  *) echo "usage: $0 start|stop|restart DIR" >&2; exit 2 ;;
esac
