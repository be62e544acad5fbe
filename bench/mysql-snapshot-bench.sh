#!/usr/bin/env bash
# MariaDB snapshot benchmark (issue 10): the sysbench table sbtest1 (2 M rows by default)
# copied from one throwaway MariaDB into a second one, side by side, RUNS times each:
#   mydumper -t 2 -r 500000, then myloader -t 2      (reference; dump and load timed apart and
#                                                     summed: sluice does both in one pass)
#   sluice run --until-caught-up, sink.type = "mysql" (snapshot.workers = 2)
# Each load starts from an empty destination (its databases dropped). Prints each time, the
# load average, the ratio to the reference's best time, and checks the row counts.
#
#   bench/mysql-snapshot-bench.sh [BUILD_DIR] [RUNS]     # default build, 3
# Environment: ROWS (default 2000000), WORKERS (default 2).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
runs=${2:-3}
rows=${ROWS:-2000000}
workers=${WORKERS:-2}
[ -x "$build/sluice" ] || { echo "no $build/sluice: build it first" >&2; exit 1; }
SETUP_EXTRA=mydumper bash "$root/scripts/setup.sh" >/dev/null

work=$(mktemp -d /tmp/sluice-mybench-run.XXXXXX)
src="$work/source" dst="$work/dest"
"$root/scripts/mariadb-test-server.sh" start "$src" --innodb-buffer-pool-size=1G >/dev/null
"$root/scripts/mariadb-test-server.sh" start "$dst" --innodb-buffer-pool-size=1G >/dev/null
cleanup() {
  "$root/scripts/mariadb-test-server.sh" stop "$dst" >/dev/null 2>&1 || true
  "$root/scripts/mariadb-test-server.sh" stop "$src" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
# shellcheck disable=SC1091
src_port=$(. "$src/env"; echo "$SLUICE_TEST_MYSQL_PORT")
# shellcheck disable=SC1091
dst_port=$(. "$dst/env"; echo "$SLUICE_TEST_MYSQL_PORT")
# shellcheck disable=SC1091
export SLUICE_TEST_MYSQL_PASSWORD=$(. "$src/env"; echo "$SLUICE_TEST_MYSQL_PASSWORD")
# shellcheck disable=SC1091
export SLUICE_BENCH_DEST_PASSWORD=$(. "$dst/env"; echo "$SLUICE_TEST_MYSQL_PASSWORD")
sql() { mariadb --no-defaults --socket="$1/mysqld.sock" -uroot -N -e "$2"; }

echo "preparing sbtest.sbtest1 with $rows rows (sysbench)"
sql "$src" "CREATE DATABASE sbtest"
sysbench oltp_read_only --db-driver=mysql --mysql-socket="$src/mysqld.sock" \
  --mysql-user=root --mysql-db=sbtest --tables=1 --table-size="$rows" prepare >/dev/null
sql "$src" "SELECT * FROM sbtest.sbtest1" >/dev/null   # warm the buffer pool

cat > "$work/sluice.toml" <<TOML
[source]
host = "127.0.0.1"
port = $src_port
user = "sluice"
password_env = "SLUICE_TEST_MYSQL_PASSWORD"
server_id = 5997
tables = ["sbtest.sbtest1"]

[snapshot]
workers = $workers
chunk_rows = 500000
fetch_rows = 10000

[sink]
type = "mysql"

[sink.mysql]
host = "127.0.0.1"
port = $dst_port
user = "sluice"
password_env = "SLUICE_BENCH_DEST_PASSWORD"
database = "sluice_bench"
TOML

now() { date +%s.%N; }
declare -A best
measure() {  # $1 name, rest: command
  local name=$1; shift
  local t0 t1 s
  t0=$(now); "$@"; t1=$(now)
  s=$(echo "$t1 - $t0" | bc)
  printf '%-28s %6.2f s   (load %s)\n' "$name" "$s" "$(cut -d' ' -f1 /proc/loadavg)"
  if [ -z "${best[$name]:-}" ] || (( $(echo "$s < ${best[$name]}" | bc) )); then best[$name]=$s; fi
  last=$s
}
reset_dest() { sql "$dst" "DROP DATABASE IF EXISTS sbtest; DROP DATABASE IF EXISTS sluice_bench"; }
run_mydumper() { rm -rf "$work/dump"; mydumper -h 127.0.0.1 -P "$src_port" -u sluice -p "$SLUICE_TEST_MYSQL_PASSWORD" \
  -B sbtest -t 2 -r 500000 -o "$work/dump" >/dev/null 2>&1
  ls "$work"/dump/sbtest.sbtest1.*sql | grep -qv schema || { echo "mydumper wrote no data" >&2; exit 1; }; }
run_myloader() { reset_dest; myloader -h 127.0.0.1 -P "$dst_port" -u sluice -p "$SLUICE_BENCH_DEST_PASSWORD" \
  -t 2 -d "$work/dump" >/dev/null 2>&1; }
run_sluice() { reset_dest
  "$build/sluice" run --config "$work/sluice.toml" --until-caught-up 2>"$work/sluice.log" \
    || { cat "$work/sluice.log" >&2; exit 1; }; }
count() { sql "$dst" "SELECT COUNT(*) FROM sbtest.sbtest1"; }

echo "sbtest1: $rows rows; $(nproc) cores; sluice workers = $workers; $runs runs each"
for i in $(seq "$runs"); do
  measure "mydumper -t 2 (dump)" run_mydumper; d=$last
  measure "myloader -t 2 (load)" run_myloader; l=$last
  [ "$(count)" = "$rows" ] || { echo "myloader loaded $(count) rows" >&2; exit 1; }
  s=$(echo "$d + $l" | bc)
  printf '%-28s %6.2f s\n' "mydumper + myloader" "$s"
  if [ -z "${best[ref]:-}" ] || (( $(echo "$s < ${best[ref]}" | bc) )); then best[ref]=$s; fi
  measure "sluice -> mariadb" run_sluice
  [ "$(count)" = "$rows" ] || { echo "sluice loaded $(count) rows" >&2; exit 1; }
done
echo "best times; ratio = (mydumper + myloader) time / tool time (> 1: faster than the reference)"
printf '%-28s %6.2f s   %.2fx\n' "mydumper + myloader" "${best[ref]}" 1
printf '%-28s %6.2f s   %.2fx\n' "myloader alone" "${best["myloader -t 2 (load)"]}" \
  "$(echo "${best[ref]} / ${best["myloader -t 2 (load)"]}" | bc -l)"
printf '%-28s %6.2f s   %.2fx\n' "sluice -> mariadb" "${best["sluice -> mariadb"]}" \
  "$(echo "${best[ref]} / ${best["sluice -> mariadb"]}" | bc -l)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
