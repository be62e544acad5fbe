#!/usr/bin/env bash
# Apply-rate benchmark (issue 8): sluice against a native MariaDB replica on one backlog.
#
#   bench/replica-bench.sh [BUILD_DIR]            # default build
#
# 1. A throwaway source MariaDB (scripts/mariadb-test-server.sh) gets sysbench's tables
#    (prepare), a second throwaway MariaDB becomes its native replica (CHANGE MASTER, GTID),
#    and sluice takes a snapshot into each sink (SQLite, JSON lines, MariaDB: the replica's
#    server, database sbtest_sluice, written by sluice's mysql sink; PostgreSQL: a throwaway
#    PostgreSQL, scripts/postgres-test-server.sh).
# 2. With the replica's SQL thread and sluice stopped, sysbench oltp_write_only writes the
#    backlog: EVENTS transactions (default 50000), one thread, fixed seed.
# 3. Timed, one after the other on the same backlog: the replica's SQL thread applying the
#    relay log it has fetched (slave_parallel_threads=0), `sluice run --until-caught-up`
#    into each sink. Peak RSS and CPU seconds of sluice via /usr/bin/time, CPU seconds of the
#    replica's mariadbd from /proc while it applies.
# Prints each time, row changes/s, CPU seconds, and sluice's rate as a multiple of the replica's.
# Environment: EVENTS (default 50000), TABLES (4), TABLE_SIZE (100000), SINKS (default
# "sqlite jsonl mysql postgres"), KEEP=1 keeps the directory (default: removed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
events=${EVENTS:-50000}
tables=${TABLES:-4}
table_size=${TABLE_SIZE:-100000}
read -r -a sinks <<<"${SINKS:-sqlite jsonl mysql postgres}"
work=$(mktemp -d /tmp/sluice-replica-bench.XXXXXX)
src="$work/source" rep="$work/replica"
# PostgreSQL runs as user postgres, which cannot enter the 0700 mktemp directory.
pg=/tmp/sluice-replica-bench-pg.$$

cleanup() {
  [ -d "$pg" ] && { "$root/scripts/postgres-test-server.sh" stop "$pg" >/dev/null 2>&1 || true; rm -rf "$pg"; }
  "$root/scripts/mariadb-test-server.sh" stop "$rep" >/dev/null 2>&1 || true
  "$root/scripts/mariadb-test-server.sh" stop "$src" >/dev/null 2>&1 || true
  [ "${KEEP:-0}" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT

"$root/scripts/mariadb-test-server.sh" start "$src" >/dev/null
# The replica's server also holds sluice's MariaDB destination (database sbtest_sluice): a
# buffer pool that fits both copies (2 x ~100 MB), so neither applier reads pages the other
# evicted. Both appliers write through the same server settings: binlog on
# (log_slave_updates=ON for the SQL thread), innodb_flush_log_at_trx_commit=2, sync_binlog=0
# (scripts/mariadb-test-server.sh): no fsync per commit for either.
"$root/scripts/mariadb-test-server.sh" start "$rep" --server-id=2 --slave-parallel-threads=0 \
  --innodb-buffer-pool-size=1G >/dev/null
# shellcheck disable=SC1091
src_port=$(. "$src/env"; echo "$SLUICE_TEST_MYSQL_PORT")
src_sock="$src/mysqld.sock" rep_sock="$rep/mysqld.sock"
sql() { mariadb --no-defaults --socket="$1" -uroot -N -e "$2"; }

sql "$src_sock" "CREATE DATABASE sbtest; CREATE USER 'repl'@'127.0.0.1' IDENTIFIED BY 'repl';
                 GRANT REPLICATION SLAVE ON *.* TO 'repl'@'127.0.0.1'"
sb=(sysbench oltp_write_only --db-driver=mysql --mysql-socket="$src_sock" --mysql-user=root
    --mysql-db=sbtest --tables="$tables" --table-size="$table_size" --threads=1)
"${sb[@]}" --rand-seed=1 prepare >/dev/null
gtid=$(sql "$src_sock" "SELECT @@gtid_binlog_pos")
# The replica gets the prepared tables by a dump, then replicates from the current GTID.
mariadb-dump --no-defaults --socket="$src_sock" -uroot --databases sbtest --single-transaction \
  | mariadb --no-defaults --socket="$rep_sock" -uroot
sql "$rep_sock" "RESET MASTER; SET GLOBAL gtid_slave_pos = '$gtid';
                 CHANGE MASTER TO master_host='127.0.0.1', master_port=$src_port, master_user='repl',
                 master_password='repl', master_use_gtid=slave_pos; START SLAVE IO_THREAD"

# sluice: a snapshot into each sink, so that the timed runs only stream.
cat >"$work/base.toml" <<EOF
[source]
host = "127.0.0.1"
port = $src_port
user = "sluice"
password_env = "SLUICE_TEST_MYSQL_PASSWORD"
server_id = 5499
tables = ["sbtest.*"]
EOF
# shellcheck disable=SC1091
export SLUICE_TEST_MYSQL_PASSWORD=$(. "$src/env"; echo "$SLUICE_TEST_MYSQL_PASSWORD")
{ cat "$work/base.toml"; printf '[sink]\ntype = "sqlite"\npath = "%s"\n' "$work/replica.db"; } >"$work/sqlite.toml"
{ cat "$work/base.toml"; printf '[sink]\ntype = "jsonl"\npath = "%s"\n' "$work/changes.jsonl"; } >"$work/jsonl.toml"
# shellcheck disable=SC1091
export SLUICE_BENCH_DEST_PASSWORD=$(. "$rep/env"; echo "$SLUICE_TEST_MYSQL_PASSWORD")
rep_port=$(. "$rep/env"; echo "$SLUICE_TEST_MYSQL_PORT")
{ cat "$work/base.toml"
  printf '[sink]\ntype = "mysql"\n\n[sink.mysql]\nhost = "127.0.0.1"\nport = %s\nuser = "sluice"\n' "$rep_port"
  printf 'password_env = "SLUICE_BENCH_DEST_PASSWORD"\ndatabase = "sluice_bench"\n\n[sink.mysql.databases]\nsbtest = "sbtest_sluice"\n'
} >"$work/mysql.toml"
if [[ " ${sinks[*]} " == *" postgres "* ]]; then
  "$root/scripts/postgres-test-server.sh" start "$pg" >/dev/null
  # shellcheck disable=SC1091
  . "$pg/env"
  { cat "$work/base.toml"
    printf '[sink]\ntype = "postgres"\n\n[sink.postgres]\nconninfo = "%s"\npassword_env = "SLUICE_TEST_PG_PASSWORD"\n' \
      "$SLUICE_TEST_PG_CONNINFO"
  } >"$work/postgres.toml"
fi
for s in "${sinks[@]}"; do
  "$build/sluice" run --config "$work/$s.toml" --until-caught-up >"$work/$s-snapshot.log" 2>&1 \
    || { echo "snapshot into $s failed:" >&2; tail -5 "$work/$s-snapshot.log" >&2; exit 1; }
done

echo "backlog: sysbench oltp_write_only, $events transactions, 1 thread (replica SQL thread and sluice stopped)"
"${sb[@]}" --rand-seed=2 --events="$events" --time=0 --report-interval=0 run >/dev/null
end_gtid=$(sql "$src_sock" "SELECT @@gtid_binlog_pos")
# Wait until the replica's IO thread has the whole backlog in its relay log.
for _ in $(seq 600); do
  io=$(sql "$rep_sock" "SHOW SLAVE STATUS\G" | awk '/Gtid_IO_Pos/ {print $2}')
  [ "$io" = "$end_gtid" ] && break
  sleep 0.1
done
rows=$((events * 4))  # oltp_write_only: UPDATE, UPDATE, DELETE, INSERT per transaction

now() { date +%s.%N; }
# CPU seconds (user + sys) a process has used: on this shared machine wall times move with the
# load (the replica's single SQL thread most, sluice's pipelined threads less), CPU time far less.
tck=$(getconf CLK_TCK)
cpu_of() { awk -v t="$tck" '{printf "%.2f", ($14 + $15) / t}' "/proc/$1/stat"; }
rep_pid=$(cat "$rep/mariadbd.pid")
c0=$(cpu_of "$rep_pid")
t0=$(now)
sql "$rep_sock" "START SLAVE SQL_THREAD"
sql "$rep_sock" "SELECT MASTER_GTID_WAIT('$end_gtid', 600)" >/dev/null
t_rep=$(echo "$(now) - $t0" | bc)
cpu_rep=$(echo "$(cpu_of "$rep_pid") - $c0" | bc)

run_sluice() {  # $1 = sink; peak RSS (KiB) and CPU seconds (user + sys) into $work/$1.rss
  /usr/bin/time -f "%M %U %S" -o "$work/$1.rss" "$build/sluice" run --config "$work/$1.toml" --until-caught-up \
    >"$work/$1-stream.log" 2>&1
}
declare -A took
for s in "${sinks[@]}"; do
  t0=$(now); run_sluice "$s"; took[$s]=$(echo "$(now) - $t0" | bc)
done

report() {  # name seconds cpu-seconds [rss]
  printf '%-44s %7.2f s %9.0f row changes/s  CPU %6.2f s%s\n' "$1" "$2" "$(echo "$rows / $2" | bc -l)" "$3" "${4:-}"
}
echo
declare -A label=([sqlite]="sluice -> SQLite" [jsonl]="sluice -> JSON lines"
                  [mysql]="sluice -> MariaDB (same server as the replica)" [postgres]="sluice -> PostgreSQL")
report "native MariaDB replica (SQL thread, 1 thread)" "$t_rep" "$cpu_rep" "   (replica mariadbd, all threads)"
ratios="" cpu_ratios=""
for s in "${sinks[@]}"; do
  read -r rss u sy <"$work/$s.rss"
  cpu=$(echo "$u + $sy" | bc)
  report "${label[$s]}" "${took[$s]}" "$cpu" "   peak RSS $((rss / 1024)) MiB"
  ratios+=$(printf ' %s %.2fx' "$s" "$(echo "$t_rep / ${took[$s]}" | bc -l)")
  cpu_ratios+=$(printf ' %s %.2fx' "$s" "$(echo "$cpu_rep / $cpu" | bc -l)")
done
echo "ratio to the replica (> 1: faster):$ratios"
echo "CPU seconds, replica's over sluice's (sluice's destination servers not counted):$cpu_ratios"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for s in "${sinks[@]}"; do grep -h "stopped at" "$work/$s-stream.log" || true; done
