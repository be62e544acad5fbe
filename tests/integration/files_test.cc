// Files and the process (issue 6, item 10): everything `sluice run` creates (replica, its
// journal/WAL, JSON lines output, checkpoint, lock) is 0600 by default or the configured
// sink.file_mode, whatever the caller's umask; core dumps are off unless asked for.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "harness.h"

namespace sluice::testing {
namespace {

using std::chrono::seconds;

// Permission bits of `path`, or -1 when it does not exist.
int Mode(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return -1;
  return static_cast<int>(st.st_mode & 0777);
}

// Every regular file in `dir` whose name starts with `prefix` has `mode`; returns how many.
int ExpectAllFilesHaveMode(const std::string& dir, const std::string& prefix, int mode) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    ++n;
    EXPECT_EQ(Mode(e.path().string()), mode) << name << " has mode " << std::oct << Mode(e.path().string());
  }
  return n;
}

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    old_umask_ = ::umask(022);  // the usual default, which gave 0644 files before
    ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_files; CREATE DATABASE it_files;"
                         "CREATE TABLE it_files.t (id INT PRIMARY KEY, v INT);"
                         "INSERT INTO it_files.t VALUES (1, 1), (2, 2);"),
              0);
  }
  void TearDown() override { ::umask(old_umask_); }
  mode_t old_umask_ = 022;
};

TEST_F(FilesTest, SqliteReplicaAndLockArePrivate) {
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_files.t"};
  spec.sink_path = dir.File("replica.db");
  auto r = RunSluice({"run", "--config", WriteConfig(dir, spec), "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Mode(dir.File("replica.db")), 0600);
  EXPECT_EQ(Mode(dir.File("replica.db.lock")), 0600);
  EXPECT_GE(ExpectAllFilesHaveMode(dir.path(), "replica.db", 0600), 2);
}

TEST_F(FilesTest, JsonlOutputCheckpointAndLockArePrivate) {
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_files.t"};
  spec.sink_type = "jsonl";
  spec.sink_path = dir.File("out.jsonl");
  auto r = RunSluice({"run", "--config", WriteConfig(dir, spec), "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Mode(dir.File("out.jsonl")), 0600);
  EXPECT_EQ(Mode(dir.File("out.jsonl.checkpoint")), 0600);
  EXPECT_EQ(Mode(dir.File("out.jsonl.checkpoint.lock")) == -1 ? Mode(dir.File("out.jsonl.lock"))
                                                                : Mode(dir.File("out.jsonl.checkpoint.lock")),
            0600);
  EXPECT_GE(ExpectAllFilesHaveMode(dir.path(), "out.jsonl", 0600), 3);
}

// Two pipelines with their own JSON lines outputs and one checkpoint file: the second is refused
// while the first runs, naming the checkpoint's lock. A new user's probe: it read the running
// one's checkpoint and stopped with exit 3, advising to delete that checkpoint.
TEST_F(FilesTest, TwoJsonlOutputsSharingACheckpointFileDoNotRunAtOnce) {
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_files.t"};
  spec.sink_type = "jsonl";
  const std::string shared = dir.File("shared.cp");
  auto config_for = [&](const std::string& name, int server_id) {
    TempDir* sub = new TempDir;  // kept for the test's length
    spec.sink_path = dir.File(name);
    spec.server_id = server_id;
    const std::string path = WriteConfig(*sub, spec);
    std::ofstream(path, std::ios::app) << "checkpoint = \"" << shared << "\"\n";
    return std::make_pair(std::unique_ptr<TempDir>(sub), path);
  };
  auto a = config_for("a.jsonl", 5461);
  auto b = config_for("b.jsonl", 5462);
  pid_t pid = StartSluice({"run", "--config", a.second}, dir.File("a.log"));
  KillAtExit guard{&pid};
  ASSERT_TRUE(WaitForLog(dir.File("a.log"), "streaming from", pid, std::chrono::seconds(60))) << ReadFile(dir.File("a.log"));
  auto r = RunSluice({"run", "--config", b.second, "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("is in use by another sluice run (lock " + shared + ".lock is held)"), std::string::npos)
      << r.output;
  r = RunSluice({"check", "--config", b.second});
  EXPECT_NE(r.output.find(shared + ".lock is held"), std::string::npos) << r.output;
}

TEST_F(FilesTest, ExplicitFileModeIsHonoured) {
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_files.t"};
  spec.sink_path = dir.File("replica.db");
  std::string config = WriteConfig(dir, spec);
  std::ofstream(config, std::ios::app) << "file_mode = \"0640\"\n";  // [sink] is the last section
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Mode(dir.File("replica.db")), 0640);
  EXPECT_EQ(Mode(dir.File("replica.db.lock")), 0600);  // the lock file stays private

  std::string text = ReadFile(config);
  text.replace(text.find("\"0640\""), 6, "\"0755\"");
  std::string bad = dir.File("bad.toml");
  std::ofstream(bad) << text;
  auto b = RunSluice({"run", "--config", bad});
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.output.find("sink.file_mode"), std::string::npos) << b.output;
}

// /proc/<pid>/limits of a running sluice: "Max core file size  0  0  bytes".
std::string CoreLimitLine(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Max core file size", 0) == 0) return line;
  return "";
}

void ExpectCoreLimit(const std::vector<std::string>& extra_args, bool zero) {
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_files.t"};
  spec.sink_path = dir.File("replica.db");
  std::vector<std::string> args = {"run", "--config", WriteConfig(dir, spec)};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  pid_t pid = StartSluice(args, dir.File("log"));
  std::string line;
  for (int i = 0; i < 200; ++i) {  // until it streams (the password has been used by then)
    if (ReadFile(dir.File("log")).find("streaming from") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  line = CoreLimitLine(pid);
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitChild(pid, seconds(20)), 0) << ReadFile(dir.File("log"));
  std::istringstream fields(line.substr(std::string("Max core file size").size()));
  std::string soft, hard;
  fields >> soft >> hard;
  if (zero) {
    EXPECT_EQ(soft, "0") << line;
    EXPECT_EQ(hard, "0") << line;
  } else {
    EXPECT_NE(soft, "0") << line;
  }
}

TEST_F(FilesTest, CoreDumpsAreDisabledUnlessAskedFor) {
  // Give children a nonzero core limit, as a developer shell with `ulimit -c unlimited` would.
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_CORE, &saved), 0);
  struct rlimit some {1 << 20, 1 << 20};
  ASSERT_EQ(::setrlimit(RLIMIT_CORE, &some), 0);
  ExpectCoreLimit({}, true);
  // An ASan build sets its own soft limit to 0 at start (ASAN_OPTIONS disable_coredump,
  // on by default on 64-bit); let it keep ours, as a gcc build does.
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string saved_asan = asan ? asan : "";
  ::setenv("ASAN_OPTIONS", (saved_asan.empty() ? "" : saved_asan + ":").append("disable_coredump=0").c_str(), 1);
  ExpectCoreLimit({"--allow-core-dumps"}, false);
  if (asan) ::setenv("ASAN_OPTIONS", saved_asan.c_str(), 1); else ::unsetenv("ASAN_OPTIONS");
  ::setrlimit(RLIMIT_CORE, &saved);
}

// A listening socket on loopback that never accepts: a client's TCP connect to it succeeds
// (the kernel queues it) and then hears nothing, so the client waits there.
class BlackHole {
 public:
  BlackHole() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~BlackHole() { ::close(fd_); }
  int port() const { return port_; }
  // True once a client has connected (within `timeout`).
  bool Reached(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Starts `sluice args`, which must connect to `hole` (the config, with its passwords, is
// loaded by then), and checks its core file limit while it waits there.
void ExpectCoreLimitWhileBlocked(const TempDir& dir, std::vector<std::string> args, BlackHole& hole, bool zero) {
  SCOPED_TRACE(args[0] + (args.back() == "--allow-core-dumps" ? " --allow-core-dumps" : ""));
  pid_t pid = StartSluice(args, dir.File("log-" + args[0]));
  bool reached = hole.Reached(std::chrono::seconds(20));
  std::string line = CoreLimitLine(pid);
  kill(pid, SIGTERM);
  WaitChild(pid, seconds(30));
  ASSERT_TRUE(reached) << "sluice " << args[0] << " never connected to the black hole: "
                       << ReadFile(dir.File("log-" + args[0]));
  std::istringstream fields(line.substr(std::string("Max core file size").size()));
  std::string soft, hard;
  fields >> soft >> hard;
  if (zero) {
    EXPECT_EQ(soft, "0") << line;
    EXPECT_EQ(hard, "0") << line;
  } else {
    EXPECT_NE(soft, "0") << line;
  }
}

// Probe7 F5: not only run/check/compare/verify hold passwords. resnapshot (source and MySQL
// destination passwords) and tail (a NATS URL may hold one) load the same config, so a core
// of them carries the passwords too.
TEST_F(FilesTest, EveryCommandThatLoadsTheConfigDisablesCoreDumps) {
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_CORE, &saved), 0);
  struct rlimit some {1 << 20, 1 << 20};
  ASSERT_EQ(::setrlimit(RLIMIT_CORE, &some), 0);
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string saved_asan = asan ? asan : "";
  ::setenv("ASAN_OPTIONS", (saved_asan.empty() ? "" : saved_asan + ":").append("disable_coredump=0").c_str(), 1);
  {
    // resnapshot of a MySQL destination connects to it; this one never answers.
    TempDir dir;
    BlackHole hole;
    SluiceConfigSpec spec;
    spec.tables = {"it_files.t"};
    spec.sink_type = "mysql";
    spec.sink_path = dir.File("dest");  // the lock file's base
    std::string config = WriteConfig(dir, spec);
    std::ofstream(config, std::ios::app) << "[sink.mysql]\nhost = \"127.0.0.1\"\nport = " << hole.port()
                                         << "\nuser = \"sluice\"\npassword_env = \"SLUICE_TEST_MYSQL_PASSWORD\"\n"
                                            "database = \"it_files_meta\"\nconnect_timeout_seconds = 60\n";
    ExpectCoreLimitWhileBlocked(dir, {"resnapshot", "--config", config, "it_files.t"}, hole, true);
    BlackHole hole2;
    std::string text = ReadFile(config);
    text.replace(text.find(std::to_string(hole.port())), std::to_string(hole.port()).size(),
                 std::to_string(hole2.port()));
    std::ofstream(config) << text;
    ExpectCoreLimitWhileBlocked(dir, {"resnapshot", "--config", config, "it_files.t", "--allow-core-dumps"},
                                hole2, false);
  }
  {
    // tail of a NATS sink connects to the broker; this one never answers.
    TempDir dir;
    BlackHole hole;
    SluiceConfigSpec spec;
    spec.tables = {"it_files.t"};
    spec.sink_type = "nats";
    spec.sink_path = dir.File("published");
    std::string config = WriteConfig(dir, spec);
    std::ofstream(config, std::ios::app) << "[sink.nats]\nurl = \"nats://127.0.0.1:" << hole.port() << "\"\n";
    ExpectCoreLimitWhileBlocked(dir, {"tail", "--config", config}, hole, true);
  }
  if (asan) ::setenv("ASAN_OPTIONS", saved_asan.c_str(), 1); else ::unsetenv("ASAN_OPTIONS");
  ::setrlimit(RLIMIT_CORE, &saved);
}

}  // namespace
}  // namespace sluice::testing

namespace sluice::testing {
namespace {

// Issue 6, item 12: `a.b`.c and a.`b.c` both become the SQLite table "a.b.c" (and SQLite
// names ignore ASCII case, so `d`.`T` and `d`.`t` collide too). The run must refuse before
// copying anything, naming both source tables.
TEST(SinkNames, TwoSourceTablesOneSqliteNameAreRefusedBeforeTheSnapshot) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS `it_col.x`; DROP DATABASE IF EXISTS it_col;"
                       "CREATE DATABASE `it_col.x`; CREATE DATABASE it_col;"
                       "CREATE TABLE `it_col.x`.y (id INT PRIMARY KEY);"
                       "CREATE TABLE it_col.`x.y` (id INT PRIMARY KEY);"
                       "INSERT INTO `it_col.x`.y VALUES (1); INSERT INTO it_col.`x.y` VALUES (2);"
                       "CREATE TABLE it_col.T (id INT PRIMARY KEY); CREATE TABLE it_col.t (id INT PRIMARY KEY);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_col?x.y", "it_col.x?y"};
  spec.sink_path = dir.File("replica.db");
  auto r = RunSluice({"run", "--config", WriteConfig(dir, spec), "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("`it_col.x`.`y`"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("`it_col`.`x.y`"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"it_col.x.y\""), std::string::npos) << r.output;
  EXPECT_EQ(ReadSqliteCheckpoint(spec.sink_path), "") << "nothing may be copied";

  spec.tables = {"it_col.t"};
  spec.sink_path = dir.File("replica2.db");
  r = RunSluice({"run", "--config", WriteConfig(dir, spec), "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 0) << r.output;  // only one of them selected: fine
  spec.tables = {"it_col.T", "it_col.t"};
  spec.sink_path = dir.File("replica3.db");
  r = RunSluice({"run", "--config", WriteConfig(dir, spec), "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("`it_col`.`T`"), std::string::npos) << r.output;

  // The JSON lines envelope keeps db and table apart, but the snapshot progress in the
  // checkpoint is keyed by "db.table": refused too. Case alone is fine there.
  spec.tables = {"it_col?x.y", "it_col.x?y"};
  spec.sink_type = "jsonl";
  spec.sink_path = dir.File("out.jsonl");
  r = RunSluice({"run", "--config", WriteConfig(dir, spec), "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  spec.tables = {"it_col.T", "it_col.t"};
  spec.sink_path = dir.File("out2.jsonl");
  r = RunSluice({"run", "--config", WriteConfig(dir, spec), "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
}  // namespace sluice::testing

namespace sluice::testing {
namespace {

// Issue 6, item 11: a sink path that is a directory (or sits in a missing directory) is
// named with the reason, not "unable to open database file (14)".
TEST(SinkPath, DirectoryOrMissingParentIsNamedWithTheReason) {
  ASSERT_EQ(RunSqlText("CREATE DATABASE IF NOT EXISTS it_files;"
                       "CREATE TABLE IF NOT EXISTS it_files.t (id INT PRIMARY KEY, v INT);"),
            0);
  TempDir dir;
  std::filesystem::create_directory(dir.File("replica.db"));
  for (std::string type : {"sqlite", "jsonl"}) {
    SluiceConfigSpec spec;
    spec.tables = {"it_files.t"};
    spec.sink_type = type;
    spec.sink_path = dir.File("replica.db");
    auto r = RunSluice({"run", "--config", WriteConfig(dir, spec), "--until-caught-up"});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("sink.path " + dir.File("replica.db") + " is a directory"), std::string::npos)
        << r.output;
    spec.sink_path = dir.File("no/such/dir/replica.db");
    r = RunSluice({"run", "--config", WriteConfig(dir, spec), "--until-caught-up"});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("directory " + dir.File("no/such/dir") + " does not exist"), std::string::npos)
        << r.output;
  }
}

// A sink file that is a symbolic link: the JSON lines output was followed (rows appended to
// whatever it named, which kept its mode), and a lock file that is one was reported as "Too
// many levels of symbolic links" (probe7 F8). Both are refused, saying what is wrong; the
// file a link names is not touched.
TEST(SinkPath, SymbolicLinksAreRefusedSayingSo) {
  ASSERT_EQ(RunSqlText("CREATE DATABASE IF NOT EXISTS it_files;"
                       "CREATE TABLE IF NOT EXISTS it_files.t (id INT PRIMARY KEY, v INT);"),
            0);
  TempDir dir;
  std::ofstream(dir.File("victim")) << "precious\n";
  ASSERT_EQ(::symlink(dir.File("victim").c_str(), dir.File("out.jsonl").c_str()), 0);
  SluiceConfigSpec spec;
  spec.tables = {"it_files.t"};
  spec.sink_type = "jsonl";
  spec.sink_path = dir.File("out.jsonl");
  auto r = RunSluice({"run", "--config", WriteConfig(dir, spec), "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("sink.path " + dir.File("out.jsonl") + " is a symbolic link"), std::string::npos)
      << r.output;
  auto c = RunSluice({"check", "--config", WriteConfig(dir, spec)});
  EXPECT_NE(c.output.find(dir.File("out.jsonl") + " is a symbolic link"), std::string::npos) << c.output;
  EXPECT_EQ(ReadFile(dir.File("victim")), "precious\n");

  spec.sink_type = "sqlite";
  spec.sink_path = dir.File("replica.db");
  ASSERT_EQ(::symlink(dir.File("victim").c_str(), dir.File("replica.db.lock").c_str()), 0);
  r = RunSluice({"run", "--config", WriteConfig(dir, spec), "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("replica.db.lock: is a symbolic link"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("Too many levels"), std::string::npos) << r.output;
  EXPECT_EQ(ReadFile(dir.File("victim")), "precious\n");
}

// Anyone who may create a table in a captured database picks its name: a newline and ESC
// sequences in it forged "sluice: error: FAKE" lines in the run's log and in `sluice compare`
// (probe7 F7). Both print it on one line, its control characters as \xNN.
TEST(SinkPath, ATableNameCannotForgeALogOrReportLine) {
  const std::string name = "x\nsluice: error: FAKE \x1b[31mRED\x1b[0m";
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_forge; CREATE DATABASE it_forge;"
                       "CREATE TABLE it_forge.`" + name + "` (id INT PRIMARY KEY);"
                       "INSERT INTO it_forge.`" + name + "` VALUES (1);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_forge.*"};
  spec.sink_path = dir.File("replica.db");
  const std::string config = WriteConfig(dir, spec);
  for (const char* command : {"run", "compare"}) {
    auto r = command == std::string("run") ? RunSluice({"run", "--config", config, "--until-caught-up"})
                                           : RunSluice({"compare", "--config", config});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find("\nsluice: error: FAKE"), std::string::npos) << command << ":\n" << r.output;
    EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << command << ":\n" << r.output;
    EXPECT_NE(r.output.find("x\\x0asluice: error: FAKE \\x1b[31mRED"), std::string::npos) << command << ":\n"
                                                                                           << r.output;
  }
}

// The JSON lines output removed, its checkpoint kept: the run refuses with exit code 3 and
// leaves the directory as it found it (it used to create a new, empty output first).
// A destination whose checkpoint holds none of the tables the configuration selects: another
// pipeline's, most likely. A new user's probe: two pipelines into one PostgreSQL database took
// turns copying their tables again, and nothing said so.
TEST(SinkPath, AnotherPipelinesDestinationIsWarnedOf) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_two; CREATE DATABASE it_two;"
                       "CREATE TABLE it_two.a (id INT PRIMARY KEY); CREATE TABLE it_two.b (id INT PRIMARY KEY);"
                       "INSERT INTO it_two.a VALUES (1); INSERT INTO it_two.b VALUES (2);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.sink_path = dir.File("replica.db");
  spec.tables = {"it_two.a"};
  auto r = RunSluice({"run", "--config", WriteConfig(dir, spec), "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("give this one a destination of its own"), std::string::npos) << r.output;
  spec.tables = {"it_two.b"};
  r = RunSluice({"run", "--config", WriteConfig(dir, spec), "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("none of the 1 tables this destination's checkpoint holds is selected"), std::string::npos)
      << r.output;
  // A table added beside the one it had: nothing to warn of.
  spec.tables = {"it_two.*"};
  r = RunSluice({"run", "--config", WriteConfig(dir, spec), "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("give this one a destination of its own"), std::string::npos) << r.output;
}

TEST(SinkPath, JsonlOutputMissingIsRefusedWithoutCreatingIt) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_jsonl_gone; CREATE DATABASE it_jsonl_gone;"
                       "CREATE TABLE it_jsonl_gone.t (id INT PRIMARY KEY, v INT);"
                       "INSERT INTO it_jsonl_gone.t VALUES (1, 1), (2, 2);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_jsonl_gone.t"};
  spec.sink_type = "jsonl";
  spec.sink_path = dir.File("out.jsonl");
  const std::string config = WriteConfig(dir, spec);
  auto first = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_TRUE(std::filesystem::exists(spec.sink_path + ".checkpoint"));
  ASSERT_TRUE(std::filesystem::remove(spec.sink_path));
  const auto listing = [&] {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  };
  const std::vector<std::string> before = listing();
  auto second = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(second.exit_code, 3) << second.output;
  EXPECT_NE(second.output.find("the output was truncated or replaced"), std::string::npos) << second.output;
  EXPECT_FALSE(std::filesystem::exists(spec.sink_path)) << "the refused run created the output";
  EXPECT_EQ(listing(), before);
}

}  // namespace
}  // namespace sluice::testing

namespace sluice::testing {
namespace {

// A replica table dropped while sluice was stopped (by hand, or the file restored from an
// older copy): the next run found no table, created it empty and streamed later changes into
// it, exit 0 (a new user's probe: 299 of 50,000 rows). The table is copied again instead.
TEST(SinkPath, ReplicaTableDroppedWhileStoppedIsCopiedAgain) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_dropped; CREATE DATABASE it_dropped; USE it_dropped;"
                       "CREATE TABLE it_dropped.t (id INT PRIMARY KEY, v INT);"
                       "INSERT INTO it_dropped.t SELECT seq, 0 FROM seq_1_to_500;"
                       "CREATE TABLE it_dropped.kept (id INT PRIMARY KEY);"
                       "INSERT INTO it_dropped.kept VALUES (1);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_dropped.*"};
  spec.sink_path = dir.File("replica.db");
  const std::string config = WriteConfig(dir, spec);
  auto first = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  ASSERT_EQ(std::system(("sqlite3 " + spec.sink_path + " 'DROP TABLE \"it_dropped.t\"'").c_str()), 0);
  ASSERT_EQ(RunSqlText("UPDATE it_dropped.t SET v = 1 WHERE id <= 10; INSERT INTO it_dropped.kept VALUES (2);"), 0);
  auto second = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("the sink has no table for it_dropped.t"), std::string::npos) << second.output;
  const auto count = [&](const std::string& table) {
    FILE* p = ::popen(("sqlite3 " + spec.sink_path + " 'SELECT COUNT(*) FROM \"" + table + "\"'").c_str(), "r");
    char buf[64] = {0};
    if (p != nullptr) {
      (void)std::fgets(buf, sizeof buf, p);
      ::pclose(p);
    }
    return std::atoi(buf);
  };
  EXPECT_EQ(count("it_dropped.t"), 500) << second.output;
  EXPECT_EQ(count("it_dropped.kept"), 2);
  ExpectReplicaEqualsSource({"it_dropped.t", "it_dropped.kept"}, spec.sink_path);
}

}  // namespace
}  // namespace sluice::testing

namespace sluice::testing {
namespace {

// What the JSON lines sink does to a file edited while sluice was stopped is said, never done
// silently (a new user's probe): a line appended by hand is cut with the unconfirmed lines
// (with a warning naming the bytes), and an output without its state file gets a new
// pipeline's lines, a whole snapshot again, appended (with a warning naming the file).
TEST(SinkPath, JsonlEditsWhileStoppedAreNamedInTheLog) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_jsonl_edit; CREATE DATABASE it_jsonl_edit;"
                       "CREATE TABLE it_jsonl_edit.t (id INT PRIMARY KEY, v INT);"
                       "INSERT INTO it_jsonl_edit.t VALUES (1, 1), (2, 2);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_jsonl_edit.t"};
  spec.sink_type = "jsonl";
  spec.sink_path = dir.File("out.jsonl");
  const std::string config = WriteConfig(dir, spec);
  auto first = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const auto size = std::filesystem::file_size(spec.sink_path);
  std::ofstream(spec.sink_path, std::ios::app) << "{\"my\":\"note\"}\n";
  auto second = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("cutting the 14 bytes after the last confirmed line"), std::string::npos)
      << second.output;
  EXPECT_EQ(std::filesystem::file_size(spec.sink_path), size);
  ASSERT_TRUE(std::filesystem::remove(spec.sink_path + ".checkpoint"));
  auto third = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(third.exit_code, 0) << third.output;
  EXPECT_NE(third.output.find("there is no state file"), std::string::npos) << third.output;
}

}  // namespace
}  // namespace sluice::testing
