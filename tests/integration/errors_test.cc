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

}  // namespace
}  // namespace sluice::testing
