#!/usr/bin/env bash
# Installs what sluice needs to build, test and run its demo on Debian 12, with apt.
# Skips packages already installed; runs `apt-get update` first when something is missing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git python3 clang libclang-rt-14-dev
  libmariadb-dev mariadb-server mariadb-client
  libzstd-dev zlib1g-dev libsqlite3-dev sqlite3
  libfmt-dev nlohmann-json3-dev libcli11-dev libtomlplusplus-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  sysbench openssl
  librdkafka-dev libnats-dev nats-server
  libcpp-httplib-dev tmux curl
  libjemalloc-dev
  libpq-dev postgresql-15
)

# Extra packages for one target only (e.g. SETUP_EXTRA=mydumper for the snapshot benchmark).
# shellcheck disable=SC2206
packages+=(${SETUP_EXTRA:-})

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
# The package starts a system MariaDB; sluice's tests and demo run their own throwaway server.
