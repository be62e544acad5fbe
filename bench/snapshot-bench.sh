#!/usr/bin/env bash
# Snapshot benchmark (issue 9): the 2 M-row sysbench table sbtest1 copied side by side, against
# one warm throwaway MariaDB (2 GiB buffer pool), RUNS times each:
#   mydumper -t 2 -r 500000                         (reference)
#   mariadb --quick -e 'SELECT * FROM sbtest1'      (one plain SELECT through the client)
#   sluice run, snapshot.workers = 2, to JSON lines
#   sluice run, snapshot.workers = 2, into SQLite
#   mydumper -t 2 -r 500000, then `sync` of its files (durable, as sluice's output is: sluice
#                                                     syncs before each checkpoint)
# Prints each time and the ratios to mydumper's best time.
#
#   bench/snapshot-bench.sh [BUILD_DIR] [RUNS]     # default build, 3
# Environment: ROWS (default 2000000), WORKERS (default 2), KEEP_SERVER=1 to keep
# /tmp/sluice-snapbench running between invocations (its data is reused when present),
# OUT_DIR: where every tool writes (default: a directory under /tmp; OUT_DIR=/dev/shm takes
# the disk out: what is left is each client's own work and the server's).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
runs=${2:-3}
rows=${ROWS:-2000000}
workers=${WORKERS:-2}
[ -x "$build/sluice" ] || { echo "no $build/sluice: build it first" >&2; exit 1; }
SETUP_EXTRA=mydumper bash "$root/scripts/setup.sh"

srv=/tmp/sluice-snapbench
work=$(mktemp -d /tmp/sluice-snapbench-run.XXXXXX)
out=$(mktemp -d "${OUT_DIR:-/tmp}/sluice-snapbench-out.XXXXXX")
if [ ! -f "$srv/env" ] || ! mariadb-admin --no-defaults --socket="$srv/mysqld.sock" -uroot ping >/dev/null 2>&1; then
  "$root/scripts/mariadb-test-server.sh" start "$srv" --innodb-buffer-pool-size=2G >/dev/null
fi
cleanup() {
  rm -rf "$work" "$out"
  [ "${KEEP_SERVER:-0}" = 1 ] || "$root/scripts/mariadb-test-server.sh" stop "$srv" >/dev/null || true
}
trap cleanup EXIT
# shellcheck disable=SC1091
. "$srv/env"
sql() { mariadb --no-defaults --socket="$SLUICE_TEST_MYSQL_SOCKET" -uroot -N -e "$1"; }
have=$(sql "SELECT COUNT(*) FROM sbtest.sbtest1" 2>/dev/null || echo 0)
if [ "$have" != "$rows" ]; then
  echo "preparing sbtest.sbtest1 with $rows rows (sysbench)"
  sql "DROP DATABASE IF EXISTS sbtest; CREATE DATABASE sbtest"
  sysbench oltp_read_only --db-driver=mysql --mysql-socket="$SLUICE_TEST_MYSQL_SOCKET" \
    --mysql-user=root --mysql-db=sbtest --tables=1 --table-size="$rows" prepare >/dev/null
fi
sql "SELECT COUNT(*), SUM(LENGTH(c)) FROM sbtest.sbtest1" >/dev/null   # warm the buffer pool
sql "SELECT * FROM sbtest.sbtest1" >/dev/null

host=$SLUICE_TEST_MYSQL_HOST port=$SLUICE_TEST_MYSQL_PORT user=$SLUICE_TEST_MYSQL_USER
export MYSQL_PWD=$SLUICE_TEST_MYSQL_PASSWORD
config() {  # $1 sink type, $2 path
  cat > "$work/sluice.toml" <<TOML
[source]
host = "$host"
port = $port
user = "$user"
password_env = "SLUICE_TEST_MYSQL_PASSWORD"
server_id = 5999
tables = ["sbtest.sbtest1"]

[snapshot]
workers = $workers
chunk_rows = 500000
fetch_rows = 10000

[sink]
type = "$1"
path = "$2"
TOML
}

now() { date +%s.%N; }
# CPU seconds (user + system) of the server process, from /proc (clock ticks).
server_pid=$(cat "$SLUICE_TEST_MYSQL_PIDFILE")
server_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$server_pid/stat"; }
# User and system CPU seconds of this shell's finished children (bash `times`, second line;
# run in this shell, not a subshell, which would count its own children only).
child_cpu() {
  times > "$work/times"
  sed -n 2p "$work/times" | awk '{ for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); printf "%.2f ", a[1] * 60 + a[2] }; print "" }'
}
declare -A best
measure() {  # $1 name, rest: command (run after a per-run reset)
  local name=$1; shift
  local t0 t1 s c0 c1 u sy
  local u0 s0
  # Before the clock starts: this tool's last output deleted (an ext4 delete of 1 GB with
  # `discard` costs the next writer), and what the previous tool left unsynced (mydumper, the
  # client) written back now, not during this tool's run.
  case $name in
    mydumper*) rm -rf "$out/dump" ;;
    "mariadb --quick") rm -f "$out/select.tsv" ;;
    "sluice -> jsonl") rm -f "$out"/out.jsonl* ;;
    "sluice -> sqlite") rm -f "$out"/replica.db* ;;
  esac
  sync
  child_cpu > "$work/cpu0"; read -r u0 s0 < "$work/cpu0"
  c0=$(server_cpu); t0=$(now)
  "$@"
  t1=$(now); c1=$(server_cpu)
  s=$(echo "$t1 - $t0" | bc)
  child_cpu > "$work/cpu1"; read -r u sy < "$work/cpu1"
  u=$(echo "$u - $u0" | bc); sy=$(echo "$sy - $s0" | bc)
  # On 2 shared cores the wall time follows total CPU; the CPU seconds hold still under load.
  printf '%-22s %6.2f s   client CPU %5.2f s (%s user + %s sys)   server CPU %5.2f s   (load %s)\n' \
    "$name" "$s" "$(echo "$u + $sy" | bc)" "$u" "$sy" "$(echo "$c1 - $c0" | bc)" "$(cut -d' ' -f1 /proc/loadavg)"
  if [ -z "${best[$name]:-}" ] || (( $(echo "$s < ${best[$name]}" | bc) )); then best[$name]=$s; fi
}
run_mydumper() { rm -rf "$out/dump"; mydumper -h "$host" -P "$port" -u "$user" -p "$MYSQL_PWD" \
  -B sbtest -t 2 -r 500000 -o "$out/dump" >/dev/null 2>&1
  # mydumper 0.10 ignores "-T sbtest1" without complaint and dumps nothing: check the data.
  ls "$out"/dump/sbtest.sbtest1.*sql | grep -qv schema || { echo "mydumper wrote no data" >&2; exit 1; }; }
# mydumper never syncs what it wrote; sluice makes its output durable before each checkpoint.
# This is mydumper on the same terms: its files synced (fsync each) before the clock stops.
run_mydumper_sync() { run_mydumper; sync "$out"/dump/*; }
run_client() { rm -f "$out/select.tsv"; mariadb --no-defaults -h "$host" -P "$port" -u "$user" --quick -N \
  -e 'SELECT * FROM sbtest.sbtest1' > "$out/select.tsv"; }
run_sluice_jsonl() { rm -f "$out"/out.jsonl*; config jsonl "$out/out.jsonl"
  SLUICE_TEST_MYSQL_PASSWORD=$MYSQL_PWD "$build/sluice" run --config "$work/sluice.toml" --until-caught-up 2>"$work/sluice.log"; }
run_sluice_sqlite() { rm -f "$out"/replica.db*; config sqlite "$out/replica.db"
  SLUICE_TEST_MYSQL_PASSWORD=$MYSQL_PWD "$build/sluice" run --config "$work/sluice.toml" --until-caught-up 2>"$work/sluice.log"; }

echo "sbtest1: $rows rows; $(nproc) cores; sluice workers = $workers; $runs runs each"
for i in $(seq "$runs"); do
  measure "mydumper -t 2" run_mydumper
  measure "mydumper -t 2 + sync" run_mydumper_sync
  measure "mariadb --quick" run_client
  measure "sluice -> jsonl" run_sluice_jsonl
  measure "sluice -> sqlite" run_sluice_sqlite
done
jl=$(wc -l < "$out/out.jsonl")
[ "$jl" -ge "$rows" ] || { echo "sluice wrote $jl JSON lines, expected $rows" >&2; exit 1; }
echo "best times; ratio = mydumper time / tool time (> 1: faster than mydumper)"
echo "output: mydumper $(du -sm "$out/dump" | cut -f1) MB, sluice JSON lines $(du -sm "$out/out.jsonl" | cut -f1) MB, SQLite $(du -cm "$out"/replica.db* | tail -1 | cut -f1) MB, in $out ($(df --output=fstype "$out" | tail -1))"
for n in "mydumper -t 2" "mydumper -t 2 + sync" "mariadb --quick" "sluice -> jsonl" "sluice -> sqlite"; do
  printf '%-22s %6.2f s   %.2fx\n' "$n" "${best[$n]}" "$(echo "${best["mydumper -t 2"]} / ${best[$n]}" | bc -l)"
done
