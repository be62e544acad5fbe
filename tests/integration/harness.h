// Test harness for the integration tests: a live MariaDB started by
// scripts/mariadb-test-server.sh (found through SLUICE_TEST_MYSQL_* variables; a test
// fails, never skips, when they are missing), the sluice binary run as a child process
// (so it can be killed with SIGKILL), and helpers to write configs and compare results.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/compare.h"
#include "mysql/connection.h"

namespace sluice::testing {

// Connection options of the test server; ADD_FAILURE and empty options when unset.
ConnectOptions TestServer();
// A connection to the test server (asserts success).
std::unique_ptr<Connection> Connect();
// Runs statements separated by ";\n" boundaries as one multi-statement string through the
// mariadb client (so files like Sakila load as they do for a user). Returns its exit code.
int RunSqlFile(const std::string& path, const std::string& database = "");
int RunSqlText(const std::string& sql, const std::string& database = "");

// A fresh temporary directory, removed at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct SluiceConfigSpec {
  std::vector<std::string> tables;
  std::vector<std::string> exclude;
  std::string sink_type = "sqlite";
  std::string sink_path;
  std::string snapshot_mode = "initial";
  int chunk_rows = 1000;
  int server_id = 5401;
  int port = 0;          // 0: the test server's port (set to go through a proxy)
  std::string snapshot_extra;  // more [snapshot] lines, e.g. "workers = 2\nfetch_rows = 500\n"
};
// Writes a TOML config for the test server and returns its path.
std::string WriteConfig(const TempDir& dir, const SluiceConfigSpec& spec);

// The sluice binary the tests run: SLUICE_TEST_BINARY when set (make test points the gcc-built
// tests at the ASan+UBSan build's binary, scripts/run-tests.sh), else the one built beside them.
const std::string& SluiceBinary();
// True when that binary runs under ASan (built so, or SLUICE_TEST_SANITIZED=1): such runs are
// 2-4x slower, and the heaviest tests use smaller loads.
bool SluiceSanitized();

struct ProcessResult {
  int exit_code = -1;  // -signal when killed
  std::string output;  // stdout + stderr
  long max_rss_kib = 0;  // peak resident set size of the program run (VmHWM after its exec)
};
// Runs `sluice args...` to completion (killed after `timeout`).
ProcessResult RunSluice(const std::vector<std::string>& args,
                        std::chrono::seconds timeout = std::chrono::seconds(300));
// Starts `sluice args...` in the background; output goes to `log_path`.
pid_t StartSluice(const std::vector<std::string>& args, const std::string& log_path);
// SIGKILLs and reaps `*pid` at scope exit unless the test has (it sets *pid to 0): a failed
// ASSERT returns early, and a run left behind holds its replica slot and sink for the next test.
struct KillAtExit {
  pid_t* pid;
  ~KillAtExit();
};
// Waits for a child; returns its exit code (or -signal).
// *max_rss_kib (when given) gets its peak resident set size, sampled from /proc every 20 ms
// (VmHWM, which excludes the forked copy of the test process that wait4 would count).
int WaitChild(pid_t pid, std::chrono::seconds timeout = std::chrono::seconds(120), long* max_rss_kib = nullptr);
std::string ReadFile(const std::string& path);
// How many times `needle` occurs in `haystack` (overlapping occurrences count).
size_t CountOccurrences(const std::string& haystack, const std::string& needle);

// ../shared/fixtures beside the source tree (binlogs/, sakila/).
std::string FixturesDir();
// scripts/mariadb-test-server.sh of the source tree.
std::string TestServerScript();
// A random seed for a test's choices, or SLUICE_TEST_SEED when set; printed, so that a
// failing run can be repeated.
uint32_t TestSeed();

// Sets the server's binlog_row_metadata for a test and puts FULL (the test server's
// setting) back when it goes out of scope.
class RowMetadata {
 public:
  explicit RowMetadata(const std::string& mode);
  ~RowMetadata();
  RowMetadata(const RowMetadata&) = delete;
  RowMetadata& operator=(const RowMetadata&) = delete;
};

// The checkpoint JSON stored in an SQLite replica ("" when there is none yet).
std::string ReadSqliteCheckpoint(const std::string& sqlite_path);

// The line of `sluice check` output whose name (after the 6-character outcome column) starts
// with `name`; "" when there is none.
std::string CheckLine(const std::string& output, const std::string& name);

// The connect options of a throwaway MariaDB started with scripts/mariadb-test-server.sh in
// `dir`, read from the `dir/env` it wrote (127.0.0.1, its port, user and password); nullopt
// when the file holds no port (the server did not start).
std::optional<ConnectOptions> ReadTestServerEnv(const std::string& dir);

// A MariaDB of a test's own: scripts/mariadb-test-server.sh started in a temporary directory
// with `options` (mariadbd options, e.g. "--lower-case-table-names=1"), its password in the
// environment variable `password_env` (for a config's password_env), stopped at destruction.
class ThrowawayServer {
 public:
  ThrowawayServer(const std::string& options, const std::string& password_env);
  ~ThrowawayServer();
  ThrowawayServer(const ThrowawayServer&) = delete;
  ThrowawayServer& operator=(const ThrowawayServer&) = delete;
  bool started() const { return options_.has_value(); }
  const ConnectOptions& options() const { return *options_; }
  std::string StartLog() const { return ReadFile(dir_.File("start.log")); }

 private:
  TempDir dir_;
  std::optional<ConnectOptions> options_;
};

// The rows `sql` returns on `conn`: values joined by ',', rows by ';' (NULL for null); the
// error's text when the query fails.
std::string RowsOf(Connection& conn, const std::string& sql);

// Sets `env`, a test hook of the snapshot (snapshot/coordinator.h PauseForTest; default
// SLUICE_TEST_SNAPSHOT_PAUSE_FILE), to `path` for the sluice processes started while it
// lives: they pause there, create the file, and go on once it is removed.
struct PauseHook {
  explicit PauseHook(std::string p) : PauseHook("SLUICE_TEST_SNAPSHOT_PAUSE_FILE", std::move(p)) {}
  PauseHook(const char* e, std::string p) : env(e), path(std::move(p)) { ::setenv(env, path.c_str(), 1); }
  ~PauseHook() {
    ::unsetenv(env);
    std::remove(path.c_str());
  }
  const char* env;
  std::string path;
};

// Whether `path` appears before `child` exits or `timeout` passes.
bool WaitForFile(const std::string& path, pid_t child, std::chrono::seconds timeout);

// Polls `log` (every 20 ms, up to `timeout`) until it holds `needle`; false when it does not
// by then or the child `child` has exited first.
bool WaitForLog(const std::string& log, const std::string& needle, pid_t child, std::chrono::seconds timeout);

// Polls (every 100 ms, up to `timeout`) until the replica holds `expected_tables` tables
// matching `tables` and each equals the source; returns whether that happened.
bool WaitForReplicaToMatch(const std::vector<std::string>& tables, const std::string& sqlite_path,
                           size_t expected_tables = 1,
                           std::chrono::milliseconds timeout = std::chrono::seconds(10));

// Asserts that every selected table in the SQLite replica equals the source.
void ExpectReplicaEqualsSource(const std::vector<std::string>& tables,
                               const std::string& sqlite_path);

}  // namespace sluice::testing
