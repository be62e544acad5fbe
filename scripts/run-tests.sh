#!/usr/bin/env bash
# Runs the whole test suite of make test (docs/testing.md):
#   1. the unit tests of ASAN_BUILD (ctest; ASan+UBSan);
#   2. ASAN_BUILD's integration_tests against its own sluice binary (the sanitizers watch
#      every sluice process the tests start), split into SLUICE_TEST_SHARDS shards that run
#      side by side, each against its own throwaway MariaDB (tests change server globals);
#   3. the same integration_tests against REL_BUILD's optimised sluice binary, for the tests
#      named in SLUICE_RELEASE_TESTS: the long and timing-sensitive ones left out of step 2
#      (they also serve as the optimised binary's smoke test); in shards too;
#   4. with FUZZ_SECONDS, scripts/fuzz.sh on ASAN_BUILD's fuzz targets, beside step 3.
# With REL_PREBUILD=1, REL_BUILD's sluice is built at nice 19 while steps 1-2 run (they wait
# on servers and processes much of the time), and step 3 waits for it; with FUZZ_PREBUILD=1
# the fuzz targets are built after it the same way (scripts/fuzz.sh --build-only), so the
# fuzz run of make test does not wait for its own build.
#   scripts/run-tests.sh REL_BUILD ASAN_BUILD
set -euo pipefail
cd "$(dirname "$0")/.."

rel=${1:?usage: scripts/run-tests.sh REL_BUILD ASAN_BUILD}
asan=${2:?usage: scripts/run-tests.sh REL_BUILD ASAN_BUILD}
shards=${SLUICE_TEST_SHARDS:-2}
# Long (tmux display, 2-worker snapshot under load, 3-node NATS kill, 10,000-transaction
# catch-up over 50 DDL; the 1 M-row verify and two incremental tests with a writer, which
# took 115, 60 and 42 s under ASan at load 9-12) or timing-sensitive tests, and five of the
# six DDL matrix runs (15-35 s; Streaming_FULL runs under ASan): run once, against the
# optimised binary. BigTransaction.SqliteAppliesItInPartsUnderTheCap too: its peak RSS is
# checked only there (ASan's quarantine keeps freed memory).
long=${SLUICE_LONG_TESTS:-Observe.ProgressDisplayInATerminal:SnapshotParallel.EveryKeyTypeUnderWriteLoadMatchesAndEachKeyMovesForward:Publish.NatsClusterNodeKilledAndSluiceKilledExactlyOnce:OnlineReread.CatchingUpOverTransactionsAndDdlEqualsTheSource:Verify.MillionRowsEqualAndOneChangedValueNamedIdleAndUnderLoad:Incremental.UpsertRunsUnderConcurrentWriterAndLateCommit:Incremental.SigkillDuringBackfillAndPagingResumes:ModesAndMetadata/DdlMatrix.*/Stopped_*:ModesAndMetadata/DdlMatrix.*/Streaming_MINIMAL:ModesAndMetadata/DdlMatrix.*/Streaming_NO_LOG:BigTransaction.SqliteAppliesItInPartsUnderTheCap}
asan_filter=${SLUICE_ASAN_GTEST_FILTER:--$long}
release_filter=${SLUICE_RELEASE_TESTS:-$long}

if [ ! -d ../shared/fixtures/binlogs ] || [ ! -d ../shared/fixtures/sakila ]; then
  echo "run-tests: ../shared/fixtures is missing (binlogs/ and sakila/ are needed by the tests)" >&2
  exit 1
fi
need=("$asan/integration_tests" "$asan/sluice")
[ "${REL_PREBUILD:-0}" = 1 ] || need+=("$rel/sluice")
for f in "${need[@]}"; do
  [ -x "$f" ] || { echo "run-tests: $f is missing (make test builds it)" >&2; exit 1; }
done

logs=$(mktemp -d /tmp/sluice-test-logs.XXXXXX)
servers=()
fuzz_pid=""
cleanup() {
  [ -n "$fuzz_pid" ] && kill "$fuzz_pid" 2>/dev/null || true
  [ -n "${fuzz_run_pid:-}" ] && kill "$fuzz_run_pid" 2>/dev/null || true
  for d in "${servers[@]}"; do scripts/mariadb-test-server.sh stop "$d" >/dev/null 2>&1 || true; rm -rf "$d"; done
}
trap cleanup EXIT
# One server after the other: the script's first use unpacks shared files.
for i in $(seq 0 $((shards - 1))); do
  d=$(mktemp -d /tmp/sluice-test-mariadb.XXXXXX)
  servers+=("$d")
  scripts/mariadb-test-server.sh start "$d" >"$logs/server-$i.log" 2>&1 || {
    cat "$logs/server-$i.log" >&2; echo "run-tests: MariaDB $i did not start" >&2; exit 1; }
done

status=0
started=$SECONDS
echo "== unit tests in $asan (ASan+UBSan; ctest without integration_tests, which the steps below run)"
# shellcheck disable=SC1091
(. "${servers[0]}/env" && cd "$asan" && ctest --output-on-failure --timeout 900 -E "^integration_tests$") || status=1

# One background job, nice 19: the optimised sluice (step 3 needs it), then the fuzz targets.
if [ "${REL_PREBUILD:-0}" = 1 ] || [ "${FUZZ_PREBUILD:-0}" = 1 ]; then
  ( if [ "${REL_PREBUILD:-0}" = 1 ]; then
      rc=0
      nice -n 19 cmake --build "$rel" -j"${JOBS:-2}" --target sluice >"$logs/rel-build.log" 2>&1 || rc=$?
      echo "$rc" >"$logs/rel-build.rc"
      [ "$rc" = 0 ] || exit "$rc"
    fi
    if [ "${FUZZ_PREBUILD:-0}" = 1 ]; then
      nice -n 19 bash scripts/fuzz.sh --build-only >"$logs/fuzz-build.log" 2>&1
    fi ) &
  fuzz_pid=$!
fi

# run_shards NAME SLUICE_BINARY TIMEOUT FILTER [VAR=VALUE...]: ASAN_BUILD's integration_tests
# against SLUICE_BINARY in $shards gtest shards side by side, shard i on server i; each
# shard's log ($logs/NAME-i.log) is printed whole when it fails, with its three slowest tests.
run_shards() {
  local name=$1 binary=$2 limit=$3 filter=$4
  shift 4
  local pids=() i
  for i in $(seq 0 $((shards - 1))); do
    # shellcheck disable=SC1091
    ( . "${servers[$i]}/env"
      env "$@" SLUICE_TEST_BINARY="$PWD/$binary" GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i \
        timeout "$limit" "$asan/integration_tests" --gtest_filter="$filter" ) >"$logs/$name-$i.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    if wait "${pids[$i]}"; then
      echo "shard $i: $(grep -E '^\[  PASSED  \]' "$logs/$name-$i.log" || echo 'passed')"
    else
      status=1
      echo "shard $i FAILED (whole log follows; kept in $logs/$name-$i.log):"
      cat "$logs/$name-$i.log"
    fi
    grep -E '^\[       OK \]' "$logs/$name-$i.log" | sed -E 's/.*\(([0-9]+) ms\)$/\1 &/' | sort -rn | head -3 |
      sed 's/^[0-9]* /  slowest: /' || true
  done
}

echo "== integration tests of $asan against $asan/sluice, $shards shards side by side (filter: $asan_filter)"
run_shards asan "$asan/sluice" 1500 "$asan_filter" SLUICE_TEST_SANITIZED=1
echo "   ($((SECONDS - started)) s so far)"

if [ "${REL_PREBUILD:-0}" = 1 ]; then
  echo "== waiting for the optimised sluice ($rel, building at nice 19 since the unit tests)"
  while [ ! -f "$logs/rel-build.rc" ] && kill -0 "$fuzz_pid" 2>/dev/null; do sleep 1; done
  if [ "$(cat "$logs/rel-build.rc" 2>/dev/null || echo 1)" != 0 ]; then
    echo "run-tests: building $rel/sluice failed:" >&2; tail -40 "$logs/rel-build.log" >&2; exit 1
  fi
  echo "   ($((SECONDS - started)) s so far)"
fi
# With FUZZ_SECONDS, make test's fuzz run (scripts/fuzz.sh, targets of the ASan build) runs
# beside step 3 at nice 19: the release tests leave a core mostly idle, and at nice 19 the
# fuzzers take only that (the timing-sensitive tests keep the CPU they need).
fuzz_run_pid=""
if [ -n "${FUZZ_SECONDS:-}" ]; then
  # A starved fuzzer must not report a slow input as a hang: 60 s of wall time per input.
  FUZZ_BUILD="$asan" FUZZ_TIMEOUT=60 nice -n 19 bash scripts/fuzz.sh "$FUZZ_SECONDS" >"$logs/fuzz.log" 2>&1 &
  fuzz_run_pid=$!
fi
echo "== integration tests of $asan against $rel/sluice, $shards shards side by side (filter: $release_filter)"
run_shards release "$rel/sluice" 900 "$release_filter"
echo "   ($((SECONDS - started)) s so far)"
if [ -n "$fuzz_run_pid" ]; then
  echo "== fuzzing (scripts/fuzz.sh $FUZZ_SECONDS, FUZZ_BUILD=$asan), started beside the release tests"
  wait "$fuzz_run_pid" || status=1
  cat "$logs/fuzz.log"
fi
echo "   ($((SECONDS - started)) s in all)"

if [ -n "$fuzz_pid" ]; then
  if ! wait "$fuzz_pid"; then
    echo "run-tests: building the fuzz targets failed:" >&2; tail -30 "$logs/fuzz-build.log" >&2; status=1
  fi
  fuzz_pid=""
fi
[ $status -eq 0 ] && rm -rf "$logs"
exit $status
