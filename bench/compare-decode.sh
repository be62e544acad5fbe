#!/usr/bin/env bash
# Times whole processes side by side on one binlog file (see BENCHMARKS.md):
#   A  sluice decode --rows FILE > /dev/null             (row changes as JSON lines)
#   B  mariadb-binlog --base64-output=decode-rows -v FILE > /dev/null
#   C  sluice decode --no-output FILE                    (decode every event and row value,
#                                                          write nothing) -> MB/s
# Each command runs RUNS times (default 3) after one warm-up read of the file. sluice
# --rows formats and writes the JSON on a second thread; mariadb-binlog and sluice
# --no-output are single-threaded (C runs on one core; set CPU=n to also pin it there with
# taskset). For each, the best and median wall time and the median CPU time (user + sys)
# are printed; the ratio B/A and the MB/s of C are given for both clocks (CPU time is the
# steadier figure when other processes share the machine).
#
#   bench/compare-decode.sh FILE [SLUICE]   # SLUICE default: build-bench/sluice
# Environment: RUNS (default 3), CPU (unset: no pinning).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
file=${1:?usage: $0 BINLOG_FILE [SLUICE_BINARY]}
sluice=${2:-$root/build-bench/sluice}
runs=${RUNS:-3}
cpu=${CPU:-}

[ -x "$sluice" ] || { echo "no sluice binary at $sluice (build it: see BENCHMARKS.md)" >&2; exit 1; }
command -v mariadb-binlog >/dev/null || { echo "mariadb-binlog not found" >&2; exit 1; }
bytes=$(stat -c %s "$file")
cat "$file" >/dev/null  # page cache warm-up: every run reads from memory

pin=()
[ -n "$cpu" ] && command -v taskset >/dev/null && pin=(taskset -c "$cpu")

# time_cmd NAME PIN CMD... : runs CMD `runs` times (pinned when PIN=1); prints the wall
# times and sets MEDIAN, BEST (wall seconds) and CPU (median user+sys seconds). Output
# goes to /dev/null.
time_cmd() {
  local name=$1 pinned=$2; shift 2
  local p=()
  [ "$pinned" = 1 ] && p=("${pin[@]}")
  local times=() cpus=() tf
  tf=$(mktemp)
  for _ in $(seq 1 "$runs"); do
    /usr/bin/time -o "$tf" -f "%e %U %S" "${p[@]}" "$@" >/dev/null 2>/dev/null \
      || { echo "$name failed" >&2; exit 1; }
    read -r e u s <"$tf"
    times+=("$e")
    cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN{printf "%.2f", u + s}')")
  done
  rm -f "$tf"
  local mid=$(( (runs + 1) / 2 ))
  BEST=$(printf '%s\n' "${times[@]}" | sort -g | head -1)
  MEDIAN=$(printf '%s\n' "${times[@]}" | sort -g | sed -n "${mid}p")
  CPU=$(printf '%s\n' "${cpus[@]}" | sort -g | sed -n "${mid}p")
  printf '%-30s wall: %s  (best %.2f s, median %.2f s)  cpu median %.2f s\n' \
    "$name" "${times[*]}" "$BEST" "$MEDIAN" "$CPU"
}

echo "file: $file ($bytes bytes, $(awk "BEGIN{printf \"%.1f\", $bytes/1e6}") MB); $runs runs each; load: $(cut -d' ' -f1-3 /proc/loadavg)"
time_cmd "sluice decode --rows" 0 "$sluice" decode --rows "$file"
a=$MEDIAN; acpu=$CPU
time_cmd "mariadb-binlog -v decode-rows" 0 mariadb-binlog --base64-output=decode-rows -v "$file"
b=$MEDIAN; bcpu=$CPU
time_cmd "sluice decode --no-output" 1 "$sluice" decode --no-output "$file"
c=$MEDIAN; cbest=$BEST; ccpu=$CPU
awk -v a="$a" -v b="$b" -v ac="$acpu" -v bc="$bcpu" \
  'BEGIN{printf "speedup mariadb-binlog / sluice --rows: %.1fx wall (medians), %.1fx cpu\n", b / a, bc / ac}'
awk -v n="$bytes" -v c="$c" -v cb="$cbest" -v cc="$ccpu" \
  'BEGIN{printf "decode without output: %.0f MB/s wall median, %.0f MB/s wall best, %.0f MB/s cpu\n", n / 1e6 / c, n / 1e6 / cb, n / 1e6 / cc}'
