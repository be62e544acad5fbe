// Clear errors (issue 6, item 11) that need the live server: a purged resume position, and
// missing privileges checked before the snapshot.
#include <cstdlib>
#include <fstream>
#include <thread>

#include "harness.h"

namespace sluice::testing {
namespace {

std::string CurrentBinlog(Connection& c) {
  auto r = c.Query("SHOW MASTER STATUS");
  if (!r.ok() || r->rows.empty() || !r->rows[0][0]) return "";
  return *r->rows[0][0];
}

// The checkpoint's position was purged: exit code 3, naming the position, that the server
// no longer has it, the oldest binlog it has, and the remedy.
TEST(Errors, PurgedResumePositionHasItsOwnExitCodeAndSaysWhatToDo) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_purge; CREATE DATABASE it_purge;"
                       "CREATE TABLE it_purge.t (id INT PRIMARY KEY);"
                       "INSERT INTO it_purge.t VALUES (1);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_purge.t"};
  spec.sink_path = dir.File("replica.db");
  std::string config = WriteConfig(dir, spec);
  auto first = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(first.exit_code, 0) << first.output;

  auto c = Connect();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Execute("INSERT INTO it_purge.t VALUES (2)").ok());
  ASSERT_TRUE(c->Execute("FLUSH BINARY LOGS").ok());
  std::string oldest = CurrentBinlog(*c);
  ASSERT_FALSE(oldest.empty());
  // MariaDB keeps a binlog until InnoDB no longer needs it for crash recovery (shortly after
  // the FLUSH): retry the PURGE until the older files are gone.
  bool purged = false;
  for (int i = 0; i < 100 && !purged; ++i) {
    ASSERT_TRUE(c->Execute("PURGE BINARY LOGS TO '" + oldest + "'").ok());
    auto logs = c->Query("SHOW BINARY LOGS");
    ASSERT_TRUE(logs.ok());
    purged = !logs->rows.empty() && logs->rows[0][0] == oldest;
    if (!purged) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(purged);

  auto second = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(second.exit_code, 3) << second.output;
  EXPECT_NE(second.output.find("is no longer on the server"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("the oldest binlog it has is " + oldest), std::string::npos)
      << second.output;
  EXPECT_NE(second.output.find("take a new snapshot into a new destination"), std::string::npos)
      << second.output;
}

// A config for `user`, whose password is put in SLUICE_IT_OTHER_PASSWORD.
std::string ConfigForUser(const TempDir& dir, SluiceConfigSpec spec, const std::string& user,
                          const std::string& password) {
  std::string path = WriteConfig(dir, spec);
  std::string text = ReadFile(path);
  ConnectOptions o = TestServer();
  text.replace(text.find("user = \"" + o.user + "\""), o.user.size() + 9, "user = \"" + user + "\"");
  text.replace(text.find("SLUICE_TEST_MYSQL_PASSWORD"), 26, "SLUICE_IT_OTHER_PASSWORD");
  ::setenv("SLUICE_IT_OTHER_PASSWORD", password.c_str(), 1);
  std::ofstream(path, std::ios::trunc) << text;
  return path;
}

// Missing privileges are named before the snapshot: no REPLICATION SLAVE used to copy every
// table and then fail with "[1045] Unknown or undefined error code"; no SELECT used to give
// "pattern matches no table".
TEST(Errors, MissingPrivilegesAreNamedBeforeTheSnapshot) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_priv; CREATE DATABASE it_priv;"
                       "CREATE TABLE it_priv.t (id INT PRIMARY KEY); INSERT INTO it_priv.t VALUES (1);"
                       "CREATE OR REPLACE USER 'it_norepl'@'127.0.0.1' IDENTIFIED BY 'pwA';"
                       "GRANT SELECT, RELOAD, LOCK TABLES ON *.* TO 'it_norepl'@'127.0.0.1';"
                       "CREATE OR REPLACE USER 'it_nosel'@'127.0.0.1' IDENTIFIED BY 'pwB';"
                       "GRANT REPLICATION SLAVE, BINLOG MONITOR, RELOAD ON *.* TO 'it_nosel'@'127.0.0.1';"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_priv.*"};
  spec.sink_path = dir.File("replica.db");
  auto r = RunSluice({"run", "--config", ConfigForUser(dir, spec, "it_norepl", "pwA"), "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("REPLICATION SLAVE privilege"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("GRANT REPLICATION SLAVE ON *.* TO 'it_norepl'@'127.0.0.1'"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("snapshot:"), std::string::npos) << "nothing may be copied first:\n" << r.output;
  EXPECT_EQ(ReadSqliteCheckpoint(spec.sink_path), "");

  spec.sink_path = dir.File("replica2.db");
  r = RunSluice({"run", "--config", ConfigForUser(dir, spec, "it_nosel", "pwB"), "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("SELECT on it_priv.*: the user has no privilege on database it_priv"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("GRANT SELECT ON `it_priv`.* TO 'it_nosel'@'127.0.0.1'"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("matches no table"), std::string::npos) << r.output;
}

// source.password_env names a variable that is set but empty: the server's "Access denied"
// is kept, and the message names the variable and the key (it used to be the server's
// message alone). The password is never in the output.
TEST(Errors, EmptyPasswordVariableIsNamedWhenTheLoginIsRefused) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_emptypw; CREATE DATABASE it_emptypw;"
                       "CREATE TABLE it_emptypw.t (id INT PRIMARY KEY);"
                       "CREATE OR REPLACE USER 'it_emptypw'@'127.0.0.1' IDENTIFIED BY 'pwEmptyVar';"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_emptypw.*"};
  spec.sink_path = dir.File("replica.db");
  const std::string config = ConfigForUser(dir, spec, "it_emptypw", "");
  for (const std::string command : {"run", "check"}) {
    std::vector<std::string> args = {command, "--config", config};
    if (command == "run") args.push_back("--until-caught-up");
    auto r = RunSluice(args);
    EXPECT_EQ(r.exit_code, 1) << command << ":\n" << r.output;
    EXPECT_NE(r.output.find("Access denied for user 'it_emptypw'"), std::string::npos) << command << ":\n" << r.output;
    EXPECT_NE(r.output.find("the environment variable SLUICE_IT_OTHER_PASSWORD (source.password_env) is set but empty"),
              std::string::npos)
        << command << ":\n" << r.output;
    EXPECT_EQ(r.output.find("pwEmptyVar"), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace sluice::testing
