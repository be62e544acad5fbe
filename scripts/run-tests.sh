#!/usr/bin/env bash
# Runs the whole test suite: starts a throwaway MariaDB (scripts/mariadb-test-server.sh),
# runs every test binary of each given build directory through ctest, stops the server. A
# later build without integration_tests gets the first build's run against its sluice binary.
#   scripts/run-tests.sh BUILD_DIR [MORE_BUILD_DIRS...]
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -d ../shared/fixtures/binlogs ] || [ ! -d ../shared/fixtures/sakila ]; then
  echo "run-tests: ../shared/fixtures is missing (binlogs/ and sakila/ are needed by the tests)" >&2
  exit 1
fi

server_dir=$(mktemp -d /tmp/sluice-test-mariadb.XXXXXX)
cleanup() { scripts/mariadb-test-server.sh stop "$server_dir" || true; rm -rf "$server_dir"; }
trap cleanup EXIT
scripts/mariadb-test-server.sh start "$server_dir"
# shellcheck disable=SC1091
. "$server_dir/env"

status=0
first=$1
for build in "$@"; do
  echo "== tests in $build"
  (cd "$build" && ctest --output-on-failure --timeout 900) || status=1
  # A build without its own integration_tests (the ASan build of make test) runs the first
  # build's against its own sluice binary: the sanitizers watch sluice, and the test code is
  # compiled once.
  if [ "$build" != "$first" ] && grep -q '^SLUICE_INTEGRATION_TESTS:BOOL=OFF' "$build/CMakeCache.txt" \
     && [ -x "$build/sluice" ]; then
    echo "== integration tests of $first against $build/sluice"
    SLUICE_TEST_BINARY="$PWD/$build/sluice" SLUICE_TEST_SANITIZED=1 \
      timeout 1200 "$first/integration_tests" ${SLUICE_ASAN_GTEST_FILTER:+--gtest_filter="$SLUICE_ASAN_GTEST_FILTER"} \
      || status=1
  fi
done
exit $status
