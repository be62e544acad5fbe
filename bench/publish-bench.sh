#!/usr/bin/env bash
# Publishing throughput (BENCHMARKS.md, "Publishing"): the same snapshot and the same stream
# into three sinks, side by side, as records/s of wall time:
#   jsonl  the JSON lines file sink (the reference)
#   kafka  librdkafka's mock cluster (build/kafka_mock, 3 brokers), transactional producer
#   nats   one nats-server with JetStream (file storage), 1 replica
# A throwaway MariaDB gets a table of ROWS rows (snapshot), then CHANGES row changes made by
# UPDATE statements of 1000 rows each (stream). Each sink runs `sluice run --until-caught-up`
# once for the snapshot and once for the stream; the time of each run is printed with
# records/s and the ratio to JSON lines. Whole processes are timed (connect and start-up
# included: keep ROWS large enough that they do not matter).
#
#   bench/publish-bench.sh [BUILD_DIR]        # default build/
# Environment: ROWS (default 200000), CHANGES (default 100000).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
rows=${ROWS:-200000}
changes=${CHANGES:-100000}
sluice=$build/sluice
mock=$build/kafka_mock
[ -x "$sluice" ] && [ -x "$mock" ] || { echo "build sluice and kafka_mock first (cmake --build $build --target sluice kafka_mock)" >&2; exit 1; }

work=$(mktemp -d /tmp/sluice-publish-bench.XXXXXX)
mock_pid=""; nats_pid=""
cleanup() {
  [ -n "$mock_pid" ] && kill "$mock_pid" 2>/dev/null || true
  [ -n "$nats_pid" ] && kill "$nats_pid" 2>/dev/null || true
  "$root/scripts/mariadb-test-server.sh" stop "$work/db" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
"$root/scripts/mariadb-test-server.sh" start "$work/db" >/dev/null
# shellcheck disable=SC1091
. "$work/db/env"
sql() { mariadb -h127.0.0.1 -P"$SLUICE_TEST_MYSQL_PORT" -u"$SLUICE_TEST_MYSQL_USER" -p"$SLUICE_TEST_MYSQL_PASSWORD" "$@"; }

sql -e "CREATE DATABASE bench; CREATE TABLE bench.t (id INT PRIMARY KEY, name VARCHAR(40), qty INT, price DECIMAL(10,2), updated DATETIME);
  INSERT INTO bench.t SELECT seq, CONCAT('item-', seq), seq % 100, seq / 7, '2024-01-01 00:00:00' FROM bench.seq_1_to_${rows};"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mkfifo "$work/mock.in"
"$mock" --brokers 3 < "$work/mock.in" > "$work/mock.out" 2>&1 &
mock_pid=$!
exec 9>"$work/mock.in"
for _ in $(seq 50); do grep -q bootstrap "$work/mock.out" && break; sleep 0.1; done
bootstrap=$(awk '/^bootstrap/{print $2}' "$work/mock.out")
nats_port=$(free_port)
mkdir -p "$work/nats"
nats-server -js -a 127.0.0.1 -p "$nats_port" -sd "$work/nats" > "$work/nats.log" 2>&1 &
nats_pid=$!
sleep 1

config() {  # name, sink lines
  cat > "$work/$1.toml" <<TOML
[source]
host = "127.0.0.1"
port = $SLUICE_TEST_MYSQL_PORT
user = "$SLUICE_TEST_MYSQL_USER"
password_env = "SLUICE_TEST_MYSQL_PASSWORD"
server_id = $2
tables = ["bench.*"]
tls = "disabled"
[snapshot]
chunk_rows = 10000
[sink]
$3
TOML
}
config jsonl 6001 "type = \"jsonl\"
path = \"$work/out.jsonl\""
config kafka 6002 "type = \"kafka\"
path = \"$work/unused\"
[sink.kafka]
bootstrap_servers = \"$bootstrap\"
transactional_id = \"bench\""
config nats 6003 "type = \"nats\"
path = \"$work/unused\"
[sink.nats]
url = \"nats://127.0.0.1:$nats_port\""

declare -A snap stream
timed() { local t0 t1; t0=$(date +%s.%N); "$sluice" run --config "$work/$1.toml" --until-caught-up -q; t1=$(date +%s.%N); echo "$t1 - $t0" | bc -l; }
for s in jsonl kafka nats; do snap[$s]=$(timed $s); done
updates=$((changes / 1000))
for i in $(seq 1 $updates); do
  echo "UPDATE bench.t SET qty = qty + 1, updated = NOW() WHERE id BETWEEN $(( (i - 1) * 1000 % rows + 1 )) AND $(( ((i - 1) * 1000 % rows) + 1000 ));"
done | sql
for s in jsonl kafka nats; do stream[$s]=$(timed $s); done

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); rows $rows, changes $changes"
printf '%-6s %12s %14s %8s %12s %14s %8s\n' sink "snapshot s" "records/s" "vs jsonl" "stream s" "records/s" "vs jsonl"
for s in jsonl kafka nats; do
  printf '%-6s %12.2f %14.0f %8.2f %12.2f %14.0f %8.2f\n' "$s" "${snap[$s]}" "$(echo "$rows / ${snap[$s]}" | bc -l)" \
    "$(echo "${snap[jsonl]} / ${snap[$s]}" | bc -l)" "${stream[$s]}" "$(echo "$changes / ${stream[$s]}" | bc -l)" \
    "$(echo "${stream[jsonl]} / ${stream[$s]}" | bc -l)"
done
