#!/usr/bin/env bash
# Makes the benchmark binlog: sysbench oltp_write_only against a throwaway MariaDB until
# the binlog holds at least MIN_MB megabytes, then copies the binlog file(s) to OUT_DIR.
#
#   bench/make-sysbench-binlog.sh [OUT_DIR]        # default /tmp/sluice-bench
#
# Environment (all optional): MDB_DIR (server dir, default /tmp/mdb-sysbench),
# MIN_MB (default 500), TABLES (default 4), TABLE_SIZE (default 100000),
# EVENTS (sysbench transactions per round, default 100000), SEED (default 1).
# Reproducible: one sysbench thread, fixed --rand-seed, fixed --events per round, and the
# table/row counts above; each extra round uses SEED+round. The server is started with
# scripts/mariadb-test-server.sh (ROW, FULL image, FULL metadata) and stopped at the end.
# Prints the size of each copied file and its event count (from mariadb-binlog).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-/tmp/sluice-bench}
mdb=${MDB_DIR:-/tmp/mdb-sysbench}
min_mb=${MIN_MB:-500}
tables=${TABLES:-4}
table_size=${TABLE_SIZE:-100000}
events=${EVENTS:-100000}
seed=${SEED:-1}

command -v sysbench >/dev/null || { echo "sysbench not found: run scripts/setup.sh" >&2; exit 1; }

"$root/scripts/mariadb-test-server.sh" start "$mdb" --max-binlog-size=1073741824
trap '"$root/scripts/mariadb-test-server.sh" stop "$mdb"' EXIT
# shellcheck disable=SC1091
source "$mdb/env"
sock=$SLUICE_TEST_MYSQL_SOCKET
sql() { mariadb --no-defaults --socket="$sock" -uroot -N -e "$1"; }

sql "CREATE DATABASE IF NOT EXISTS sbtest"
sb=(sysbench oltp_write_only --db-driver=mysql --mysql-socket="$sock" --mysql-user=root
    --mysql-db=sbtest --tables="$tables" --table-size="$table_size" --threads=1)

echo "prepare: $tables tables x $table_size rows"
"${sb[@]}" --rand-seed="$seed" prepare >/dev/null

binlog_bytes() {
  sql "SHOW BINARY LOGS" | awk '{s += $2} END {print s + 0}'
}

round=0
while [ "$(binlog_bytes)" -lt $((min_mb * 1000 * 1000)) ]; do
  s=$((seed + round))
  echo "run: round $round, --events=$events --rand-seed=$s ($(($(binlog_bytes) / 1000000)) MB so far)"
  "${sb[@]}" --rand-seed="$s" --events="$events" --time=0 --report-interval=0 run >/dev/null
  round=$((round + 1))
done

sql "FLUSH BINARY LOGS"
mkdir -p "$out"
files=$(sql "SHOW BINARY LOGS" | awk '{print $1}' | sed '$d')  # all but the new empty one
for f in $files; do
  cp "$mdb/data/$f" "$out/$f"
  bytes=$(stat -c %s "$out/$f")
  nev=$(mariadb-binlog "$out/$f" 2>/dev/null | grep -c '^# at ' || true)
  nrows=$(mariadb-binlog "$out/$f" 2>/dev/null | grep -Ec 'end_log_pos [0-9]+ .*(Write|Update|Delete)_rows' || true)
  echo "$out/$f: $bytes bytes ($((bytes / 1000000)) MB), $nev events, $nrows row events"
done
