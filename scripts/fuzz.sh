#!/usr/bin/env bash
# Builds and runs the libFuzzer targets of fuzz/ (ASan + UBSan, clang) for SECONDS in total,
# split across the targets; fails on any crash, hang (-timeout), OOM or sanitizer report.
#   scripts/fuzz.sh SECONDS          (make fuzz: 90, make fuzz-long: 600; CPU seconds, JOBS targets at a time)
#   scripts/fuzz.sh --build-only     (configures and builds the targets, runs nothing)
# Environment: FUZZ_BUILD (default build-fuzz), JOBS (default 2), FUZZ_TARGETS (default
# "event_stream decode json_binary rows"), FUZZ_TIMEOUT (seconds of wall time one input may
# take before it counts as a hang; default 10; make test's run at nice 19 uses 60).
# The seed corpus comes from fuzz/make-corpus.sh (fixtures + hand-made values + the
# committed crashers of tests/fuzz-regressions); inputs that found new coverage accumulate
# in $FUZZ_BUILD/corpus/<target>. A crasher lands in $FUZZ_BUILD/fuzz-artifacts/<target>/;
# replay it with `$FUZZ_BUILD/<target>_fuzzer FILE` and commit it under tests/fuzz-regressions.
set -euo pipefail
cd "$(dirname "$0")/.."

total=${1:?usage: scripts/fuzz.sh SECONDS | --build-only}
build=${FUZZ_BUILD:-build-fuzz}
jobs=${JOBS:-2}
targets=${FUZZ_TARGETS:-event_stream decode json_binary rows}

command -v clang++ >/dev/null || { echo "fuzz: clang++ is needed (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$build" -DSLUICE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
bins=()
for t in $targets; do bins+=("${t}_fuzzer"); done
echo "fuzz: building ${bins[*]} in $build"
cmake --build "$build" -j"$jobs" --target "${bins[@]}" >"$build/fuzz-build.log" 2>&1 || {
  tail -40 "$build/fuzz-build.log" >&2; echo "fuzz: build failed (log: $build/fuzz-build.log)" >&2; exit 1; }

[ "$total" = --build-only ] && exit 0

seeds="$build/fuzz-seeds"
rm -rf "$seeds"
bash fuzz/make-corpus.sh "$seeds" >/dev/null

# Share of the time and input size limit per target.
weight() { case $1 in event_stream|decode) echo 2 ;; *) echo 1 ;; esac; }
max_len() { case $1 in event_stream) echo 16384 ;; json_binary) echo 16384 ;; decode) echo 32768 ;; *) echo 4096 ;; esac; }
# decode runs whole `sluice decode` commands: held to 1 GiB of RSS (issue 6 acceptance).
rss_mb() { case $1 in decode) echo 1024 ;; *) echo 2048 ;; esac; }
sum=0
for t in $targets; do sum=$((sum + $(weight "$t"))); done

# Each target is one libFuzzer process on one core: they run $jobs at a time, each for its
# share of SECONDS, so make test's 90 s of fuzzing take about 90/$jobs s of wall time.
run_target() {
  local t=$1 secs=$2 corpus="$build/corpus/$1" artifacts="$build/fuzz-artifacts/$1" log="$build/fuzz-$1.log" rc=0
  mkdir -p "$corpus" "$artifacts"
  "$build/${t}_fuzzer" -max_total_time="$secs" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb="$(rss_mb "$t")" -malloc_limit_mb="$(rss_mb "$t")" \
    -max_len="$(max_len "$t")" -print_final_stats=1 -artifact_prefix="$artifacts/" \
    "$corpus" "$seeds/$t" >"$log" 2>&1 || rc=$?
  echo "$rc" >"$build/fuzz-$t.rc"
}
pids=()
for t in $targets; do
  secs=$((total * $(weight "$t") / sum))
  [ "$secs" -ge 1 ] || secs=1
  echo "fuzz: $t for ${secs}s (log: $build/fuzz-$t.log)"
  rm -f "$build/fuzz-$t.rc"
  run_target "$t" "$secs" &
  pids+=($!)
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
done
wait "${pids[@]}" || true

status=0
summary=()
for t in $targets; do
  log="$build/fuzz-$t.log"
  rc=$(cat "$build/fuzz-$t.rc" 2>/dev/null || echo 99)
  secs=$((total * $(weight "$t") / sum))
  [ "$secs" -ge 1 ] || secs=1
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  corp=$(grep -oE 'corp: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
  if [ "$rc" -eq 0 ]; then
    summary+=("fuzz: $t: ok, ${execs:-?} execs in ${secs}s, cov ${cov:-?}, corpus ${corp:-?}")
  else
    status=1
    artifact=$(sed -n "s/.*Test unit written to //p" "$log" | tail -1)
    reason=$(grep -m1 -E 'ERROR: |runtime error|ALARM|out-of-memory|deadly signal' "$log" || true)
    summary+=("fuzz: $t: FAILED (exit $rc): ${reason:-see $log}; input: ${artifact:-none}")
    grep -A30 -m1 -E 'ERROR: |runtime error|ALARM|out-of-memory' "$log" >&2 || tail -30 "$log" >&2
  fi
done
printf '%s\n' "${summary[@]}"
exit $status
