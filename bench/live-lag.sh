#!/usr/bin/env bash
# Live lag benchmark (issue 8): sluice streams while sysbench oltp_write_only runs with 4
# threads for DURATION seconds; reports the lag distribution and the drain time.
#
#   bench/live-lag.sh [BUILD_DIR] [sqlite|jsonl]      # default build, sqlite
#
# Lag is measured with probes: every 100 ms a row is inserted (autocommit) into
# lagprobe.p on the source and its commit time noted; a poller (every 10 ms) notes when the
# row is in the sink (SQLite: the replica table; JSON lines: the line in the file). The lag
# of a probe is the difference. Drain time: from the end of the load until the sink holds
# the last probe inserted after it. Environment: DURATION (default 60), TABLE_SIZE (100000).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
sink=${2:-sqlite}
duration=${DURATION:-60}
table_size=${TABLE_SIZE:-100000}
work=$(mktemp -d /tmp/sluice-live-lag.XXXXXX)
src="$work/source"
sluice_pid=""
cleanup() {
  [ -n "$sluice_pid" ] && kill "$sluice_pid" 2>/dev/null && wait "$sluice_pid" 2>/dev/null || true
  "$root/scripts/mariadb-test-server.sh" stop "$src" >/dev/null 2>&1 || true
  [ "${KEEP:-0}" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT

"$root/scripts/mariadb-test-server.sh" start "$src" >/dev/null
# shellcheck disable=SC1091
. "$src/env"
sock="$src/mysqld.sock"
sql() { mariadb --no-defaults --socket="$sock" -uroot -N -e "$1"; }
sql "CREATE DATABASE sbtest; CREATE DATABASE lagprobe;
     CREATE TABLE lagprobe.p (id INT AUTO_INCREMENT PRIMARY KEY, t DOUBLE)"
sb=(sysbench oltp_write_only --db-driver=mysql --mysql-socket="$sock" --mysql-user=root
    --mysql-db=sbtest --tables=4 --table-size="$table_size")
"${sb[@]}" --threads=4 prepare >/dev/null

out="$work/replica.db"
[ "$sink" = jsonl ] && out="$work/changes.jsonl"
cat >"$work/sluice.toml" <<EOF
[source]
host = "127.0.0.1"
port = $SLUICE_TEST_MYSQL_PORT
user = "sluice"
password_env = "SLUICE_TEST_MYSQL_PASSWORD"
server_id = 5498
tables = ["sbtest.*", "lagprobe.p"]
[sink]
type = "$sink"
path = "$out"
EOF
"$build/sluice" run --config "$work/sluice.toml" --until-caught-up >"$work/snapshot.log" 2>&1
"$build/sluice" run --config "$work/sluice.toml" >"$work/stream.log" 2>&1 &
sluice_pid=$!
sleep 1

"${sb[@]}" --threads=4 --time="$duration" --report-interval=0 run >"$work/sysbench.log" 2>&1 &
sb_pid=$!

python3 - "$sock" "$sink" "$out" "$sb_pid" "$sluice_pid" <<'PY'
import os, sqlite3, subprocess, sys, threading, time
sock, sink, out, sb_pid, sluice_pid = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
cli = subprocess.Popen(["mariadb", "--no-defaults", f"--socket={sock}", "-uroot", "-N", "--unbuffered"],
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
inserted = {}   # id -> commit time (monotonic)
seen = {}       # id -> time seen in the sink
load_end = [None]
stop = [False]

def alive(pid):
    try:
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return os.path.exists(f"/proc/{pid}")

def probe():
    while not stop[0]:
        cli.stdin.write("INSERT INTO lagprobe.p (t) VALUES (0); SELECT LAST_INSERT_ID();\n")
        pid = int(cli.stdout.readline())
        inserted[pid] = time.monotonic()
        if load_end[0] is None and not os.path.exists(f"/proc/{sb_pid}"):
            load_end[0] = time.monotonic()
        if load_end[0] is not None and time.monotonic() - load_end[0] > 0.5:
            stop[0] = True
        time.sleep(0.1)

def poll_ids():
    if sink == "sqlite":
        try:
            db = sqlite3.connect(f"file:{out}?mode=ro", uri=True, timeout=1)
            rows = db.execute('SELECT id FROM "lagprobe.p"').fetchall()
            db.close()
            return {r[0] for r in rows}
        except sqlite3.Error:
            return set()
    ids = set()
    with open(out, "rb") as f:
        f.seek(offset[0])
        data = f.read()
        cut = data.rfind(b"\n") + 1  # whole lines only; the rest is read next time
        offset[0] += cut
        for line in data[:cut].split(b"\n"):
            if b'"table":"p"' in line and b'"op":"c"' in line:
                i = line.find(b'"after":{"id":')
                if i >= 0:
                    j = i + len(b'"after":{"id":')
                    k = j
                    while line[k:k+1].isdigit(): k += 1
                    ids.add(int(line[j:k]))
    return ids

offset = [0]    # JSON lines: bytes of the file already scanned
rss_peak = [0]
def rss():
    try:
        with open(f"/proc/{sluice_pid}/status") as f:
            for l in f:
                if l.startswith("VmHWM:"): rss_peak[0] = max(rss_peak[0], int(l.split()[1]))
    except OSError:
        pass

t = threading.Thread(target=probe); t.start()
while not stop[0] or len(seen) < len(inserted):
    ids = poll_ids()
    now = time.monotonic()  # after reading: a probe is never seen before it was inserted
    for i in ids:
        if i not in seen: seen[i] = now
    rss()
    if stop[0] and now - load_end[0] > 120: break
    time.sleep(0.01 if sink == "sqlite" else 0.05)
t.join()
lags = sorted(seen[i] - inserted[i] for i in seen if i in inserted)
after = [i for i in inserted if inserted[i] >= load_end[0]]
last = max(after) if after else max(inserted)
drain = seen.get(last, float("nan")) - load_end[0]
def pct(p): return lags[min(len(lags) - 1, int(p * len(lags)))]
print(f"sink {sink}: {len(lags)} probes during {len(inserted)} inserted; lag p50 {pct(0.5):.3f} s, "
      f"p99 {pct(0.99):.3f} s, max {lags[-1]:.3f} s; drained {drain:.2f} s after the load stopped; "
      f"sluice peak RSS {rss_peak[0] // 1024} MiB")
PY
grep -E "transactions:|queries:" "$work/sysbench.log" || true
grep "progress" "$work/stream.log" | tail -3 || true
