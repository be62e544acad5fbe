#!/usr/bin/env bash
# PostgreSQL snapshot benchmark (issue 10): the sysbench table sbtest1 (2 M rows by default)
# loaded into PostgreSQL side by side, RUNS times each, against one warm throwaway MariaDB and
# one throwaway PostgreSQL:
#   psql \copy sbtest1 FROM a CSV file of the same rows     (reference; the CSV is written once,
#                                                            outside the timing)
#   sluice run --until-caught-up, sink.type = "postgres"    (snapshot.workers = 2, COPY per chunk)
# Each run starts from an empty table (the replica schema dropped). Prints each time, the load
# average, the CPU seconds of PostgreSQL, MariaDB and sluice during each run, and the ratio to
# psql's best time; checks the row counts.
#
#   bench/pg-snapshot-bench.sh [BUILD_DIR] [RUNS]     # default build, 3
# Environment: ROWS (default 2000000), WORKERS (default 2).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
runs=${2:-3}
rows=${ROWS:-2000000}
workers=${WORKERS:-2}
[ -x "$build/sluice" ] || { echo "no $build/sluice: build it first" >&2; exit 1; }

srv=/tmp/sluice-pgbench-mariadb
pg=/tmp/sluice-pgbench-postgres
work=$(mktemp -d /tmp/sluice-pgbench-run.XXXXXX)
"$root/scripts/mariadb-test-server.sh" start "$srv" --innodb-buffer-pool-size=1G >/dev/null
"$root/scripts/postgres-test-server.sh" start "$pg" >/dev/null
cleanup() {
  rm -rf "$work"
  "$root/scripts/mariadb-test-server.sh" stop "$srv" >/dev/null || true
  "$root/scripts/postgres-test-server.sh" stop "$pg" >/dev/null || true
}
trap cleanup EXIT
# shellcheck disable=SC1091
. "$srv/env"
# shellcheck disable=SC1091
. "$pg/env"
sql() { mariadb --no-defaults --socket="$SLUICE_TEST_MYSQL_SOCKET" -uroot -N -e "$1"; }
export PGPASSWORD=$SLUICE_TEST_PG_PASSWORD
psql_() { psql -X -q -v ON_ERROR_STOP=1 "$SLUICE_TEST_PG_CONNINFO" "$@"; }

echo "preparing sbtest.sbtest1 with $rows rows (sysbench)"
sql "DROP DATABASE IF EXISTS sbtest; CREATE DATABASE sbtest"
sysbench oltp_read_only --db-driver=mysql --mysql-socket="$SLUICE_TEST_MYSQL_SOCKET" \
  --mysql-user=root --mysql-db=sbtest --tables=1 --table-size="$rows" prepare >/dev/null
# The reference's input: the same rows as CSV (sysbench's columns hold no commas or quotes).
sql "SELECT * FROM sbtest.sbtest1" | tr '\t' ',' > "$work/sbtest1.csv"

cat > "$work/sluice.toml" <<TOML
[source]
host = "$SLUICE_TEST_MYSQL_HOST"
port = $SLUICE_TEST_MYSQL_PORT
user = "$SLUICE_TEST_MYSQL_USER"
password_env = "SLUICE_TEST_MYSQL_PASSWORD"
server_id = 5998
tables = ["sbtest.sbtest1"]

[snapshot]
workers = $workers
chunk_rows = 500000
fetch_rows = 10000

[sink]
type = "postgres"

[sink.postgres]
conninfo = "$SLUICE_TEST_PG_CONNINFO"
password_env = "SLUICE_TEST_PG_PASSWORD"
TOML

now() { date +%s.%N; }
# CPU seconds (user + sys) of the servers while each side runs: the machine is shared, so wall
# times move with the load; the CPU each side costs moves far less. PostgreSQL's backends exit
# with their session: the postmaster's reaped-children time counts them.
tck=$(getconf CLK_TCK)
maria_pid=$(cat "$srv/mariadbd.pid")
pm_pid=$(head -1 "$SLUICE_TEST_PG_DIR/data/postmaster.pid")
maria_cpu() { awk '{print $14 + $15}' "/proc/$maria_pid/stat"; }
pg_cpu() {
  local t c
  t=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$pm_pid/stat")
  for c in $(pgrep -P "$pm_pid"); do t=$((t + $(awk '{print $14 + $15}' "/proc/$c/stat" 2>/dev/null || echo 0))); done
  echo "$t"
}
declare -A best
measure() {  # $1 name, rest: command
  local name=$1; shift
  local t0 t1 s m0 p0
  m0=$(maria_cpu); p0=$(pg_cpu)
  t0=$(now); "$@"; t1=$(now)
  s=$(echo "$t1 - $t0" | bc)
  printf '%-26s %6.2f s   CPU: postgres %5.2f s, mariadbd %5.2f s%s   (load %s)\n' "$name" "$s" \
    "$(echo "($(pg_cpu) - $p0) / $tck" | bc -l)" "$(echo "($(maria_cpu) - $m0) / $tck" | bc -l)" \
    "$( [ -s "$work/cpu" ] && echo ", sluice $(cat "$work/cpu") s")" "$(cut -d' ' -f1 /proc/loadavg)"
  rm -f "$work/cpu"
  if [ -z "${best[$name]:-}" ] || (( $(echo "$s < ${best[$name]}" | bc) )); then best[$name]=$s; fi
}
reset_pg() { psql_ -c "DROP SCHEMA IF EXISTS sbtest CASCADE; DROP SCHEMA IF EXISTS _sluice CASCADE"; }
run_psql() {
  reset_pg
  psql_ -c "CREATE SCHEMA sbtest; CREATE TABLE sbtest.sbtest1 (id integer PRIMARY KEY, k integer, c text, pad text)"
  psql_ -c "\\copy sbtest.sbtest1 FROM '$work/sbtest1.csv' WITH (FORMAT csv)"
}
run_sluice() {
  reset_pg
  /usr/bin/time -f "%U %S" -o "$work/time" "$build/sluice" run --config "$work/sluice.toml" --until-caught-up \
    2>"$work/sluice.log" || { cat "$work/sluice.log" >&2; exit 1; }
  awk '{print $1 + $2}' "$work/time" >"$work/cpu"
}
count() { psql_ -Atc "SELECT count(*) FROM sbtest.sbtest1"; }

echo "sbtest1: $rows rows; $(nproc) cores; sluice workers = $workers; $runs runs each"
for i in $(seq "$runs"); do
  measure "psql \\copy from CSV" run_psql
  [ "$(count)" = "$rows" ] || { echo "psql loaded $(count) rows" >&2; exit 1; }
  measure "sluice -> postgres" run_sluice
  [ "$(count)" = "$rows" ] || { echo "sluice loaded $(count) rows" >&2; exit 1; }
done
echo "best times; ratio = psql time / sluice time (> 1: sluice faster)"
for n in "psql \\copy from CSV" "sluice -> postgres"; do
  printf '%-26s %6.2f s   %.2fx\n' "$n" "${best[$n]}" "$(echo "${best["psql \\copy from CSV"]} / ${best[$n]}" | bc -l)"
done
