#include "harness.h"

#include "sink/sqlite_sink.h"

#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <sqlite3.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <map>
#include <sstream>
#include <thread>

namespace sluice::testing {

namespace {
std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}
}  // namespace

ConnectOptions TestServer() {
  ConnectOptions o;
  if (Env("SLUICE_TEST_MYSQL_PORT").empty()) {
    ADD_FAILURE() << "SLUICE_TEST_MYSQL_* is not set: run the integration tests through "
                     "`make test` (scripts/run-tests.sh starts the test MariaDB)";
    return o;
  }
  o.host = Env("SLUICE_TEST_MYSQL_HOST");
  o.port = static_cast<uint16_t>(std::stoi(Env("SLUICE_TEST_MYSQL_PORT")));
  o.user = Env("SLUICE_TEST_MYSQL_USER");
  o.password = Env("SLUICE_TEST_MYSQL_PASSWORD");
  return o;
}

std::unique_ptr<Connection> Connect() {
  auto c = Connection::Connect(TestServer());
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  if (!c.ok()) return nullptr;
  return std::move(c).value();
}

int RunSqlText(const std::string& sql, const std::string& database) {
  TempDir dir;
  std::string file = dir.File("in.sql");
  std::ofstream(file) << sql;
  return RunSqlFile(file, database);
}

int RunSqlFile(const std::string& path, const std::string& database) {
  ConnectOptions o = TestServer();
  std::string cmd = "MYSQL_PWD='" + o.password + "' mariadb --no-defaults --default-character-set=utf8mb4 -h " + o.host + " -P " +
                    std::to_string(o.port) + " -u " + o.user + " " + database + " < '" + path + "'";
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/sluice-it.XXXXXX";
  char* p = mkdtemp(tmpl);
  path_ = p ? p : "/tmp";
}

TempDir::~TempDir() {
  if (std::getenv("SLUICE_KEEP_TEST_DIRS")) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string WriteConfig(const TempDir& dir, const SluiceConfigSpec& spec) {
  ConnectOptions o = TestServer();
  auto list = [](const std::vector<std::string>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", \"" : "\"") + v[i] + "\"";
    return s + "]";
  };
  std::ostringstream t;
  t << "[source]\nhost = \"" << o.host << "\"\nport = " << (spec.port ? spec.port : o.port)
    << "\nuser = \"" << o.user
    << "\"\npassword_env = \"SLUICE_TEST_MYSQL_PASSWORD\"\nserver_id = " << spec.server_id
    << "\ntables = " << list(spec.tables) << "\nexclude = " << list(spec.exclude)
    << "\n\n[snapshot]\nmode = \"" << spec.snapshot_mode << "\"\nchunk_rows = " << spec.chunk_rows
    << "\n"
    // The Sakila fixture's film_text is MyISAM, which the snapshot refuses unless allowed.
    << (spec.snapshot_extra.find("allow_inconsistent_read") == std::string::npos
            ? "allow_inconsistent_read = [\"sakila.film_text\"]\n"
            : "")
    << spec.snapshot_extra << "\n[sink]\ntype = \"" << spec.sink_type << "\"\npath = \"" << spec.sink_path << "\"\n";
  std::string path = dir.File("sluice.toml");
  std::ofstream(path) << t.str();
  return path;
}

const std::string& SluiceBinary() {
  static const std::string bin = [] {
    const char* env = std::getenv("SLUICE_TEST_BINARY");
    return std::string(env && *env ? env : SLUICE_BINARY);
  }();
  return bin;
}

bool SluiceSanitized() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#else
  const char* env = std::getenv("SLUICE_TEST_SANITIZED");
  return env && std::string(env) == "1";
#endif
}

namespace {
pid_t Spawn(const std::vector<std::string>& args, int out_fd) {
  // A child's peak RSS (wait4's ru_maxrss) includes what it held before exec: the forked
  // copy of this process. Memory a test freed (a replica compared row by row: 68 MiB after
  // BigTransaction's SQLite test) stays resident until trimmed, and was counted as sluice's.
  malloc_trim(0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, 1);
    dup2(out_fd, 2);
    std::vector<char*> argv;
    std::string bin = SluiceBinary();
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}
}  // namespace

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

size_t CountOccurrences(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

std::string FixturesDir() { return std::string(SLUICE_SOURCE_DIR) + "/../shared/fixtures"; }
std::string TestServerScript() { return std::string(SLUICE_SOURCE_DIR) + "/scripts/mariadb-test-server.sh"; }

uint32_t TestSeed() {
  uint32_t seed = std::random_device{}();
  if (const char* s = std::getenv("SLUICE_TEST_SEED")) seed = static_cast<uint32_t>(std::stoul(s));
  std::cout << "[ seed ] SLUICE_TEST_SEED=" << seed << "\n";
  return seed;
}

RowMetadata::RowMetadata(const std::string& mode) {
  EXPECT_EQ(RunSqlText("SET GLOBAL binlog_row_metadata = '" + mode + "';"), 0);
}
RowMetadata::~RowMetadata() { (void)RunSqlText("SET GLOBAL binlog_row_metadata = 'FULL';"); }

namespace {

// The peak RSS (VmHWM, KiB) of process `pid` once it runs another program than this one, or
// 0 (not yet exec'd, gone, unreadable). VmHWM belongs to the process's address space, which
// exec replaces: unlike wait4's ru_maxrss it does not include the forked copy of this test
// process (hundreds of MiB for the ASan test binary, whatever malloc_trim does).
long ExecdPeakRssKib(pid_t pid) {
  static const std::string self = ReadFile("/proc/self/comm");
  std::string comm = ReadFile("/proc/" + std::to_string(pid) + "/comm");
  if (comm.empty() || comm == self) return 0;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

}  // namespace

int WaitChild(pid_t pid, std::chrono::seconds timeout, long* max_rss_kib) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  struct rusage ru {};
  long hwm_kib = 0;  // VmHWM only grows, so the last sample before exit is within 20 ms of the peak
  while (true) {
    if (max_rss_kib != nullptr) hwm_kib = std::max(hwm_kib, ExecdPeakRssKib(pid));
    pid_t r = wait4(pid, &status, WNOHANG, &ru);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      wait4(pid, &status, 0, &ru);
      ADD_FAILURE() << "sluice did not finish within " << timeout.count() << " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // ru_maxrss (which counts the forked copy of this process) only for a child too short-lived
  // to be sampled.
  if (max_rss_kib != nullptr) *max_rss_kib = hwm_kib > 0 ? hwm_kib : ru.ru_maxrss;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return -WTERMSIG(status);
  return -1000;
}

ProcessResult RunSluice(const std::vector<std::string>& args, std::chrono::seconds timeout) {
  TempDir dir;
  std::string log = dir.File("out.log");
  int fd = open(log.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  pid_t pid = Spawn(args, fd);
  close(fd);
  ProcessResult r;
  r.exit_code = WaitChild(pid, timeout, &r.max_rss_kib);
  r.output = ReadFile(log);
  return r;
}

pid_t StartSluice(const std::vector<std::string>& args, const std::string& log_path) {
  int fd = open(log_path.c_str(), O_CREAT | O_WRONLY | O_APPEND, 0644);
  pid_t pid = Spawn(args, fd);
  close(fd);
  return pid;
}

std::string CheckLine(const std::string& output, const std::string& name) {
  for (size_t at = 0; at < output.size();) {
    size_t end = output.find('\n', at);
    if (end == std::string::npos) end = output.size();
    const std::string line = output.substr(at, end - at);
    if (line.size() > 6 && line.compare(6, name.size(), name) == 0) return line;
    at = end + 1;
  }
  return "";
}

KillAtExit::~KillAtExit() {
  if (pid != nullptr && *pid > 0) {
    kill(*pid, SIGKILL);
    WaitChild(*pid, std::chrono::seconds(30));
    *pid = 0;
  }
}

std::string ReadSqliteCheckpoint(const std::string& sqlite_path) {
  if (!std::filesystem::exists(sqlite_path)) return "";
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open_v2(sqlite_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 1000);
    auto text = sluice::ReadSqliteCheckpoint(db);
    if (text.ok() && *text) out = **text;
  }
  sqlite3_close(db);
  return out;
}

std::optional<ConnectOptions> ReadTestServerEnv(const std::string& dir) {
  std::istringstream in(ReadFile(dir + "/env"));
  std::string line;
  std::map<std::string, std::string> kv;
  while (std::getline(in, line)) {
    if (line.rfind("export ", 0) != 0) continue;
    auto eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(7, eq - 7)] = line.substr(eq + 1);
  }
  if (kv["SLUICE_TEST_MYSQL_PORT"].empty()) return std::nullopt;
  ConnectOptions o;
  o.host = "127.0.0.1";
  o.port = static_cast<uint16_t>(std::stoi(kv["SLUICE_TEST_MYSQL_PORT"]));
  o.user = kv["SLUICE_TEST_MYSQL_USER"];
  o.password = kv["SLUICE_TEST_MYSQL_PASSWORD"];
  return o;
}

ThrowawayServer::ThrowawayServer(const std::string& options, const std::string& password_env) {
  const std::string cmd = TestServerScript() + " start " + dir_.path() + " " + options + " >" +
                          dir_.File("start.log") + " 2>&1";
  if (std::system(cmd.c_str()) != 0) return;
  options_ = ReadTestServerEnv(dir_.path());
  if (options_) ::setenv(password_env.c_str(), options_->password.c_str(), 1);
}

ThrowawayServer::~ThrowawayServer() {
  (void)std::system((TestServerScript() + " stop " + dir_.path() + " >/dev/null 2>&1").c_str());
}

std::string RowsOf(Connection& conn, const std::string& sql) {
  auto r = conn.Query(sql);
  if (!r.ok()) return r.status().ToString();
  std::string out;
  for (const TextRow& row : r->rows) {
    if (!out.empty()) out += ";";
    for (size_t i = 0; i < row.size(); ++i) out += (i ? "," : "") + row[i].value_or("NULL");
  }
  return out;
}

bool WaitForFile(const std::string& path, pid_t child, std::chrono::seconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (::access(path.c_str(), F_OK) == 0) return true;
    if (::kill(child, 0) != 0) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

bool WaitForLog(const std::string& log, const std::string& needle, pid_t child, std::chrono::seconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (ReadFile(log).find(needle) != std::string::npos) return true;
    if (::kill(child, 0) != 0) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

bool WaitForReplicaToMatch(const std::vector<std::string>& tables, const std::string& sqlite_path,
                           size_t expected_tables, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto cmp = cli::CompareTables(TestServer(), TableFilter{tables, {}}, sqlite_path);
    if (!cmp.ok() || cmp->size() != expected_tables) continue;
    bool all = true;
    for (const auto& t : *cmp) all = all && t.equal();
    if (all) return true;
  }
  return false;
}

void ExpectReplicaEqualsSource(const std::vector<std::string>& tables, const std::string& sqlite_path) {
  auto result = cli::CompareTables(TestServer(), TableFilter{tables, {}}, sqlite_path);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_FALSE(result->empty());
  for (const auto& t : *result) {
    std::string examples;
    for (const auto& e : t.examples) examples += "\n    " + e;
    EXPECT_TRUE(t.equal()) << t.table << ": source " << t.source_rows << " rows, replica "
                           << t.replica_rows << ", missing " << t.missing << ", extra " << t.extra
                           << ", differing " << t.differing << examples;
  }
}

}  // namespace sluice::testing
