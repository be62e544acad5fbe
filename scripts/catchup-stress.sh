#!/usr/bin/env bash
# Issue 7's catch-up acceptance test at a larger size: TRANSACTIONS (default 100,000) with one
# DDL statement per 200 of them, under binlog_row_metadata=NO_LOG, caught up in one run; the
# replica must equal the source. `make test` runs it with 10,000.
#   scripts/catchup-stress.sh BUILD_DIR [TRANSACTIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
txns=${2:-100000}
server_dir=$(mktemp -d /tmp/sluice-catchup-mariadb.XXXXXX)
cleanup() { scripts/mariadb-test-server.sh stop "$server_dir" || true; rm -rf "$server_dir"; }
trap cleanup EXIT
scripts/mariadb-test-server.sh start "$server_dir"
# shellcheck disable=SC1091
. "$server_dir/env"
SLUICE_CATCHUP_TRANSACTIONS=$txns "$build/integration_tests" \
  --gtest_filter='OnlineReread.CatchingUpOverTransactionsAndDdlEqualsTheSource'
