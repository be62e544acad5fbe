// `sluice check` (issue 11, item 1): one test per requirement line on a MariaDB set up wrong
// on purpose, and a pass on the correct test server. Two extra throwaway servers are started
// once for the suite (in parallel): "wrong" (STATEMENT binlogs, MINIMAL row image, NO_LOG row
// metadata, a 64 KiB max_allowed_packet, 60 s binlog retention) and "nobinlog" (log_bin off).
// Lines a local MariaDB cannot show (MySQL GTID mode, an old version) are unit-tested in
// src/cli/check_test.cc.
#include <sys/stat.h>
#include <sys/wait.h>
#include <utime.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <filesystem>

#include <gmock/gmock.h>
#include <sqlite3.h>

#include "harness.h"

namespace sluice::testing {
namespace {

struct ExtraServer {
  std::string dir;
  int port = 0;
  std::string password;
  std::string socket;
  bool started = false;
};

ExtraServer g_wrong, g_nobinlog;


void ReadEnv(ExtraServer* s) {
  std::ifstream in(s->dir + "/env");
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key.ends_with("_PORT")) s->port = std::atoi(value.c_str());
    if (key.ends_with("_PASSWORD")) s->password = value;
    if (key.ends_with("_SOCKET")) s->socket = value;
  }
  s->started = s->port > 0;
}

// Runs SQL as root over the server's socket.
int RootSql(const ExtraServer& s, const std::string& sql) {
  std::string file = s.dir + "/in.sql";
  std::ofstream(file, std::ios::trunc) << sql;
  std::string cmd = "mariadb --no-defaults --socket='" + s.socket + "' -uroot < '" + file + "'";
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

class CheckWrong : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    char a[] = "/tmp/sluice-it-wrong.XXXXXX", b[] = "/tmp/sluice-it-nobin.XXXXXX";
    g_wrong.dir = mkdtemp(a);
    g_nobinlog.dir = mkdtemp(b);
    // Each install gets its own TMPDIR: two bootstraps sharing /tmp collided once on a
    // temporary table name ("Could not remove temporary table '/tmp/#sql-temptable-...'").
    std::string start_wrong = "TMPDIR=" + g_wrong.dir + "/tmp " + TestServerScript() + " start " + g_wrong.dir +
                              " --binlog-format=STATEMENT --binlog-row-image=MINIMAL --binlog-row-metadata=NO_LOG"
                              " --max-allowed-packet=65536 --binlog-expire-logs-seconds=60 >/dev/null";
    std::string start_nobin =
        "TMPDIR=" + g_nobinlog.dir + "/tmp " + TestServerScript() + " start " + g_nobinlog.dir + " --skip-log-bin >/dev/null";
    std::thread t([&] { (void)std::system(start_nobin.c_str()); });
    (void)std::system(start_wrong.c_str());
    t.join();
    ReadEnv(&g_wrong);
    ReadEnv(&g_nobinlog);
    if (g_wrong.started) {
      RootSql(g_wrong,
              "CREATE DATABASE it_chk;"
              "CREATE TABLE it_chk.t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB;"
              "USE it_chk; INSERT INTO it_chk.t SELECT seq, 'x' FROM seq_1_to_1000;"
              "CREATE TABLE it_chk.old (id INT PRIMARY KEY) ENGINE=MyISAM;"
              "CREATE DATABASE it_other; CREATE TABLE it_other.t (id INT PRIMARY KEY);"
              "CREATE USER 'it_weak'@'127.0.0.1' IDENTIFIED BY 'weakpw';"
              "GRANT SELECT ON it_other.* TO 'it_weak'@'127.0.0.1';"
              "CREATE USER 'it_part'@'127.0.0.1' IDENTIFIED BY 'partpw';"
              "GRANT SELECT ON it_chk.t TO 'it_part'@'127.0.0.1';"
              "CREATE TABLE it_chk.wide (id INT PRIMARY KEY, v VARCHAR(16000)) DEFAULT CHARSET=utf8mb4;");
    }
  }
  static void TearDownTestSuite() {
    for (ExtraServer* s : {&g_wrong, &g_nobinlog}) {
      (void)std::system((TestServerScript() + " stop " + s->dir).c_str());
      std::error_code ec;
      std::filesystem::remove_all(s->dir, ec);
    }
  }
  void SetUp() override {
    ASSERT_TRUE(g_wrong.started) << "the misconfigured MariaDB did not start (" << g_wrong.dir << ")";
    ASSERT_TRUE(g_nobinlog.started) << "the MariaDB without binlog did not start (" << g_nobinlog.dir << ")";
  }
};

struct Spec {
  int port = 0;
  std::string user = "sluice";
  std::string password;
  std::vector<std::string> tables = {"it_chk.t"};
  std::string sink_path;
  int server_id = 5601;
  std::string tls = "disabled";
  std::string extra_snapshot;
};

std::string Config(const TempDir& dir, const Spec& s) {
  ::setenv("SLUICE_IT_CHECK_PASSWORD", s.password.c_str(), 1);
  std::ostringstream t;
  t << "[source]\nhost = \"127.0.0.1\"\nport = " << s.port << "\nuser = \"" << s.user
    << "\"\npassword_env = \"SLUICE_IT_CHECK_PASSWORD\"\nserver_id = " << s.server_id << "\ntables = [";
  for (size_t i = 0; i < s.tables.size(); ++i) t << (i ? ", " : "") << '"' << s.tables[i] << '"';
  t << "]\ntls = \"" << s.tls << "\"\n\n[snapshot]\n" << s.extra_snapshot << "\n[sink]\npath = \""
    << (s.sink_path.empty() ? dir.File("replica.db") : s.sink_path) << "\"\n";
  std::string path = dir.File("check.toml");
  std::ofstream(path, std::ios::trunc) << t.str();
  return path;
}

Spec Wrong() {
  Spec s;
  s.port = g_wrong.port;
  s.password = g_wrong.password;
  return s;
}

// The output line of one requirement ("FAIL  binlog_format   STATEMENT: ...").
std::string LineOf(const std::string& output, const std::string& name) {
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line))
    if (line.size() > 6 && line.compare(6, name.size(), name) == 0 &&
        (line.size() == 6 + name.size() || line[6 + name.size()] == ' '))
      return line;
  return "";
}

ProcessResult Check(const std::string& config) { return RunSluice({"check", "--config", config}, std::chrono::seconds(60)); }

TEST_F(CheckWrong, LogBinOff) {
  TempDir dir;
  Spec s;
  s.port = g_nobinlog.port;
  s.password = g_nobinlog.password;
  s.tables = {"mysql.db"};
  auto r = Check(Config(dir, s));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(LineOf(r.output, "log_bin"), ::testing::StartsWith("FAIL  log_bin")) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("fix: restart the server with log_bin")) << r.output;
}

TEST_F(CheckWrong, BinlogFormatNotRow) {
  TempDir dir;
  auto r = Check(Config(dir, Wrong()));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(LineOf(r.output, "binlog_format"), ::testing::HasSubstr("FAIL  binlog_format")) << r.output;
  EXPECT_THAT(LineOf(r.output, "binlog_format"), ::testing::HasSubstr("STATEMENT")) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("fix: SET GLOBAL binlog_format = 'ROW'"));
  EXPECT_THAT(LineOf(r.output, "log_bin"), ::testing::StartsWith("PASS")) << r.output;
}

TEST_F(CheckWrong, RowImageMinimalSaysWhatItMeansForTheSink) {
  TempDir dir;
  auto r = Check(Config(dir, Wrong()));
  std::string line = LineOf(r.output, "binlog_row_image");
  EXPECT_THAT(line, ::testing::StartsWith("WARN")) << r.output;
  EXPECT_THAT(line, ::testing::HasSubstr("MINIMAL: updates carry only some columns: the replica leaves the others"));
}

TEST_F(CheckWrong, RowMetadataNoLog) {
  TempDir dir;
  auto r = Check(Config(dir, Wrong()));
  std::string line = LineOf(r.output, "binlog_row_metadata");
  EXPECT_THAT(line, ::testing::StartsWith("WARN")) << r.output;
  EXPECT_THAT(line, ::testing::HasSubstr("NO_LOG"));
}

TEST_F(CheckWrong, GtidLineOnMariaDb) {
  TempDir dir;
  auto r = Check(Config(dir, Wrong()));
  EXPECT_THAT(LineOf(r.output, "GTID"), ::testing::StartsWith("PASS  GTID")) << r.output;
  EXPECT_THAT(LineOf(r.output, "GTID"), ::testing::HasSubstr("gtid_strict_mode OFF"));
  EXPECT_THAT(LineOf(r.output, "server version"), ::testing::HasSubstr("MariaDB")) << r.output;
}

// `sluice check` as it_weak, who may only read another database.
ProcessResult CheckAsWeakUser(const TempDir& dir) {
  Spec s = Wrong();
  s.user = "it_weak";
  s.password = "weakpw";
  s.tables = {"it_chk.*"};
  return Check(Config(dir, s));
}

TEST_F(CheckWrong, NoReplicationSlave) {
  TempDir dir;
  auto r = CheckAsWeakUser(dir);
  const std::string& out = r.output;
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(LineOf(out, "REPLICATION SLAVE privilege"), ::testing::StartsWith("FAIL")) << out;
  EXPECT_THAT(out, ::testing::HasSubstr("fix: GRANT REPLICATION SLAVE ON *.* TO 'it_weak'@'127.0.0.1'"));
}

TEST_F(CheckWrong, NoBinlogMonitor) {
  TempDir dir;
  const std::string out = CheckAsWeakUser(dir).output;
  EXPECT_THAT(LineOf(out, "REPLICATION CLIENT privilege"), ::testing::StartsWith("FAIL")) << out;
  EXPECT_THAT(out, ::testing::HasSubstr("fix: GRANT BINLOG MONITOR ON *.* TO 'it_weak'@'127.0.0.1'"));
}

TEST_F(CheckWrong, NoSelectOnTheCapturedTables) {
  TempDir dir;
  const std::string out = CheckAsWeakUser(dir).output;
  EXPECT_THAT(LineOf(out, "SELECT on it_chk.*"), ::testing::StartsWith("FAIL")) << out;
  EXPECT_THAT(out, ::testing::HasSubstr("fix: GRANT SELECT ON `it_chk`.* TO 'it_weak'@'127.0.0.1'"));
}

// SELECT granted on one table of it_chk: `it_chk.*` reads as one readable table, but the
// others are invisible to the user, so the line says that they are not captured.
TEST_F(CheckWrong, SelectOnSingleTablesOnlyIsSaid) {
  TempDir dir;
  Spec s = Wrong();
  s.user = "it_part";
  s.password = "partpw";
  s.tables = {"it_chk.*"};
  const std::string out = Check(Config(dir, s)).output;
  EXPECT_THAT(LineOf(out, "SELECT on it_chk.*"), ::testing::HasSubstr("1 table(s), all readable; but SELECT is granted on "
                                                                    "single tables of it_chk only"))
      << out;
}

TEST_F(CheckWrong, NonTransactionalEngine) {
  TempDir dir;
  Spec s = Wrong();
  s.tables = {"it_chk.t", "it_chk.old"};
  auto r = Check(Config(dir, s));
  std::string line = LineOf(r.output, "table engines");
  EXPECT_THAT(line, ::testing::StartsWith("FAIL")) << r.output;
  EXPECT_THAT(line, ::testing::HasSubstr("it_chk.old (MyISAM)"));
  EXPECT_THAT(line, ::testing::Not(::testing::HasSubstr("it_chk.t (")));
}

// One listed name that matches nothing fails its own line, and the tables the other names
// match are still judged (the engines line said "no table matches source.tables": new-user test).
TEST_F(CheckWrong, AMissingTableLeavesTheOthersJudged) {
  TempDir dir;
  Spec s = Wrong();
  s.tables = {"it_chk.old", "it_chk.nosuch"};
  auto r = Check(Config(dir, s));
  EXPECT_THAT(r.output, ::testing::HasSubstr("it_chk.nosuch"));
  std::string line = LineOf(r.output, "table engines");
  EXPECT_THAT(line, ::testing::StartsWith("FAIL")) << r.output;
  EXPECT_THAT(line, ::testing::HasSubstr("it_chk.old (MyISAM)")) << r.output;
}

TEST_F(CheckWrong, MaxAllowedPacketSmallerThanTheLargestRow) {
  TempDir dir;
  Spec s = Wrong();
  s.tables = {"it_chk.wide"};
  auto r = Check(Config(dir, s));
  std::string line = LineOf(r.output, "max_allowed_packet");
  EXPECT_THAT(line, ::testing::StartsWith("WARN")) << r.output;
  EXPECT_THAT(line, ::testing::HasSubstr("64 KiB is smaller than an update event of the largest row: it_chk.wide"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("fix: SET GLOBAL max_allowed_packet = 131072"));
  // The narrow table fits.
  s.tables = {"it_chk.t"};
  r = Check(Config(dir, s));
  EXPECT_THAT(LineOf(r.output, "max_allowed_packet"), ::testing::StartsWith("PASS")) << r.output;
}

// A MySQL/MariaDB destination with a max_allowed_packet smaller than the largest row: the
// run would stop on that row ([1153] from the destination), so check says so beforehand (a
// new user's probe: check said READY, it knew only the source's limit). The "wrong" server
// (64 KiB) is the destination here; the source is the shared test server.
TEST_F(CheckWrong, SinkMaxAllowedPacketSmallerThanTheLargestRow) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_chk_dpk; CREATE DATABASE it_chk_dpk;"
                       "CREATE TABLE it_chk_dpk.wide (id INT PRIMARY KEY, v MEDIUMBLOB);"
                       "INSERT INTO it_chk_dpk.wide VALUES (1, REPEAT('x', 100000));"
                       "CREATE TABLE it_chk_dpk.narrow (id INT PRIMARY KEY, v VARCHAR(20));"),
            0);
  TempDir dir;
  ConnectOptions o = TestServer();
  auto config = [&](const std::string& table) {
    ::setenv("SLUICE_IT_CHECK_PASSWORD", o.password.c_str(), 1);
    ::setenv("SLUICE_IT_CHECK_DEST_PASSWORD", g_wrong.password.c_str(), 1);
    std::string path = dir.File("dpk.toml");
    std::ofstream(path, std::ios::trunc) << fmt::format(
        "[source]\nhost = \"127.0.0.1\"\nport = {}\nuser = \"{}\"\npassword_env = \"SLUICE_IT_CHECK_PASSWORD\"\n"
        "server_id = 5623\ntables = [\"it_chk_dpk.{}\"]\ntls = \"disabled\"\n\n[sink]\ntype = \"mysql\"\n\n"
        "[sink.mysql]\nhost = \"127.0.0.1\"\nport = {}\nuser = \"sluice\"\n"
        "password_env = \"SLUICE_IT_CHECK_DEST_PASSWORD\"\ndatabase = \"it_chk_dpk_meta\"\ntls = \"disabled\"\n",
        o.port, o.user, table, g_wrong.port);
    return path;
  };
  auto r = Check(config("wide"));
  EXPECT_THAT(LineOf(r.output, "max_allowed_packet"), ::testing::StartsWith("PASS")) << r.output;  // the source's
  std::string line = LineOf(r.output, "sink max_allowed_packet");
  EXPECT_THAT(line, ::testing::StartsWith("FAIL")) << r.output;
  EXPECT_THAT(line, ::testing::HasSubstr("64 KiB is smaller than a statement holding the largest row: it_chk_dpk.wide"))
      << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("fix: SET GLOBAL max_allowed_packet = 131072 on the destination"));
  r = Check(config("narrow"));
  EXPECT_THAT(LineOf(r.output, "sink max_allowed_packet"), ::testing::StartsWith("PASS")) << r.output;
  (void)RunSqlText("DROP DATABASE IF EXISTS it_chk_dpk;");
}

TEST_F(CheckWrong, TlsOffUnderPreferred) {
  TempDir dir;
  Spec s = Wrong();
  s.tls = "preferred";
  auto r = Check(Config(dir, s));
  EXPECT_THAT(LineOf(r.output, "TLS"), ::testing::StartsWith("WARN  TLS")) << r.output;
  EXPECT_THAT(LineOf(r.output, "TLS"), ::testing::HasSubstr("plain text"));
}

TEST_F(CheckWrong, SnapshotExpectedToOutlastRetention) {
  TempDir dir;
  Spec s = Wrong();
  s.extra_snapshot = "expected_rows_per_second = 10\n";  // 1000 rows: ~100 s against 60 s
  auto r = Check(Config(dir, s));
  std::string line = LineOf(r.output, "binlog retention: snapshot time");
  EXPECT_THAT(line, ::testing::StartsWith("WARN")) << r.output;
  EXPECT_THAT(line, ::testing::HasSubstr("1000 rows in 1 table(s) to copy take about 100 s"));
  EXPECT_THAT(line, ::testing::HasSubstr("binlogs expire after 60 s"));
  // `run` says so up front too, and refuses the STATEMENT server before copying anything.
  auto run = RunSluice({"run", "--config", Config(dir, s), "--until-caught-up"}, std::chrono::seconds(60));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, ::testing::HasSubstr("refusing to start"));
  EXPECT_THAT(run.output, ::testing::HasSubstr("binlog_format: STATEMENT"));
  EXPECT_THAT(run.output, ::testing::HasSubstr("warning: check: binlog_row_image: MINIMAL"));
  EXPECT_THAT(run.output, ::testing::Not(::testing::HasSubstr("snapshot:")));
}

TEST_F(CheckWrong, NothingListensOnThePort) {
  TempDir dir;
  Spec s = Wrong();
  s.port = 1;  // privileged, nothing listens
  auto r = Check(Config(dir, s));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(LineOf(r.output, "TCP connection"), ::testing::StartsWith("FAIL")) << r.output;
  EXPECT_THAT(LineOf(r.output, "TCP connection"), ::testing::HasSubstr("cannot connect to 127.0.0.1:1"));
}

TEST_F(CheckWrong, SinkInAMissingDirectory) {
  TempDir dir;
  Spec s = Wrong();
  s.sink_path = dir.File("no/such/dir/replica.db");
  auto r = Check(Config(dir, s));
  std::string line = LineOf(r.output, "sink reachable and writable");
  EXPECT_THAT(line, ::testing::StartsWith("FAIL")) << r.output;
  EXPECT_THAT(line, ::testing::HasSubstr("does not exist"));
}

// On the shared test server, which is set up right.
Spec Good() {
  Spec s;
  ConnectOptions o = TestServer();
  s.port = o.port;
  s.password = o.password;
  s.user = o.user;
  s.tables = {"it_chk_ok.*"};
  s.server_id = 5621;
  return s;
}

TEST(Check, CorrectSetupPassesEveryLine) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_chk_ok; CREATE DATABASE it_chk_ok;"
                       "CREATE TABLE it_chk_ok.t (id INT PRIMARY KEY, b LONGBLOB);"
                       "INSERT INTO it_chk_ok.t VALUES (1, REPEAT('x', 1000));"),
            0);
  TempDir dir;
  auto r = Check(Config(dir, Good()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::Not(::testing::HasSubstr("WARN")));
  EXPECT_THAT(r.output, ::testing::Not(::testing::HasSubstr("FAIL")));
  for (const char* name : {"TCP connection", "server version", "log_bin", "binlog_format", "binlog_row_image",
                           "binlog_row_metadata", "GTID", "REPLICATION SLAVE privilege",
                           "REPLICATION CLIENT privilege", "SELECT on it_chk_ok.*", "table engines", "server_id",
                           "TLS", "max_allowed_packet", "binlog retention: resume position",
                           "binlog retention: snapshot time", "sink reachable and writable"})
    EXPECT_THAT(LineOf(r.output, name), ::testing::StartsWith("PASS")) << name << "\n" << r.output;
  // The LONGBLOB is measured (1000 bytes), not taken at its declared 4 GiB.
  EXPECT_THAT(LineOf(r.output, "max_allowed_packet"), ::testing::HasSubstr("largest row is about 1004 bytes"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("\nOK: 17 passed, 0 warning(s), 0 failed"));
}

// MariaDB long unique indexes (UNIQUE on TEXT, USING HASH) put a hidden hash column in every
// row the stream reads. A new user's probe: the snapshot passed and the first streamed change
// stopped every run with a resnapshot advice that did not help. `check` fails such tables in
// mode cdc and `run` refuses to start; read without the binlog (mode full), they pass.
TEST(Check, LongUniqueIndexesOnStreamedTablesAreRefusedWithTheWaysOut) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_chk_lu; CREATE DATABASE it_chk_lu;"
                       "CREATE TABLE it_chk_lu.r (id INT PRIMARY KEY, c8 TEXT, UNIQUE KEY u (c8));"
                       "CREATE TABLE it_chk_lu.ok (id INT PRIMARY KEY, v VARCHAR(10), UNIQUE KEY v (v));"
                       "INSERT INTO it_chk_lu.r VALUES (1, 'a');"),
            0);
  TempDir dir;
  Spec s = Good();
  s.tables = {"it_chk_lu.*"};
  const std::string config = Config(dir, s);
  auto r = Check(config);
  EXPECT_THAT(LineOf(r.output, "long unique indexes"), ::testing::StartsWith("FAIL")) << r.output;
  EXPECT_THAT(LineOf(r.output, "long unique indexes"), ::testing::HasSubstr("it_chk_lu.r (u)")) << r.output;
  EXPECT_THAT(LineOf(r.output, "long unique indexes"), ::testing::Not(::testing::HasSubstr("it_chk_lu.ok")));
  auto run = RunSluice({"run", "--config", config, "--until-caught-up"}, std::chrono::seconds(60));
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, ::testing::HasSubstr("long unique indexes")) << run.output;
  std::ofstream(config, std::ios::app) << "\n[table.\"it_chk_lu.r\"]\nmode = \"full\"\n";
  r = Check(config);
  EXPECT_EQ(LineOf(r.output, "long unique indexes"), "") << r.output;
  run = RunSluice({"run", "--config", config, "--until-caught-up"}, std::chrono::seconds(60));
  EXPECT_EQ(run.exit_code, 0) << run.output;
}

// An exclude pattern that matches nothing (a typo: the table it meant stays captured) is
// warned of, by check and by run (a new user's probe: nothing said so).
TEST(Check, AnExcludePatternThatMatchesNothingIsWarnedOf) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_chk_ex; CREATE DATABASE it_chk_ex;"
                       "CREATE TABLE it_chk_ex.audit (id INT PRIMARY KEY); CREATE TABLE it_chk_ex.t (id INT PRIMARY KEY);"),
            0);
  TempDir dir;
  Spec s = Good();
  s.tables = {"it_chk_ex.*"};
  const std::string config = Config(dir, s);
  std::string text = ReadFile(config);
  text.insert(text.find("tls = "), "exclude = [\"it_chk_ex.adit\", \"it_chk_ex.t\"]\n");
  std::ofstream(config, std::ios::trunc) << text;
  auto r = Check(config);
  EXPECT_THAT(LineOf(r.output, "source.exclude"), ::testing::StartsWith("WARN")) << r.output;
  EXPECT_THAT(LineOf(r.output, "source.exclude"), ::testing::HasSubstr("it_chk_ex.adit match(es) no table")) << r.output;
  EXPECT_THAT(LineOf(r.output, "source.exclude"), ::testing::Not(::testing::HasSubstr("it_chk_ex.t,"))) << r.output;
  auto run = RunSluice({"run", "--config", config, "--until-caught-up"}, std::chrono::seconds(60));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, ::testing::HasSubstr("it_chk_ex.adit match(es) no table")) << run.output;
}

// A source.tables pattern that matches no table (its database empty, not yet or any more):
// before the first run `check` fails it in the words `run` refuses with (it passed "SELECT on
// ... no table matches (nothing to check)" and said READY: new-user test); once the pipeline
// exists it warns, as the run does and goes on; `compare` compares the tables that exist and
// names the pattern in a warning line (it exited 1 with NotFound).
TEST(Check, APatternMatchingNoTableFailsAFirstRunAndWarnsAResumedOne) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_pat_a; DROP DATABASE IF EXISTS it_pat_b;"
                       "CREATE DATABASE it_pat_a; CREATE DATABASE it_pat_b;"
                       "CREATE TABLE it_pat_a.t (id INT PRIMARY KEY); INSERT INTO it_pat_a.t VALUES (1), (2);"),
            0);
  TempDir dir;
  Spec s = Good();
  s.tables = {"it_pat_a.*", "it_pat_b.*"};
  const std::string both = Config(dir, s);
  auto first = Check(both);
  EXPECT_EQ(first.exit_code, 1) << first.output;
  const std::string words = "table pattern 'it_pat_b.*' matches no table";
  EXPECT_THAT(LineOf(first.output, "source.tables"), ::testing::StartsWith("FAIL")) << first.output;
  EXPECT_THAT(LineOf(first.output, "source.tables"), ::testing::HasSubstr(words)) << first.output;
  EXPECT_THAT(first.output, ::testing::HasSubstr("\nNOT READY:")) << first.output;
  auto refused = RunSluice({"run", "--config", both, "--until-caught-up"}, std::chrono::seconds(60));
  EXPECT_NE(refused.exit_code, 0) << refused.output;
  EXPECT_THAT(refused.output, ::testing::HasSubstr(words)) << refused.output;

  // The pipeline of it_pat_a alone, then both patterns again: a resumed run goes on.
  Spec one = s;
  one.tables = {"it_pat_a.*"};
  auto run = RunSluice({"run", "--config", Config(dir, one), "--until-caught-up"}, std::chrono::seconds(60));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  Config(dir, s);
  auto resumed = Check(both);
  EXPECT_THAT(LineOf(resumed.output, "source.tables"), ::testing::StartsWith("WARN")) << resumed.output;
  EXPECT_THAT(LineOf(resumed.output, "source.tables"), ::testing::HasSubstr(words)) << resumed.output;
  EXPECT_THAT(resumed.output, ::testing::Not(::testing::HasSubstr("\nNOT READY:"))) << resumed.output;
  auto compare = RunSluice({"compare", "--config", both}, std::chrono::seconds(60));
  EXPECT_EQ(compare.exit_code, 0) << compare.output;
  EXPECT_THAT(compare.output, ::testing::HasSubstr("WARNING: " + words)) << compare.output;
  EXPECT_THAT(compare.output, ::testing::HasSubstr("it_pat_a.t")) << compare.output;
  EXPECT_THAT(compare.output, ::testing::HasSubstr("OK: 1 of 1 tables")) << compare.output;
}

// source.tls = "verify_identity" against a server without TLS: the connection line fails with
// a fix about TLS (it gave the generic "check source.host, source.port, that the server
// listens on TCP ...": new-user test).
TEST(Check, TlsRequiredOfAServerWithoutTlsGetsAFixAboutTls) {
  TempDir dir;
  Spec s = Good();
  s.tls = "verify_identity";
  auto r = Check(Config(dir, s));
  if (LineOf(r.output, "TCP connection").rfind("FAIL", 0) != 0) GTEST_SKIP() << "the test server offers TLS:\n" << r.output;
  EXPECT_THAT(LineOf(r.output, "TCP connection"), ::testing::HasSubstr("does not offer it")) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("fix: enable TLS on the server")) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("choose another source.tls")) << r.output;
  EXPECT_THAT(r.output, ::testing::Not(::testing::HasSubstr("source.port"))) << r.output;
}

// A first word that names no command gets the list of commands (it got CLI11's "A
// subcommand is required").
TEST(Check, AnUnknownCommandIsNamedWithTheValidOnes) {
  auto r = RunSluice({"frobnicate", "--config", "x"}, std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("unknown command 'frobnicate'")) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("run, check, compare, verify, resnapshot, tail, decode")) << r.output;
  EXPECT_THAT(r.output, ::testing::Not(::testing::HasSubstr("A subcommand is required"))) << r.output;
}

// Warnings alone (here: a server without TLS, source.tls = "preferred") do not stop a run: the
// verdict says ready, with warnings (it said NOT READY: a new-user test), and the exit code
// stays 1 as README's exit codes say.
TEST(Check, WarningsOnlyAreReadyWithWarnings) {
  ASSERT_EQ(RunSqlText("CREATE DATABASE IF NOT EXISTS it_chk_ok; CREATE TABLE IF NOT EXISTS it_chk_ok.t (id INT PRIMARY KEY, b LONGBLOB);"), 0);
  TempDir dir;
  Spec s = Good();
  s.tls = "preferred";
  auto r = Check(Config(dir, s));
  if (LineOf(r.output, "TLS").rfind("WARN", 0) != 0) GTEST_SKIP() << "the test server offers TLS:\n" << r.output;
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("\nREADY, WITH WARNINGS: 16 passed, 1 warning(s), 0 failed")) << r.output;
}

// An SQLite file that already holds a captured table's name with other columns (another
// tool's): the check fails with the words the run then stops with, naming the file (the
// new-user test: check passed); a table with the source's columns passes.
TEST(Check, SqliteFileHoldingACapturedTableWithOtherColumns) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_chk_tbl; CREATE DATABASE it_chk_tbl;"
                       "CREATE TABLE it_chk_tbl.t (id INT PRIMARY KEY, v INT); INSERT INTO it_chk_tbl.t VALUES (1, 1);"
                       "CREATE TABLE it_chk_tbl.u (id INT PRIMARY KEY);"),
            0);
  TempDir dir;
  Spec s = Good();
  s.tables = {"it_chk_tbl.*"};
  const std::string replica = dir.File("replica.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(replica.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE \"it_chk_tbl.t\" (a TEXT, b TEXT); INSERT INTO \"it_chk_tbl.t\" VALUES ('x', 'y');"
                             "CREATE TABLE \"it_chk_tbl.u\" (id INTEGER PRIMARY KEY)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const std::string config = Config(dir, s);
  auto r = Check(config);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const std::string line = LineOf(r.output, "sink: existing tables");
  EXPECT_THAT(line, ::testing::StartsWith("FAIL")) << r.output;
  const std::string said = "preparing table it_chk_tbl.t: sqlite " + replica +
                           ": table it_chk_tbl.t: existing sqlite column 1 (a TEXT, pk 0) does not match source "
                           "column id (INTEGER, pk 1)";
  EXPECT_THAT(line, ::testing::HasSubstr(said)) << r.output;
  auto run = RunSluice({"run", "--config", config, "--until-caught-up"}, std::chrono::seconds(60));
  EXPECT_NE(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, ::testing::HasSubstr(said)) << "the run's words";
  ASSERT_EQ(sqlite3_open(replica.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DROP TABLE \"it_chk_tbl.t\"", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  r = Check(config);
  EXPECT_THAT(LineOf(r.output, "sink: existing tables"),
              ::testing::StartsWith("PASS  sink: existing tables                1 captured table(s) already in"))
      << r.output;
}

TEST(Check, ServerIdOfAConnectedReplica) {
  ASSERT_EQ(RunSqlText("CREATE DATABASE IF NOT EXISTS it_chk_ok; CREATE TABLE IF NOT EXISTS it_chk_ok.t (id INT PRIMARY KEY, b LONGBLOB);"), 0);
  TempDir dir;
  Spec s = Good();
  s.server_id = 5622;
  std::string config = Config(dir, s);
  pid_t running = StartSluice({"run", "--config", config}, dir.File("run.log"));
  bool streaming = false;
  for (int i = 0; i < 100 && !streaming; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    streaming = ReadFile(dir.File("run.log")).find("streaming from") != std::string::npos;
  }
  ASSERT_TRUE(streaming) << ReadFile(dir.File("run.log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // registered with the server
  TempDir other;
  Spec t = s;
  t.sink_path = other.File("replica.db");
  auto r = Check(Config(other, t));
  // A second pipeline given the same id by mistake refuses to start: connecting would make the
  // server drop the running one's connection, which then stopped for good (the new-user
  // probe: "the healthy one dies, the newcomer only warns").
  auto second = RunSluice({"run", "--config", Config(other, t), "--until-caught-up"}, std::chrono::seconds(60));
  ASSERT_EQ(RunSqlText("INSERT INTO it_chk_ok.t VALUES (5622, 'after the second run') "
                       "ON DUPLICATE KEY UPDATE b = 'after the second run'"),
            0);
  bool applied = false;
  for (int i = 0; i < 100 && !applied; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    sqlite3* db = nullptr;
    if (sqlite3_open(s.sink_path.empty() ? dir.File("replica.db").c_str() : s.sink_path.c_str(), &db) == SQLITE_OK) {
      sqlite3_stmt* st = nullptr;
      if (sqlite3_prepare_v2(db, "SELECT count(*) FROM \"it_chk_ok.t\" WHERE id = 5622 AND CAST(b AS TEXT) = 'after the second run'",
                             -1, &st, nullptr) == SQLITE_OK &&
          sqlite3_step(st) == SQLITE_ROW)
        applied = sqlite3_column_int(st, 0) == 1;
      sqlite3_finalize(st);
    }
    sqlite3_close(db);
  }
  kill(running, SIGTERM);
  EXPECT_EQ(WaitChild(running), 0) << ReadFile(dir.File("run.log"));
  EXPECT_TRUE(applied) << "the first run stopped streaming:\n" << ReadFile(dir.File("run.log"));
  EXPECT_EQ(second.exit_code, 1) << second.output;
  EXPECT_THAT(second.output, ::testing::HasSubstr("source.server_id 5622 is in use by another sluice run on this "
                                                  "machine, still running (sluice@"))
      << second.output;
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(LineOf(r.output, "server_id"), ::testing::StartsWith("FAIL")) << r.output;
  EXPECT_THAT(LineOf(r.output, "server_id"), ::testing::HasSubstr("5622 is in use by another sluice run on this machine"));
  EXPECT_THAT(r.output, ::testing::HasSubstr("\nNOT READY: "));
  // Right after that run stopped, the server still lists its id for a second or two: check
  // waits for it to go rather than failing (it failed here, and in make demo's resume step).
  auto after = Check(Config(other, t));
  EXPECT_THAT(LineOf(after.output, "server_id"), ::testing::StartsWith("PASS"))
      << "check right after the run with server_id 5622 stopped:\n" << after.output;
  t.server_id = 1;  // the test server's own
  r = Check(Config(other, t));
  EXPECT_THAT(LineOf(r.output, "server_id"), ::testing::HasSubstr("is the server's own server_id")) << r.output;
}

TEST(Check, ResumePositionAgeAgainstRetention) {
  ASSERT_EQ(RunSqlText("CREATE DATABASE IF NOT EXISTS it_chk_ok; CREATE TABLE IF NOT EXISTS it_chk_ok.t (id INT PRIMARY KEY, b LONGBLOB);"), 0);
  TempDir dir;
  std::string config = Config(dir, Good());
  auto first = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  // The destination was last written two hours ago; binlogs expire after an hour.
  struct utimbuf old {};
  old.actime = old.modtime = time(nullptr) - 7200;
  for (const char* f : {"replica.db", "replica.db-wal"}) ::utime(dir.File(f).c_str(), &old);
  ASSERT_EQ(RunSqlText("SET GLOBAL binlog_expire_logs_seconds = 3600"), 0);
  auto r = Check(config);
  ASSERT_EQ(RunSqlText("SET GLOBAL binlog_expire_logs_seconds = 0"), 0);
  std::string line = LineOf(r.output, "binlog retention: resume position");
  EXPECT_THAT(line, ::testing::StartsWith("WARN")) << r.output;
  EXPECT_THAT(line, ::testing::HasSubstr("last written 2.0 h ago and binlogs expire after 60 min"));
}

TEST(Check, PurgedResumePositionNamesTheOldestBinlog) {
  ASSERT_EQ(RunSqlText("CREATE DATABASE IF NOT EXISTS it_chk_ok; CREATE TABLE IF NOT EXISTS it_chk_ok.t (id INT PRIMARY KEY, b LONGBLOB);"), 0);
  TempDir dir;
  std::string config = Config(dir, Good());
  auto first = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Execute("INSERT INTO it_chk_ok.t VALUES (100, 'y')").ok());
  ASSERT_TRUE(c->Execute("FLUSH BINARY LOGS").ok());
  auto status = c->Query("SHOW MASTER STATUS");
  ASSERT_TRUE(status.ok() && !status->rows.empty());
  std::string oldest = *status->rows[0][0];
  bool purged = false;
  for (int i = 0; i < 100 && !purged; ++i) {
    ASSERT_TRUE(c->Execute("PURGE BINARY LOGS TO '" + oldest + "'").ok());
    auto logs = c->Query("SHOW BINARY LOGS");
    purged = logs.ok() && !logs->rows.empty() && logs->rows[0][0] == oldest;
    if (!purged) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(purged);
  auto r = Check(config);
  EXPECT_EQ(r.exit_code, 1);
  std::string line = LineOf(r.output, "binlog retention: resume position");
  EXPECT_THAT(line, ::testing::StartsWith("FAIL")) << r.output;
  EXPECT_THAT(line, ::testing::HasSubstr("is no longer on the server"));
  EXPECT_THAT(line, ::testing::HasSubstr("the oldest binlog it has is " + oldest));
  EXPECT_THAT(r.output, ::testing::HasSubstr("fix: take a new snapshot into a new destination"));
  // `run` stops before anything with exit code 3.
  auto run = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(run.exit_code, 3) << run.output;
}

}  // namespace
}  // namespace sluice::testing
