#!/usr/bin/env bash
# The Kafka/NATS publishing tests with more SIGKILLs than `make test` uses (10 instead of 2)
# and all of Sakila (make test leaves out its two largest tables):
#   scripts/publish-stress.sh BUILD_DIR [KILLS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
kills=${2:-10}
server_dir=$(mktemp -d /tmp/sluice-publish-stress.XXXXXX)
cleanup() { scripts/mariadb-test-server.sh stop "$server_dir" || true; rm -rf "$server_dir"; }
trap cleanup EXIT
scripts/mariadb-test-server.sh start "$server_dir"
# shellcheck disable=SC1091
. "$server_dir/env"
SLUICE_PUBLISH_KILLS=$kills SLUICE_PUBLISH_FULL=1 "$build/integration_tests" --gtest_filter='Publish.*'
