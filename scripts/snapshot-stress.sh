#!/usr/bin/env bash
# Snapshot stress: SIGKILL at random moments during a parallel snapshot under a write load,
# KILLS times (default 20), then the replica must equal the source and no finished range may
# be read again. `make test` runs the same test with 3 kills.
#   scripts/snapshot-stress.sh BUILD_DIR [KILLS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
kills=${2:-20}
server_dir=$(mktemp -d /tmp/sluice-stress-mariadb.XXXXXX)
cleanup() { scripts/mariadb-test-server.sh stop "$server_dir" || true; rm -rf "$server_dir"; }
trap cleanup EXIT
scripts/mariadb-test-server.sh start "$server_dir"
# shellcheck disable=SC1091
. "$server_dir/env"
SLUICE_SNAPSHOT_KILLS=$kills "$build/integration_tests" \
  --gtest_filter='SnapshotParallel.SigkillDuringParallelSnapshotConverges:SnapshotFault.*'
