// Engines and special tables (issue 7 item 6, snapshot/coordinator.h CheckSnapshotTable):
// a system-versioned table is refused for mode cdc with the reason and read by queries in
// mode full; a table without a consistent read (MyISAM, Aria) is refused for the snapshot
// unless snapshot.allow_inconsistent_read names it, and then named in the log; such a table
// without a primary key is refused even so (it would end duplicated). A keyless InnoDB table
// interrupted mid-copy is copied again, not duplicated: crash_test.cc.
#include <fstream>

#include "harness.h"

namespace sluice::testing {
namespace {

std::string EnginesConfig(const TempDir& dir, const std::vector<std::string>& tables, const std::string& db,
                          const std::string& snapshot_extra, const std::string& sections) {
  SluiceConfigSpec spec;
  spec.tables = tables;
  spec.sink_path = db;
  spec.snapshot_extra = snapshot_extra;
  std::string path = WriteConfig(dir, spec);
  std::ofstream(path, std::ios::app) << "\n" << sections;
  return path;
}

TEST(Engines, SystemVersionedTableRefusedForCdcAndReadByQueriesInModeFull) {
  ASSERT_EQ(RunSqlText("CREATE DATABASE IF NOT EXISTS it_eng; USE it_eng; DROP TABLE IF EXISTS it_eng.ver;"
                       "CREATE TABLE it_eng.ver (id INT PRIMARY KEY, x INT) WITH SYSTEM VERSIONING;"
                       "INSERT INTO it_eng.ver SELECT seq, seq FROM seq_1_to_5;"
                       "UPDATE it_eng.ver SET x = 100 WHERE id = 1; DELETE FROM it_eng.ver WHERE id = 2;"),
            0);
  TempDir dir;
  const std::string cdc = EnginesConfig(dir, {"it_eng.ver"}, dir.File("cdc.db"), "", "");
  ProcessResult r = RunSluice({"run", "--config", cdc, "--until-caught-up"});
  EXPECT_NE(r.exit_code, 0) << "a system-versioned table in mode cdc must be refused\n" << r.output;
  EXPECT_NE(r.output.find("table it_eng.ver is system-versioned (WITH SYSTEM VERSIONING)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("mode = \"full\""), std::string::npos) << "the refusal names the way out\n" << r.output;

  const std::string db = dir.File("full.db");
  const std::string full =
      EnginesConfig(dir, {"it_eng.ver"}, db, "", "[table.\"it_eng.ver\"]\nmode = \"full\"\n");
  r = RunSluice({"run", "--config", full});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The source's SELECT (what the comparison reads) gives the current rows only: 4, with
  // row 1 updated and row 2 gone, not the history rows.
  ExpectReplicaEqualsSource({"it_eng.ver"}, db);
  EXPECT_NE(r.output.find("copied, 4 rows"), std::string::npos) << r.output;
}

// A system-versioned table created while streaming: the run stops at its CREATE with the same
// refusal and way out. Before, it stopped at the table's first row saying sluice misread the
// statement (please report it), and the refusal came only after a resnapshot (a new user's
// probe).
TEST(Engines, SystemVersionedTableCreatedWhileStreamingIsRefusedAtItsCreate) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_engv; CREATE DATABASE it_engv; USE it_engv;"
                       "CREATE TABLE t (id INT PRIMARY KEY); INSERT INTO t VALUES (1);"),
            0);
  TempDir dir;
  const std::string config = EnginesConfig(dir, {"it_engv.*"}, dir.File("replica.db"), "", "");
  ProcessResult r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("USE it_engv; CREATE TABLE ver (id INT PRIMARY KEY, x INT) WITH SYSTEM VERSIONING;"
                       "INSERT INTO ver VALUES (1, 1);"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("CREATE TABLE ver"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("table it_engv.ver is system-versioned (WITH SYSTEM VERSIONING)"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("misread"), std::string::npos) << r.output;
}

TEST(Engines, NonTransactionalTablesRefusedUnlessAllowedThenNamedInTheLog) {
  ASSERT_EQ(RunSqlText("CREATE DATABASE IF NOT EXISTS it_eng; USE it_eng; DROP TABLE IF EXISTS it_eng.my, it_eng.ar;"
                       "CREATE TABLE it_eng.my (id INT PRIMARY KEY, v INT) ENGINE=MyISAM;"
                       "CREATE TABLE it_eng.ar (id INT PRIMARY KEY, v INT) ENGINE=Aria;"
                       "INSERT INTO it_eng.my SELECT seq, seq FROM seq_1_to_50;"
                       "INSERT INTO it_eng.ar SELECT seq, seq FROM seq_1_to_50;"),
            0);
  TempDir dir;
  const std::string db = dir.File("replica.db");
  ProcessResult r =
      RunSluice({"run", "--config", EnginesConfig(dir, {"it_eng.my", "it_eng.ar"}, db, "", ""), "--until-caught-up"});
  EXPECT_NE(r.exit_code, 0) << "MyISAM/Aria tables must be refused for the snapshot\n" << r.output;
  EXPECT_NE(r.output.find("uses engine Aria, which gives no consistent read"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("allow_inconsistent_read = [\"it_eng.ar\"]"), std::string::npos)
      << "the refusal names the config key\n" << r.output;

  const std::string allowed =
      EnginesConfig(dir, {"it_eng.my", "it_eng.ar"}, db, "allow_inconsistent_read = [\"it_eng.*\"]\n", "");
  ProcessResult check = RunSluice({"check", "--config", allowed});
  EXPECT_NE(check.output.find("WARN  table engines"), std::string::npos) << check.output;
  r = RunSluice({"run", "--config", allowed, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("it_eng.my (MyISAM) is copied without a consistent read"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("it_eng.ar (Aria) is copied without a consistent read"), std::string::npos) << r.output;
  ASSERT_EQ(RunSqlText("UPDATE it_eng.my SET v = -v WHERE id < 10; DELETE FROM it_eng.ar WHERE id > 40;"), 0);
  r = RunSluice({"run", "--config", allowed, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectReplicaEqualsSource({"it_eng.my", "it_eng.ar"}, db);
}

TEST(Engines, KeylessNonTransactionalTableRefusedEvenWhenAllowed) {
  ASSERT_EQ(RunSqlText("CREATE DATABASE IF NOT EXISTS it_eng; USE it_eng; DROP TABLE IF EXISTS it_eng.nk;"
                       "CREATE TABLE it_eng.nk (v INT, note VARCHAR(10)) ENGINE=MyISAM;"
                       "INSERT INTO it_eng.nk SELECT seq, 'x' FROM seq_1_to_20;"),
            0);
  TempDir dir;
  const std::string config = EnginesConfig(dir, {"it_eng.nk"}, dir.File("replica.db"),
                                           "allow_inconsistent_read = [\"it_eng.nk\"]\n", "");
  ProcessResult r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_NE(r.exit_code, 0) << "a keyless MyISAM table could end duplicated: refused\n" << r.output;
  EXPECT_NE(r.output.find("table it_eng.nk (MyISAM) has no primary key"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("refused even with snapshot.allow_inconsistent_read"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace sluice::testing
