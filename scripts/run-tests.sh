#!/usr/bin/env bash
# Runs the whole test suite: starts a throwaway MariaDB (scripts/mariadb-test-server.sh),
# runs every test binary of each given build directory through ctest, stops the server.
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
for build in "$@"; do
  echo "== tests in $build"
  (cd "$build" && ctest --output-on-failure --timeout 900) || status=1
done
exit $status
