// Test-only helpers: connection options for the live test server started by
// scripts/mariadb-test-server.sh (SLUICE_TEST_MYSQL_HOST/PORT/USER/PASSWORD). Tests that use
// them FAIL (never skip) when the variables are unset. Header-only; include from *_test.cc.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "mysql/connection.h"

namespace sluice::testing {

// Fills *out from the environment; returns false (after ADD_FAILURE) if anything is missing.
inline bool TestServerOptions(ConnectOptions* out) {
  const char* host = std::getenv("SLUICE_TEST_MYSQL_HOST");
  const char* port = std::getenv("SLUICE_TEST_MYSQL_PORT");
  const char* user = std::getenv("SLUICE_TEST_MYSQL_USER");
  const char* password = std::getenv("SLUICE_TEST_MYSQL_PASSWORD");
  if (!host || !port || !user || !password) {
    ADD_FAILURE() << "SLUICE_TEST_MYSQL_HOST/PORT/USER/PASSWORD are not set: start a server with "
                     "`scripts/mariadb-test-server.sh start DIR` and `. DIR/env`";
    return false;
  }
  out->host = host;
  out->port = static_cast<uint16_t>(std::atoi(port));
  out->user = user;
  out->password = password;
  out->connect_timeout_s = 5;
  out->read_timeout_s = 30;
  return true;
}

// Connects to the test server or fails the test (returns null).
inline std::unique_ptr<Connection> ConnectTestServer() {
  ConnectOptions o;
  if (!TestServerOptions(&o)) return nullptr;
  Result<std::unique_ptr<Connection>> c = Connection::Connect(o);
  if (!c.ok()) {
    ADD_FAILURE() << c.status().ToString();
    return nullptr;
  }
  return std::move(c).value();
}

}  // namespace sluice::testing
