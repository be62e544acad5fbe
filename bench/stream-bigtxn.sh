#!/usr/bin/env bash
# Memory cap benchmark (issue 8): one source transaction of ROWS row changes (default
# 4,000,000, over 1 GB of binlog) streamed into SQLite and into JSON lines with the default
# sink.max_buffered_bytes (256 MiB, or CAP bytes), peak RSS of sluice measured.
#
#   bench/stream-bigtxn.sh [BUILD_DIR]      # make stream-bigtxn
#
# A throwaway MariaDB (scripts/mariadb-test-server.sh) gets an empty table; sluice takes its
# (empty) snapshot into each sink; then one INSERT ... SELECT from the sequence engine writes
# ROWS rows of about 280 bytes in one transaction; `sluice run --until-caught-up` is timed
# into each sink under /usr/bin/time. Prints time, rows/s and peak RSS per sink, and the
# binlog size of the transaction. The make test sample is tests/integration/big_txn_test.cc.
# Environment: ROWS, CAP (bytes; default: the config default), KEEP=1 keeps the directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
rows=${ROWS:-4000000}
work=$(mktemp -d /tmp/sluice-bigtxn.XXXXXX)
src="$work/source"
cleanup() {
  "$root/scripts/mariadb-test-server.sh" stop "$src" >/dev/null 2>&1 || true
  [ "${KEEP:-0}" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT

"$root/scripts/mariadb-test-server.sh" start "$src" --max-binlog-size=1073741824 >/dev/null
sock="$src/mysqld.sock"
sql() { mariadb --no-defaults --socket="$sock" -uroot -N -e "$1"; }
sql "CREATE DATABASE big; CREATE TABLE big.t (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(255) NOT NULL,
     pad CHAR(10) NOT NULL) ENGINE=InnoDB"
port=$(. "$src/env"; echo "$SLUICE_TEST_MYSQL_PORT")
export SLUICE_TEST_MYSQL_PASSWORD=$(. "$src/env"; echo "$SLUICE_TEST_MYSQL_PASSWORD")
cap_line=""
[ -n "${CAP:-}" ] && cap_line="max_buffered_bytes = $CAP"
for s in sqlite jsonl; do
  out="$work/replica.db"; [ "$s" = jsonl ] && out="$work/changes.jsonl"
  cat >"$work/$s.toml" <<EOT
[source]
host = "127.0.0.1"
port = $port
user = "sluice"
password_env = "SLUICE_TEST_MYSQL_PASSWORD"
server_id = 5498
tables = ["big.t"]
[sink]
type = "$s"
path = "$out"
$cap_line
EOT
  "$build/sluice" run --config "$work/$s.toml" --until-caught-up >"$work/$s-snapshot.log" 2>&1
done

before=$(sql "SHOW MASTER STATUS" | awk '{print $2}')
sql "USE big; INSERT INTO big.t SELECT seq, seq % 1000, CONCAT('row ', seq, ' ', REPEAT('c', 240)), 'pad' FROM seq_1_to_$rows"
after=$(sql "SHOW MASTER STATUS" | awk '{print $2}')
echo "one transaction of $rows row changes: $(( (after - before) / 1048576 )) MiB of binlog; cap ${CAP:-268435456 (default)} bytes"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for s in sqlite jsonl; do
  t0=$(date +%s.%N)
  /usr/bin/time -f "%M" -o "$work/$s.rss" "$build/sluice" run --config "$work/$s.toml" --until-caught-up \
    >"$work/$s-stream.log" 2>&1
  t=$(echo "$(date +%s.%N) - $t0" | bc)
  printf '%-12s %7.1f s %9.0f rows/s   peak RSS %d MiB\n' "$s" "$t" "$(echo "$rows / $t" | bc -l)" \
    "$(( $(cat "$work/$s.rss") / 1024 ))"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$(sqlite3 "$work/replica.db" 'SELECT count(*) FROM "big.t"')" = "$rows" ] || { echo "SQLite replica: wrong row count" >&2; exit 1; }
[ "$(grep -c '"op":"c"' "$work/changes.jsonl")" = "$rows" ] || { echo "JSON lines: wrong line count" >&2; exit 1; }
echo "both sinks hold all $rows rows"
