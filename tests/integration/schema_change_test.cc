// Schema changes in the stream (docs/schema-changes.md): rows are decoded with the
// definition they were written under (the schema history kept in the checkpoint), the
// followed DDL kinds reach the SQLite replica and the JSON lines stream in order, and what
// cannot be followed exactly stops the run with the statement, table and position.
#include <signal.h>
#include <sqlite3.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "harness.h"

namespace sluice::testing {
namespace {

// Rows of one table in an SQLite replica (-1 when it cannot be read).
int ReplicaRows(const std::string& path, const std::string& table) {
  sqlite3* db = nullptr;
  int n = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    std::string sql = "SELECT COUNT(*) FROM \"" + table + "\"";
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
      n = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
  }
  sqlite3_close_v2(db);
  return n;
}

// The DDL sequence both modes run: every kind the sinks follow in place, with rows written
// before and after each statement. Under NO_LOG only the history can decode the rows before
// an ALTER (4294967295 in an INT UNSIGNED later made BIGINT; a row one column shorter).
const char* kFollowed =
    "INSERT INTO it_sc.t VALUES (2, 'b', 4294967295, 'two');"
    "UPDATE it_sc.t SET u = 4294967294 WHERE id = 1;"
    "ALTER TABLE it_sc.t MODIFY u BIGINT, ADD COLUMN n INT DEFAULT 7 AFTER id, MODIFY e ENUM('a','b','c','d');"
    "INSERT INTO it_sc.t VALUES (3, 8, 'd', 5000000000, 'three');"
    "UPDATE it_sc.t SET u = u + 1 WHERE id = 2;"
    "ALTER TABLE it_sc.t DROP COLUMN s, RENAME COLUMN e TO label, ADD COLUMN note VARCHAR(20) NOT NULL DEFAULT 'n/a';"
    "INSERT INTO it_sc.t (id, n, label, u) VALUES (4, 9, 'c', -5);"
    "ALTER TABLE it_sc.t CHANGE n num BIGINT DEFAULT 7, ADD INDEX (u);"
    "SET SESSION sql_mode = 'STRICT_TRANS_TABLES'; ALTER TABLE it_sc.t MODIFY num BIGINT NOT NULL DEFAULT 7;"
    "UPDATE it_sc.t SET num = num * 1000000000000 WHERE id = 3;"
    "CREATE TABLE it_sc.born (k VARCHAR(10) PRIMARY KEY, x DECIMAL(6,2), c TEXT) DEFAULT CHARSET=latin1;"
    "INSERT INTO it_sc.born VALUES ('a', 1.50, 'ñ'), ('b', -2.25, NULL);"
    "RENAME TABLE it_sc.r1 TO it_sc.r2;"
    "INSERT INTO it_sc.r2 VALUES (2, 'after rename');"
    "CREATE TABLE it_sc.gone (id INT PRIMARY KEY); INSERT INTO it_sc.gone VALUES (1);"
    "DROP TABLE it_sc.gone; CREATE TABLE it_sc.gone (id INT PRIMARY KEY, w INT); INSERT INTO it_sc.gone VALUES (5, 5);"
    "TRUNCATE it_sc.trunc; INSERT INTO it_sc.trunc VALUES (9);";

void CreateSchemaChangeSource() {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_sc; CREATE DATABASE it_sc;"
                       "CREATE TABLE it_sc.t (id INT PRIMARY KEY, e ENUM('a','b','c'), u INT UNSIGNED, s VARCHAR(10));"
                       "INSERT INTO it_sc.t VALUES (1, 'a', 1, 'one');"
                       "CREATE TABLE it_sc.r1 (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO it_sc.r1 VALUES (1, 'x');"
                       "CREATE TABLE it_sc.trunc (id INT PRIMARY KEY); INSERT INTO it_sc.trunc VALUES (1), (2);"),
            0);
}

// The user tables of an SQLite replica, sorted (their sink names, "db.table").
std::vector<std::string> ReplicaTables(const std::string& path) {
  std::vector<std::string> out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    const char* sql = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_sluice%' ESCAPE '\\' "
                      "ORDER BY name";
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK)
      while (sqlite3_step(s) == SQLITE_ROW) out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
    sqlite3_finalize(s);
  }
  sqlite3_close_v2(db);
  return out;
}

// Quoted names may hold a dot, in the table (`it_dot`.`a.b`) or in the database
// (`it.dot`.`t`), while sluice keys tables by "db.table" text in places (checkpoint tables,
// a re-read's names). Every DDL kind that moves such a table: followed in place, renamed
// (within the patterns, out of them, into them), re-read (a narrowing MODIFY), re-read after
// the table was renamed away or dropped (the re-read finds it gone), dropped. Applied while
// sluice is stopped, then one catch-up run and one more run (it must not read a statement
// again with a wrong split); the replica ends equal to the source, with exactly the tables
// the source has.
TEST(SchemaChange, NamesWithDotsAreFollowedThroughRenameReReadAndDrop) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_dot; DROP DATABASE IF EXISTS `it.dot`;"
                       "DROP DATABASE IF EXISTS it_dot_out; CREATE DATABASE it_dot; CREATE DATABASE `it.dot`;"
                       "CREATE DATABASE it_dot_out;"
                       "CREATE TABLE it_dot.`a.b` (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO it_dot.`a.b` VALUES (1, 'a1');"
                       "CREATE TABLE it_dot.`gone.soon` (id INT PRIMARY KEY, v VARCHAR(10));"
                       "INSERT INTO it_dot.`gone.soon` VALUES (1, 'g1');"
                       "CREATE TABLE `it.dot`.t (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO `it.dot`.t VALUES (1, 't1');"
                       "CREATE TABLE `it.dot`.`x.y` (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO `it.dot`.`x.y` VALUES (1, 'x1');"
                       "CREATE TABLE `it.dot`.`d` (id INT PRIMARY KEY); INSERT INTO `it.dot`.`d` VALUES (1);"
                       "CREATE TABLE it_dot_out.`m.n` (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO it_dot_out.`m.n` VALUES (1, 'm1');"
                       "CREATE TABLE it_dot_out.`k` (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO it_dot_out.`k` VALUES (1, 'k1');"),
            0);
  const std::vector<std::string> tables = {"it_dot.*", "it?dot.*"};
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = tables;
  spec.sink_path = dir.File("replica.db");
  const std::string config = WriteConfig(dir, spec);
  {
    // Sink tables of dropped source tables go too, so the replica's table list is the source's.
    std::string text = ReadFile(config);
    ASSERT_NE(text.find("[sink]"), std::string::npos);
    ASSERT_EQ(text.find("[", text.find("[sink]") + 1), std::string::npos) << "[sink] is the last section";
    std::ofstream(config, std::ios::app) << "drop_tables = \"drop\"\n";
  }
  auto first = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_EQ(ReplicaTables(spec.sink_path),
            (std::vector<std::string>{"it.dot.d", "it.dot.t", "it.dot.x.y", "it_dot.a.b", "it_dot.gone.soon"}));

  ASSERT_EQ(RunSqlText(
                // a dot in the table name: followed in place, renamed, re-read, rows between
                "INSERT INTO it_dot.`a.b` VALUES (2, 'a2');"
                "ALTER TABLE it_dot.`a.b` ADD COLUMN n INT DEFAULT 5;"
                "INSERT INTO it_dot.`a.b` VALUES (3, 'a3', 6);"
                "RENAME TABLE it_dot.`a.b` TO it_dot.`c.d`;"
                "INSERT INTO it_dot.`c.d` VALUES (4, 'a4', 7);"
                "ALTER TABLE it_dot.`c.d` MODIFY v VARCHAR(3);"
                "INSERT INTO it_dot.`c.d` VALUES (5, 'a5', 8);"
                // re-read, then renamed out of the patterns before the re-read can copy it
                "ALTER TABLE it_dot.`gone.soon` MODIFY v VARCHAR(3);"
                "RENAME TABLE it_dot.`gone.soon` TO it_dot_out.`gone.soon`;"
                // a dot in the database name: the same kinds
                "INSERT INTO `it.dot`.t VALUES (2, 't2');"
                "ALTER TABLE `it.dot`.t ADD COLUMN n INT DEFAULT 5;"
                "RENAME TABLE `it.dot`.t TO `it.dot`.`t.2`;"
                "INSERT INTO `it.dot`.`t.2` VALUES (3, 't3', 6);"
                "ALTER TABLE `it.dot`.`t.2` MODIFY v VARCHAR(3);"
                "INSERT INTO `it.dot`.`t.2` VALUES (4, 't4', 7);"
                "ALTER TABLE `it.dot`.`x.y` MODIFY v VARCHAR(3);"
                "DROP TABLE `it.dot`.`x.y`;"
                "DROP TABLE `it.dot`.d;"
                // renamed into the patterns (re-read), once to stay and once dropped before the copy
                "RENAME TABLE it_dot_out.`k` TO `it.dot`.`k.2`;"
                "INSERT INTO `it.dot`.`k.2` VALUES (2, 'k2');"
                "RENAME TABLE it_dot_out.`m.n` TO `it.dot`.`m.n`;"
                "INSERT INTO `it.dot`.`m.n` VALUES (2, 'm2');"
                "DROP TABLE `it.dot`.`m.n`;"),
            0);
  auto second = RunSluice({"run", "--config", config, "--until-caught-up"}, std::chrono::seconds(60));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  auto third = RunSluice({"run", "--config", config, "--until-caught-up"}, std::chrono::seconds(60));
  ASSERT_EQ(third.exit_code, 0) << third.output;
  EXPECT_EQ(ReplicaTables(spec.sink_path),
            (std::vector<std::string>{"it.dot.k.2", "it.dot.t.2", "it_dot.c.d"}))
      << second.output << third.output;
  EXPECT_EQ(ReplicaRows(spec.sink_path, "it_dot.c.d"), 5);
  EXPECT_EQ(ReplicaRows(spec.sink_path, "it.dot.t.2"), 4);
  EXPECT_EQ(ReplicaRows(spec.sink_path, "it.dot.k.2"), 2);
  ExpectReplicaEqualsSource(tables, spec.sink_path);
  auto cmp = RunSluice({"compare", "--config", config});
  EXPECT_EQ(cmp.exit_code, 0) << cmp.output;

  // The same while a run streams: a new table with dots renamed, re-read and dropped.
  pid_t pid = StartSluice({"run", "--config", config}, dir.File("log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_EQ(RunSqlText("CREATE TABLE `it.dot`.`s.1` (id INT PRIMARY KEY, v VARCHAR(10));"
                       "INSERT INTO `it.dot`.`s.1` VALUES (1, 's1');"
                       "RENAME TABLE `it.dot`.`s.1` TO `it.dot`.`s.2`;"
                       "ALTER TABLE `it.dot`.`s.2` MODIFY v VARCHAR(4);"
                       "INSERT INTO `it.dot`.`s.2` VALUES (2, 's2');"
                       "CREATE TABLE it_dot.`z.z` (id INT PRIMARY KEY); INSERT INTO it_dot.`z.z` VALUES (1);"
                       "DROP TABLE it_dot.`z.z`;"
                       "DROP TABLE `it.dot`.`k.2`;"),
            0);
  const bool matched = WaitForReplicaToMatch(tables, spec.sink_path, /*expected_tables=*/3, std::chrono::seconds(30));
  ::kill(pid, SIGTERM);
  EXPECT_EQ(WaitChild(pid), 0) << ReadFile(dir.File("log"));
  EXPECT_TRUE(matched) << ReadFile(dir.File("log"));
  EXPECT_EQ(ReplicaTables(spec.sink_path), (std::vector<std::string>{"it.dot.s.2", "it.dot.t.2", "it_dot.c.d"}))
      << ReadFile(dir.File("log"));
  ExpectReplicaEqualsSource(tables, spec.sink_path);
}

class SchemaChangeCatchUp : public ::testing::TestWithParam<const char*> {};

// Applied while sluice is stopped: the next run catches up through every statement.
TEST_P(SchemaChangeCatchUp, RowsBeforeAndAfterEachDdlDecodeWithTheirVersion) {
  CreateSchemaChangeSource();
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_sc.*"};
  spec.sink_path = dir.File("replica.db");
  std::string config = WriteConfig(dir, spec);
  SluiceConfigSpec jspec = spec;
  jspec.sink_type = "jsonl";
  jspec.sink_path = dir.File("out.jsonl");
  jspec.server_id = 5402;
  TempDir jdir;
  std::string jconfig = WriteConfig(jdir, jspec);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunSluice({"run", "--config", jconfig, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;

  {
    RowMetadata mode(GetParam());
    ASSERT_EQ(RunSqlText(kFollowed), 0);
  }
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectReplicaEqualsSource({"it_sc.*"}, spec.sink_path);

  // A restart reads nothing again and changes nothing.
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectReplicaEqualsSource({"it_sc.*"}, spec.sink_path);

  // JSON lines: one schema-change record per followed table change, in order with the rows.
  r = RunSluice({"run", "--config", jconfig, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string out = ReadFile(jspec.sink_path);
  size_t before = out.find("\"u\":4294967295");
  size_t alter1 = out.find("\"ddl\":\"ALTER TABLE it_sc.t MODIFY u BIGINT");
  size_t after = out.find("\"u\":5000000000");
  size_t rename = out.find("\"previousId\":\"it_sc.r1\"");
  size_t renamed_row = out.find("after rename");
  ASSERT_NE(before, std::string::npos) << out;
  ASSERT_NE(alter1, std::string::npos) << out;
  ASSERT_NE(after, std::string::npos) << out;
  ASSERT_NE(rename, std::string::npos) << out;
  ASSERT_NE(renamed_row, std::string::npos) << out;
  EXPECT_LT(before, alter1);
  EXPECT_LT(alter1, after);
  EXPECT_LT(rename, renamed_row);
  EXPECT_NE(out.find("\"columns\":[{\"name\":\"id\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"type\":\"DROP\",\"id\":\"it_sc.gone\""), std::string::npos) << out;
  EXPECT_EQ(CountOccurrences(out, "\"tableChanges\""), 9u) << out;  // 4 ALTER t, CREATE born, RENAME, CREATE+DROP+CREATE gone
}

INSTANTIATE_TEST_SUITE_P(Metadata, SchemaChangeCatchUp, ::testing::Values("FULL", "MINIMAL", "NO_LOG"));

// Applied while sluice streams.
TEST(SchemaChange, FollowedWhileStreaming) {
  CreateSchemaChangeSource();
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_sc.*"};
  spec.sink_path = dir.File("replica.db");
  std::string config = WriteConfig(dir, spec);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  pid_t pid = StartSluice({"run", "--config", config}, dir.File("log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(RunSqlText(kFollowed), 0);
  bool equal = WaitForReplicaToMatch({"it_sc.*"}, spec.sink_path, /*expected_tables=*/5);
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitChild(pid, std::chrono::seconds(20)), 0) << ReadFile(dir.File("log"));
  EXPECT_TRUE(equal) << ReadFile(dir.File("log"));
  ExpectReplicaEqualsSource({"it_sc.*"}, spec.sink_path);
}

// A DDL hidden from the binlog (sql_log_bin=0) under NO_LOG metadata: the TABLE_MAP no
// longer fits the recorded definition, and the run stops before writing any shifted value.
TEST(SchemaChange, HiddenDdlStopsInsteadOfShiftingValues) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_sch; CREATE DATABASE it_sch;"
                       "CREATE TABLE it_sch.t (id INT PRIMARY KEY, a INT, b VARCHAR(10));"
                       "INSERT INTO it_sch.t VALUES (1, 1, 'one');"
                       "CREATE TABLE it_sch.w (id INT PRIMARY KEY, a INT, b INT);"
                       "INSERT INTO it_sch.w VALUES (1, 1, 1);"), 0);
  RowMetadata mode("NO_LOG");
  for (const char* table : {"t", "w"}) {
    SCOPED_TRACE(table);
    TempDir dir;
    SluiceConfigSpec spec;
    spec.tables = {std::string("it_sch.") + table};
    spec.sink_path = dir.File("replica.db");
    std::string config = WriteConfig(dir, spec);
    auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // t: a column added in the middle (the row is one longer); w: a type widened within
    // the integer family (same column count, INT -> BIGINT).
    std::string hidden = std::string(table) == "t"
                             ? "ALTER TABLE it_sch.t ADD COLUMN m INT AFTER id; INSERT INTO it_sch.t VALUES (2, 2, 2, 'two');"
                             : "ALTER TABLE it_sch.w MODIFY a BIGINT; INSERT INTO it_sch.w VALUES (2, 5000000000, 2);";
    ASSERT_EQ(RunSqlText("SET SESSION sql_log_bin = 0; " + hidden.substr(0, hidden.find(';') + 1) +
                         " SET SESSION sql_log_bin = 1;" + hidden.substr(hidden.find(';') + 1)),
              0);
    r = RunSluice({"run", "--config", config, "--until-caught-up"});
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find(std::string("it_sch.") + table + " at binlog"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("sql_log_bin"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(std::string("sluice resnapshot --config FILE it_sch.") + table), std::string::npos)
        << "the stop names the repair of this replica\n" << r.output;
    EXPECT_NE(r.output.find(std::string(table) == "t" ? "columns" : "column 2 (`a`)"), std::string::npos)
        << r.output;
    EXPECT_EQ(ReplicaRows(spec.sink_path, std::string("it_sch.") + table), 1) << "row 2 was written";
  }
}

// DDL whose effect on existing rows the replica cannot reproduce re-reads the table from the
// source (snapshot/reread.h), the log naming the statement, the table, the position and why;
// the replica then equals the source (more in online_reread_test.cc).
TEST(SchemaChange, NotExactDdlReReadsTheTableNamingStatementTableAndPosition) {
  struct Case {
    const char* ddl;
    const char* says;
  };
  for (const Case& c : {Case{"ALTER TABLE it_scx.t ADD COLUMN z INT NOT NULL", "implicit default"},
                        Case{"ALTER TABLE it_scx.t MODIFY a TINYINT", "not a widening"},
                        Case{"ALTER TABLE it_scx.t MODIFY s VARCHAR(5) NOT NULL", "non-strict sql_mode"},
                        Case{"ALTER TABLE it_scx.t MODIFY p DECIMAL(6,0)", "scale changes"},
                        Case{"ALTER TABLE it_scx.t ADD COLUMN ts TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP",
                             "existing rows take the value"},
                        Case{"ALTER TABLE it_scx.t CONVERT TO CHARACTER SET latin1", "converts the stored text"}}) {
    SCOPED_TRACE(c.ddl);
    ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_scx; CREATE DATABASE it_scx; CREATE DATABASE IF NOT EXISTS it_other;"
                         "DROP TABLE IF EXISTS it_other.t;"
                         "CREATE TABLE it_scx.t (id INT PRIMARY KEY, a INT, p DECIMAL(6,2), s VARCHAR(5)) "
                         "DEFAULT CHARSET=utf8mb4;"
                         "INSERT INTO it_scx.t VALUES (1, 1000, 3.75, 'ñ');"
                         "CREATE TABLE it_scx.keep (id INT PRIMARY KEY);"), 0);
    TempDir dir;
    SluiceConfigSpec spec;
    spec.tables = {"it_scx.*"};
    spec.sink_path = dir.File("replica.db");
    std::string config = WriteConfig(dir, spec);
    auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_EQ(RunSqlText("SET SESSION sql_mode = ''; " + std::string(c.ddl) + ";"), 0);
    r = RunSluice({"run", "--config", config, "--until-caught-up"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("it_scx.t"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(std::string(c.ddl).substr(0, 20)), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(" offset "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("re-reading the table from the source"), std::string::npos) << r.output;
    ExpectReplicaEqualsSource({"it_scx.*"}, spec.sink_path);
  }
  (void)RunSqlText("DROP DATABASE IF EXISTS it_other;");
}

// A new user's probe (F1, F2, F5, F8): DDL whose effect on the existing rows sluice cannot state
// exactly was followed in place, so the replica kept the literal as written (SET 'c,a' for the
// server's 'a,c', YEAR 99 for 1999, 0x4142 for 'AB', a TIMESTAMP 5 hours off under a +05:00
// session, ...), NULL where explicit_defaults_for_timestamp=OFF filled in the current time, the
// duplicates ALTER IGNORE deleted, the rows of a table moved to BLACKHOLE; or stopped with
// "Corruption: cannot parse '0x41'" on INT DEFAULT 0x41. Streamed on tables with rows, each is a
// re-read now, and the replica equals the source value by value.
TEST(SchemaChange, DdlWhoseEffectOnExistingRowsSluiceCannotStateIsReRead) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_sdl; CREATE DATABASE it_sdl;"
                       "CREATE TABLE it_sdl.t (id INT PRIMARY KEY, v INT) DEFAULT CHARSET=utf8mb4;"
                       "INSERT INTO it_sdl.t VALUES (1, 1), (2, 2);"
                       "CREATE TABLE it_sdl.u (id INT PRIMARY KEY, a INT); INSERT INTO it_sdl.u VALUES (1,1),(2,1),(3,3);"
                       "CREATE TABLE it_sdl.n (id INT PRIMARY KEY, a INT, s VARCHAR(5));"
                       "INSERT INTO it_sdl.n VALUES (1, NULL, NULL), (2, 2, 'x');"
                       "CREATE TABLE it_sdl.bh (id INT PRIMARY KEY, a INT); INSERT INTO it_sdl.bh VALUES (1,1),(2,2);"),
            0);
  (void)RunSqlText("INSTALL SONAME 'ha_blackhole';");
  const bool blackhole = RunSqlText("CREATE TABLE it_sdl.bh_probe (id INT) ENGINE=BLACKHOLE; DROP TABLE it_sdl.bh_probe;") == 0;
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_sdl.*"};
  spec.sink_path = dir.File("replica.db");
  std::string config = WriteConfig(dir, spec);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  pid_t pid = StartSluice({"run", "--config", config}, dir.File("log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::string sql =
      "ALTER TABLE it_sdl.t ADD COLUMN c_set SET('a','b','c') DEFAULT 'c,a';"
      "ALTER TABLE it_sdl.t ADD COLUMN c_enum ENUM('x','y') DEFAULT 'Y';"
      "ALTER TABLE it_sdl.t ADD COLUMN c_dt DATETIME DEFAULT '2020-01-01';"
      "ALTER TABLE it_sdl.t ADD COLUMN c_dt6 DATETIME(6) DEFAULT '2020-01-01 01:02:03.5';"
      "ALTER TABLE it_sdl.t ADD COLUMN c_time TIME(2) DEFAULT '1:2';"
      "ALTER TABLE it_sdl.t ADD COLUMN c_year YEAR DEFAULT 99;"
      "ALTER TABLE it_sdl.t ADD COLUMN c_date DATE DEFAULT 20200101;"
      "ALTER TABLE it_sdl.t ADD COLUMN c_hex VARCHAR(5) DEFAULT 0x4142;"
      "ALTER TABLE it_sdl.t ADD COLUMN c_bitlit VARCHAR(5) DEFAULT b'1000001';"
      "ALTER TABLE it_sdl.t ADD COLUMN c_numstr VARCHAR(10) DEFAULT 1e3;"
      "ALTER TABLE it_sdl.t ADD COLUMN c_uuid UUID DEFAULT '6CCD780C-BABA-1026-9564-5B8C656024DB';"
      "ALTER TABLE it_sdl.t ADD COLUMN c_inet6 INET6 DEFAULT '::FFFF:1.2.3.4';"
      "ALTER TABLE it_sdl.t ADD COLUMN c_u64 BIGINT UNSIGNED DEFAULT 18446744073709551615;"
      "ALTER TABLE it_sdl.t ADD COLUMN c_float FLOAT DEFAULT 0.1;"
      "ALTER TABLE it_sdl.t ADD COLUMN c_i1 INT DEFAULT 0x41;"
      "ALTER TABLE it_sdl.t ADD COLUMN c_i2 INT DEFAULT 1.6;"
      "ALTER TABLE it_sdl.t ADD COLUMN c_i3 INT DEFAULT 1e1;"
      "ALTER TABLE it_sdl.t ADD COLUMN c_bit BIT(8) DEFAULT 'A';"
      "ALTER TABLE it_sdl.t ADD COLUMN c_l1 VARCHAR(10) DEFAULT _latin1 0xE9;"
      "SET SESSION time_zone = '+05:00';"
      "ALTER TABLE it_sdl.t ADD COLUMN c_ts TIMESTAMP NULL DEFAULT '2020-01-01 00:00:00';"
      "SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_BACKSLASH_ESCAPES');"
      "ALTER TABLE it_sdl.t ADD COLUMN c_nbe VARCHAR(10) DEFAULT 'a\\nb';"
      "SET SESSION sql_mode = DEFAULT;"
      "SET SESSION explicit_defaults_for_timestamp = 0;"
      "ALTER TABLE it_sdl.t ADD COLUMN c_its TIMESTAMP;"
      "SET SESSION explicit_defaults_for_timestamp = DEFAULT;"
      "INSERT INTO it_sdl.t (id, v) VALUES (3, 3);"
      "ALTER IGNORE TABLE it_sdl.u ADD UNIQUE KEY ua (a);"
      "ALTER IGNORE TABLE it_sdl.n MODIFY a INT NOT NULL, MODIFY s VARCHAR(5) NOT NULL;";
  if (blackhole) sql += "ALTER TABLE it_sdl.bh ENGINE=BLACKHOLE;";
  ASSERT_EQ(RunSqlText(sql), 0);
  const bool matched = WaitForReplicaToMatch({"it_sdl.*"}, spec.sink_path, /*expected_tables=*/4,
                                             std::chrono::seconds(120));
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitChild(pid, std::chrono::seconds(30)), 0) << ReadFile(dir.File("log"));
  EXPECT_TRUE(matched) << ReadFile(dir.File("log"));
  const std::string log = ReadFile(dir.File("log"));
  EXPECT_EQ(log.find("Corruption"), std::string::npos) << log;
  // DDL on `t` while it is copied is in the copy and skipped: only the first one on a table says why.
  for (const char* says : {"re-reading the table from the source", "ALTER IGNORE"})
    EXPECT_NE(log.find(says), std::string::npos) << says << "\n" << log;
  if (blackhole) {
    EXPECT_NE(log.find("ENGINE=BLACKHOLE"), std::string::npos) << log;
  }
  ExpectReplicaEqualsSource({"it_sdl.*"}, spec.sink_path);
}

// The same statements while sluice is stopped: the next run catches up through them (re-reading
// each table once), exits 0 and the replica equals the source.
TEST(SchemaChange, DdlWhoseEffectOnExistingRowsSluiceCannotStateIsReReadWhenCaughtUp) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_sdc; CREATE DATABASE it_sdc;"
                       "CREATE TABLE it_sdc.t (id INT PRIMARY KEY, v INT) DEFAULT CHARSET=utf8mb4;"
                       "INSERT INTO it_sdc.t VALUES (1, 1), (2, 2);"),
            0);
  for (const char* ddl : {"ALTER TABLE it_sdc.t ADD COLUMN c INT DEFAULT 0x41",
                          "ALTER TABLE it_sdc.t ADD COLUMN c BIT(8) DEFAULT 'A'",
                          "ALTER TABLE it_sdc.t ADD COLUMN c SET('a','b','c') DEFAULT 'c,a'",
                          "ALTER TABLE it_sdc.t ADD COLUMN c YEAR DEFAULT 99",
                          "ALTER TABLE it_sdc.t ALTER COLUMN v SET DEFAULT 1e1",
                          "SET SESSION explicit_defaults_for_timestamp = 0; ALTER TABLE it_sdc.t ADD COLUMN c TIMESTAMP",
                          "ALTER TABLE it_sdc.t ADD COLUMN c DATETIME DEFAULT NOW()"}) {
    SCOPED_TRACE(ddl);
    ASSERT_EQ(RunSqlText("DROP TABLE IF EXISTS it_sdc.t; CREATE TABLE it_sdc.t (id INT PRIMARY KEY, v INT);"
                         "INSERT INTO it_sdc.t VALUES (1, 1), (2, 2);"),
              0);
    TempDir dir;
    SluiceConfigSpec spec;
    spec.tables = {"it_sdc.*"};
    spec.sink_path = dir.File("replica.db");
    std::string config = WriteConfig(dir, spec);
    auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_EQ(RunSqlText(std::string(ddl) + "; INSERT INTO it_sdc.t (id, v) VALUES (3, 3);"), 0);
    r = RunSluice({"run", "--config", config, "--until-caught-up"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find("Corruption"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("re-reading the table from the source"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(" offset "), std::string::npos) << r.output;
    ExpectReplicaEqualsSource({"it_sdc.*"}, spec.sink_path);
  }
}

// The common defaults are still followed in place: no re-read, and the existing rows hold what
// the server stored.
TEST(SchemaChange, DefaultsStoredAsWrittenAreFollowedInPlace) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_sdp; CREATE DATABASE it_sdp;"
                       "CREATE TABLE it_sdp.t (id INT PRIMARY KEY, v INT) DEFAULT CHARSET=utf8mb4;"
                       "INSERT INTO it_sdp.t VALUES (1, 1), (2, 2);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_sdp.*"};
  spec.sink_path = dir.File("replica.db");
  std::string config = WriteConfig(dir, spec);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("ALTER TABLE it_sdp.t ADD COLUMN c INT DEFAULT 0;"
                       "ALTER TABLE it_sdp.t ADD COLUMN s VARCHAR(10) DEFAULT 'new';"
                       "ALTER TABLE it_sdp.t ADD COLUMN n INT NULL;"
                       "ALTER TABLE it_sdp.t ADD COLUMN d DATE DEFAULT '2020-01-01';"
                       "ALTER TABLE it_sdp.t ADD COLUMN e ENUM('x','y') DEFAULT 'y';"
                       "ALTER TABLE it_sdp.t ADD COLUMN p DECIMAL(6,2) DEFAULT 1.5;"
                       "ALTER TABLE it_sdp.t ADD COLUMN dt DATETIME DEFAULT '2020-01-01 10:11:12';"
                       "ALTER TABLE it_sdp.t ADD COLUMN ts TIMESTAMP NULL;"
                       "ALTER TABLE it_sdp.t ALTER COLUMN v SET DEFAULT 5, ENGINE=InnoDB;"
                       "INSERT INTO it_sdp.t (id, v) VALUES (3, 3);"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("re-read"), std::string::npos) << r.output;
  ExpectReplicaEqualsSource({"it_sdp.*"}, spec.sink_path);
}

// Runs `sql` at the source while a run streams into `sink_path` (the replica must come to match
// the source's `pattern` tables, `expected_tables` of them, and the run stop cleanly on SIGTERM),
// or, with `streaming` false, while sluice is stopped (the next --until-caught-up run must exit 0).
void ApplyWhileStreamingOrStopped(bool streaming, const std::string& sql, const std::string& config,
                                  const TempDir& dir, const std::string& pattern, const std::string& sink_path,
                                  int expected_tables, int settle_ms) {
  if (streaming) {
    pid_t pid = StartSluice({"run", "--config", config}, dir.File("log"));
    std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
    ASSERT_EQ(RunSqlText(sql), 0);
    const bool equal = WaitForReplicaToMatch({pattern}, sink_path, expected_tables);
    kill(pid, SIGTERM);
    EXPECT_EQ(WaitChild(pid, std::chrono::seconds(20)), 0) << ReadFile(dir.File("log"));
    EXPECT_TRUE(equal) << ReadFile(dir.File("log"));
  } else {
    ASSERT_EQ(RunSqlText(sql), 0);
    auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
}

// Partition clauses that remove or move rows without row events (a new user's probe: the
// replica kept every row of a dropped or truncated partition, and the exchanged rows of both
// tables): the tables are copied again, the other table of EXCHANGE/CONVERT included, while
// streaming and when the statements were made while sluice was stopped.
TEST(SchemaChange, PartitionsDroppedTruncatedExchangedOrConvertedAreCopiedAgain) {
  for (bool streaming : {false, true}) {
    SCOPED_TRACE(streaming ? "while streaming" : "while stopped");
    ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_part; CREATE DATABASE it_part; USE it_part;"
                         "CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(20)) PARTITION BY RANGE (id)"
                         " (PARTITION p0 VALUES LESS THAN (100), PARTITION p1 VALUES LESS THAN (200),"
                         "  PARTITION p2 VALUES LESS THAN (MAXVALUE));"
                         "INSERT INTO p SELECT seq, CONCAT('p', seq) FROM seq_1_to_300;"
                         "CREATE TABLE stage (id INT PRIMARY KEY, v VARCHAR(20));"
                         "INSERT INTO stage SELECT seq, CONCAT('stage', seq) FROM seq_100_to_110;"
                         "CREATE TABLE q (id INT PRIMARY KEY, v VARCHAR(20)) PARTITION BY RANGE (id)"
                         " (PARTITION q0 VALUES LESS THAN (100), PARTITION q1 VALUES LESS THAN (MAXVALUE));"
                         "INSERT INTO q SELECT seq, CONCAT('q', seq) FROM seq_1_to_150;"),
              0);
    TempDir dir;
    SluiceConfigSpec spec;
    spec.tables = {"it_part.*"};
    spec.sink_path = dir.File("replica.db");
    const std::string config = WriteConfig(dir, spec);
    auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string ddl =
        "USE it_part; ALTER TABLE p DROP PARTITION p0; ALTER TABLE p TRUNCATE PARTITION p2;"
        "ALTER TABLE p EXCHANGE PARTITION p1 WITH TABLE stage; UPDATE p SET v = 'after' WHERE id = 105;"
        "ALTER TABLE q CONVERT PARTITION q0 TO TABLE q_arch; UPDATE q_arch SET v = 'moved' WHERE id = 5;";
    ApplyWhileStreamingOrStopped(streaming, ddl, config, dir, "it_part.*", spec.sink_path, /*expected_tables=*/4,
                                 /*settle_ms=*/500);
    if (streaming) {  // and the run after the stop catches up cleanly
      r = RunSluice({"run", "--config", config, "--until-caught-up"});
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
    ExpectReplicaEqualsSource({"it_part.*"}, spec.sink_path);
  }
  (void)RunSqlText("DROP DATABASE IF EXISTS it_part;");
}

// CREATE TABLE ... SELECT: MariaDB logs it as a CREATE TABLE of the columns and the rows, in
// one transaction. The table is copied from the source (a new user's probe: it was neither
// recorded nor copied, the next ALTER on it stopped the run, and under NO_LOG the rows of a
// CTAS read after a later re-CREATE landed under the wrong column names), while streaming and
// when read after the fact, under FULL and NO_LOG metadata.
TEST(SchemaChange, CreateTableSelectIsCopiedFromTheSource) {
  for (const char* metadata : {"FULL", "NO_LOG"}) {
    SCOPED_TRACE(metadata);
    RowMetadata mode(metadata);
    ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_ctas; CREATE DATABASE it_ctas; USE it_ctas;"
                         "CREATE TABLE base (id INT PRIMARY KEY, p VARCHAR(40), q VARCHAR(40));"
                         "INSERT INTO base SELECT seq, CONCAT('p', seq), CONCAT('q', seq) FROM seq_1_to_100;"),
              0);
    TempDir dir;
    SluiceConfigSpec spec;
    spec.tables = {"it_ctas.*"};
    spec.sink_path = dir.File("replica.db");
    const std::string config = WriteConfig(dir, spec);
    auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    // Read after the fact: f is created from a query, dropped, and created again with its
    // columns swapped before sluice reads the binlog.
    ASSERT_EQ(RunSqlText("USE it_ctas; CREATE TABLE f AS SELECT id, p, q FROM base WHERE id <= 5; DROP TABLE f;"
                         "CREATE TABLE f (id INT PRIMARY KEY, q VARCHAR(40), p VARCHAR(40));"
                         "INSERT INTO f VALUES (1, 'Q-new', 'P-new');"
                         "CREATE TABLE e AS SELECT id, p FROM base WHERE id <= 20;"
                         "ALTER TABLE e ADD COLUMN z INT DEFAULT 3 FIRST; UPDATE e SET z = 4 WHERE id = 2;"),
              0);
    r = RunSluice({"run", "--config", config, "--until-caught-up"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("creates it_ctas.e from a query: copying it from the source"), std::string::npos)
        << r.output;
    ExpectReplicaEqualsSource({"it_ctas.*"}, spec.sink_path);
    // While streaming.
    pid_t pid = StartSluice({"run", "--config", config}, dir.File("log"));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ASSERT_EQ(RunSqlText("USE it_ctas; CREATE TABLE g AS SELECT id, q FROM base WHERE id > 90;"
                         "ALTER TABLE g ADD PRIMARY KEY (id); UPDATE g SET q = 'after' WHERE id = 95;"),
              0);
    const bool equal = WaitForReplicaToMatch({"it_ctas.*"}, spec.sink_path, /*expected_tables=*/4);
    kill(pid, SIGTERM);
    EXPECT_EQ(WaitChild(pid, std::chrono::seconds(20)), 0) << ReadFile(dir.File("log"));
    EXPECT_TRUE(equal) << ReadFile(dir.File("log"));
    ExpectReplicaEqualsSource({"it_ctas.*"}, spec.sink_path);
  }
  (void)RunSqlText("DROP DATABASE IF EXISTS it_ctas;");
}

// DROP DATABASE drops its captured tables (a new user's probe: they were kept, and the same
// database created again with a table of the same name stopped the run: "the recorded
// definition says the table already exists").
TEST(SchemaChange, DropDatabaseDropsItsTables) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_dropdb; CREATE DATABASE it_dropdb; USE it_dropdb;"
                       "CREATE TABLE a (id INT PRIMARY KEY, v INT); INSERT INTO a VALUES (1, 1);"
                       "CREATE TABLE b (id INT PRIMARY KEY); INSERT INTO b VALUES (1);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_dropdb.*"};
  spec.sink_path = dir.File("replica.db");
  const std::string config = WriteConfig(dir, spec);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("DROP DATABASE it_dropdb; CREATE DATABASE it_dropdb; USE it_dropdb;"
                       "CREATE TABLE a (id INT PRIMARY KEY, w VARCHAR(10)); INSERT INTO a VALUES (2, 'x');"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectReplicaEqualsSource({"it_dropdb.*"}, spec.sink_path);
  (void)RunSqlText("DROP DATABASE IF EXISTS it_dropdb;");
}

// Two columns swapped by one statement (MariaDB resolves each clause against the table before
// it): followed, each value under its new name (a new user's probe: the run stopped, "the
// recorded definition already has `q`").
TEST(SchemaChange, ColumnsSwappedInOneStatementAreFollowed) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_swap; CREATE DATABASE it_swap; USE it_swap;"
                       "CREATE TABLE t (id INT PRIMARY KEY, p VARCHAR(40), q VARCHAR(40));"
                       "INSERT INTO t VALUES (1, 'p1', 'q1'), (2, 'p2', 'q2');"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_swap.*"};
  spec.sink_path = dir.File("replica.db");
  const std::string config = WriteConfig(dir, spec);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("USE it_swap; ALTER TABLE t CHANGE p q VARCHAR(40), CHANGE q p VARCHAR(40);"
                       "INSERT INTO t VALUES (3, 'new-q', 'new-p'); UPDATE t SET p = 'p-of-1' WHERE id = 1;"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectReplicaEqualsSource({"it_swap.*"}, spec.sink_path);
  (void)RunSqlText("DROP DATABASE IF EXISTS it_swap;");
}

// FIRST/AFTER in an ALTER that also renames, drops or moves columns name the columns the
// statement builds (a new user's probe: sluice resolved them against the old names, and under
// MINIMAL metadata later rows went into the wrong columns with exit 0; under FULL the run
// stopped). Each column holds values of its own, so a value in a wrong column shows; run
// while streaming and caught up after a stop, under MINIMAL and FULL metadata.
TEST(SchemaChange, PositionsInOneStatementNameTheColumnsItBuilds) {
  const char* kAlters =
      "ALTER TABLE it_pos.u MODIFY d INT AFTER a, CHANGE a b INT, CHANGE b a INT;"
      "ALTER TABLE it_pos.t ADD COLUMN b2 INT DEFAULT 5 AFTER b, DROP COLUMN b, RENAME COLUMN c TO b;"
      "ALTER TABLE it_pos.v ADD COLUMN n INT AFTER a, CHANGE a b INT, CHANGE b a INT;"
      "ALTER TABLE it_pos.w ADD COLUMN n INT AFTER a, DROP COLUMN a, RENAME COLUMN b TO a, MODIFY d INT FIRST;"
      "INSERT INTO it_pos.u (id, a, b, c, d) VALUES (2, 21, 22, 23, 24);"
      "INSERT INTO it_pos.t (id, a, b, b2, d) VALUES (2, 21, 22, 999, 24); UPDATE it_pos.t SET d = 15 WHERE id = 1;"
      "INSERT INTO it_pos.v (id, a, b, c, d, n) VALUES (2, 21, 22, 23, 24, 25);"
      "INSERT INTO it_pos.w (id, a, c, d, n) VALUES (2, 21, 23, 24, 25); UPDATE it_pos.w SET c = 16 WHERE id = 1;";
  for (const char* metadata : {"MINIMAL", "FULL"}) {
    for (bool streaming : {false, true}) {
      SCOPED_TRACE(std::string(metadata) + (streaming ? " streaming" : " caught up after a stop"));
      RowMetadata mode(metadata);
      std::string create = "DROP DATABASE IF EXISTS it_pos; CREATE DATABASE it_pos;";
      for (const char* t : {"t", "u", "v", "w"})
        create += std::string("CREATE TABLE it_pos.") + t + " (id INT PRIMARY KEY, a INT, b INT, c INT, d INT);" +
                  "INSERT INTO it_pos." + t + " VALUES (1, 11, 12, 13, 14);";
      ASSERT_EQ(RunSqlText(create), 0);
      TempDir dir;
      SluiceConfigSpec spec;
      spec.tables = {"it_pos.*"};
      spec.sink_path = dir.File("replica.db");
      const std::string config = WriteConfig(dir, spec);
      auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
      ASSERT_EQ(r.exit_code, 0) << r.output;
      ApplyWhileStreamingOrStopped(streaming, kAlters, config, dir, "it_pos.*", spec.sink_path,
                                   /*expected_tables=*/4, /*settle_ms=*/300);
      ExpectReplicaEqualsSource({"it_pos.*"}, spec.sink_path);
    }
  }
  (void)RunSqlText("DROP DATABASE IF EXISTS it_pos;");
}

// DDL written under sql_mode ANSI_QUOTES names tables and columns with "..." (a new user's
// probe: TRUNCATE, TRUNCATE PARTITION and a RENAME swap were lost with exit 0, and a column
// move shifted every later row under MINIMAL metadata). The QUERY event carries the session's
// sql_mode; under MINIMAL and FULL metadata the replica equals the source. A statement-logged
// UPDATE under ANSI_QUOTES stops the run naming the table (it was passed silently).
TEST(SchemaChange, AnsiQuotesDdlIsFollowed) {
  for (const char* metadata : {"MINIMAL", "FULL"}) {
    SCOPED_TRACE(metadata);
    RowMetadata mode(metadata);
    ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_ansi; CREATE DATABASE it_ansi;"
                         "CREATE TABLE it_ansi.t (id INT PRIMARY KEY); INSERT INTO it_ansi.t VALUES (1), (2), (3);"
                         "CREATE TABLE it_ansi.p (id INT PRIMARY KEY) PARTITION BY RANGE (id) "
                         "(PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN MAXVALUE);"
                         "INSERT INTO it_ansi.p VALUES (1), (20);"
                         "CREATE TABLE it_ansi.x (id INT PRIMARY KEY, v VARCHAR(5)); INSERT INTO it_ansi.x VALUES (1, 'x');"
                         "CREATE TABLE it_ansi.y (id INT PRIMARY KEY, v VARCHAR(5)); INSERT INTO it_ansi.y VALUES (2, 'y');"
                         "CREATE TABLE it_ansi.m (id INT PRIMARY KEY, a INT, b INT, c INT);"
                         "INSERT INTO it_ansi.m VALUES (1, 11, 12, 13);"),
              0);
    TempDir dir;
    SluiceConfigSpec spec;
    spec.tables = {"it_ansi.*"};
    spec.sink_path = dir.File("replica.db");
    const std::string config = WriteConfig(dir, spec);
    auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_EQ(RunSqlText("SET SESSION sql_mode = 'ANSI_QUOTES';"
                         "TRUNCATE TABLE \"it_ansi\".\"t\"; INSERT INTO it_ansi.t VALUES (4);"
                         "ALTER TABLE \"it_ansi\".\"p\" TRUNCATE PARTITION p0;"
                         "RENAME TABLE \"it_ansi\".\"x\" TO \"it_ansi\".\"tmp\", \"it_ansi\".\"y\" TO \"it_ansi\".\"x\", "
                         "\"it_ansi\".\"tmp\" TO \"it_ansi\".\"y\";"
                         "ALTER TABLE \"it_ansi\".\"m\" MODIFY \"a\" INT AFTER \"c\";"
                         "INSERT INTO it_ansi.m (id, a, b, c) VALUES (2, 21, 22, 23);"
                         "SET SESSION sql_mode = 'ANSI'; ALTER TABLE \"it_ansi\".\"m\" CHANGE \"b\" \"bb\" INT FIRST;"
                         "INSERT INTO it_ansi.m (id, a, bb, c) VALUES (3, 31, 32, 33);"),
              0);
    r = RunSluice({"run", "--config", config, "--until-caught-up"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    ExpectReplicaEqualsSource({"it_ansi.*"}, spec.sink_path);

    ASSERT_EQ(RunSqlText("SET SESSION binlog_format = 'STATEMENT', sql_mode = 'ANSI_QUOTES';"
                         "UPDATE \"it_ansi\".\"m\" SET \"c\" = 100 WHERE \"id\" = 1;"),
              0);
    r = RunSluice({"run", "--config", config, "--until-caught-up"});
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find("changes selected table(s) it_ansi.m and was logged as a statement"), std::string::npos)
        << r.output;
  }
  (void)RunSqlText("DROP DATABASE IF EXISTS it_ansi;");
}

// A statement sluice does not understand stops the run, and the remedy the stop names,
// `sluice resnapshot` of the table, gets the pipeline going again: the copy is taken after the
// statement, so the stream passes it for that table (a new user's probe: every run after the
// re-read stopped on the same statement again). The other table's rows keep flowing.
TEST(SchemaChange, ResnapshotGetsPastAStatementSluiceDoesNotUnderstand) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_rs; CREATE DATABASE it_rs;"
                       "CREATE TABLE it_rs.t (id INT PRIMARY KEY); INSERT INTO it_rs.t VALUES (1);"
                       "CREATE TABLE it_rs.u (id INT PRIMARY KEY); INSERT INTO it_rs.u VALUES (1);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_rs.*"};
  spec.sink_path = dir.File("replica.db");
  const std::string config = WriteConfig(dir, spec);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // REF_SYSTEM_ID: a MariaDB geometry column option the parser does not know.
  ASSERT_EQ(RunSqlText("ALTER TABLE it_rs.t ADD COLUMN g POINT REF_SYSTEM_ID=4326, ADD COLUMN c INT DEFAULT 3;"
                       "INSERT INTO it_rs.t (id, c) VALUES (2, 5); INSERT INTO it_rs.u VALUES (2);"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("sluice does not understand"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("`sluice resnapshot --config FILE it_rs.t`"), std::string::npos) << r.output;
  r = RunSluice({"resnapshot", "--config", config, "it_rs.t"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("INSERT INTO it_rs.t (id, c) VALUES (3, 6); INSERT INTO it_rs.u VALUES (3);"), 0);
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE(run);
    r = RunSluice({"run", "--config", config, "--until-caught-up"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    if (run == 0) {
      EXPECT_NE(r.output.find("it_rs.t was copied after it: skipped"), std::string::npos) << r.output;
    }
    ExpectReplicaEqualsSource({"it_rs.*"}, spec.sink_path);
  }
  ASSERT_EQ(RunSqlText("ALTER TABLE it_rs.t ADD COLUMN d INT DEFAULT 4; INSERT INTO it_rs.t (id, c, d) VALUES (4, 7, 8);"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  ExpectReplicaEqualsSource({"it_rs.*"}, spec.sink_path);
  (void)RunSqlText("DROP DATABASE IF EXISTS it_rs;");
}

// MariaDB SEQUENCEs matched by a pattern are left out of capture, like the snapshot and
// compare leave them out (a new user's probe: the stream captured one as a keyless table that
// grew a row per SETVAL, while compare skipped it and said OK). One made before the run, one
// made while streaming by CREATE SEQUENCE and one by CREATE TABLE ... SEQUENCE=1; the log
// says each is left out; the tables beside them are followed.
TEST(SchemaChange, SequencesAreLeftOut) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_seq; CREATE DATABASE it_seq;"
                       "CREATE TABLE it_seq.t (id INT PRIMARY KEY); INSERT INTO it_seq.t VALUES (1);"
                       "CREATE SEQUENCE it_seq.s START WITH 10;"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_seq.*"};
  spec.sink_path = dir.File("replica.db");
  const std::string config = WriteConfig(dir, spec);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("SELECT SETVAL(it_seq.s, 100); SELECT NEXTVAL(it_seq.s); ALTER SEQUENCE it_seq.s RESTART WITH 7;"
                       "CREATE SEQUENCE it_seq.s2; SELECT NEXTVAL(it_seq.s2); SELECT SETVAL(it_seq.s2, 50);"
                       "CREATE TABLE it_seq.s3 (next_not_cached_value BIGINT NOT NULL, minimum_value BIGINT NOT NULL, "
                       "maximum_value BIGINT NOT NULL, start_value BIGINT NOT NULL, increment BIGINT NOT NULL, "
                       "cache_size BIGINT UNSIGNED NOT NULL, cycle_option TINYINT UNSIGNED NOT NULL, "
                       "cycle_count BIGINT NOT NULL) SEQUENCE=1; SELECT NEXTVAL(it_seq.s3); SELECT SETVAL(it_seq.s3, 9);"
                       "INSERT INTO it_seq.t VALUES (2);"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* seq : {"it_seq.s is a SEQUENCE", "it_seq.s2 is a SEQUENCE", "creates a SEQUENCE"})
    EXPECT_NE(r.output.find(seq), std::string::npos) << seq << "\n" << r.output;
  EXPECT_EQ(ReplicaTables(spec.sink_path), std::vector<std::string>{"it_seq.t"});
  ExpectReplicaEqualsSource({"it_seq.*"}, spec.sink_path);
  r = RunSluice({"compare", "--config", config});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 of 1 tables"), std::string::npos) << r.output;
  (void)RunSqlText("DROP DATABASE IF EXISTS it_seq;");
}

// Renames through an intermediate name (a chain, a swap through tmp) leave no empty table
// of that name in the replica (a new user's probe: the sink prepared every name the statement
// went through, and `b2` and `tmp` came back empty).
TEST(SchemaChange, RenamesThroughAnIntermediateNameLeaveNoTableOfIt) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_chain; CREATE DATABASE it_chain; USE it_chain;"
                       "CREATE TABLE b (id INT PRIMARY KEY, v INT); INSERT INTO b VALUES (1, 1), (2, 2);"
                       "CREATE TABLE x (id INT PRIMARY KEY); INSERT INTO x VALUES (7);"
                       "CREATE TABLE y (id INT PRIMARY KEY, w INT); INSERT INTO y VALUES (8, 8);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_chain.*"};
  spec.sink_path = dir.File("replica.db");
  const std::string config = WriteConfig(dir, spec);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("USE it_chain; RENAME TABLE b TO b2, b2 TO b3; INSERT INTO b3 VALUES (3, 3);"
                       "RENAME TABLE x TO tmp, y TO x, tmp TO y; INSERT INTO x VALUES (9, 9);"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectReplicaEqualsSource({"it_chain.*"}, spec.sink_path);
  EXPECT_EQ(ReplicaTables(spec.sink_path), (std::vector<std::string>{"it_chain.b3", "it_chain.x", "it_chain.y"}));
  (void)RunSqlText("DROP DATABASE IF EXISTS it_chain;");
}

// Captured tables named like the sink's scratch tables of old (`_sluice_rebuild`,
// `_sluice_old`) survive the rebuild of another table of their database (a new user's probe:
// they vanished from the replica, and the run stopped at their next row).
TEST(SchemaChange, TablesNamedLikeScratchTablesSurviveARebuild) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_rsv; CREATE DATABASE it_rsv; USE it_rsv;"
                       "CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT); INSERT INTO t VALUES (1, 1, 1);"
                       "CREATE TABLE _sluice_old (id INT PRIMARY KEY, keep VARCHAR(20));"
                       "INSERT INTO _sluice_old VALUES (1, 'precious'), (2, 'data');"
                       "CREATE TABLE _sluice_rebuild (id INT PRIMARY KEY, keep VARCHAR(20));"
                       "INSERT INTO _sluice_rebuild VALUES (1, 'rb');"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_rsv.*"};
  spec.sink_path = dir.File("replica.db");
  const std::string config = WriteConfig(dir, spec);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("USE it_rsv; ALTER TABLE t DROP COLUMN a; INSERT INTO _sluice_old VALUES (3, 'more');"
                       "INSERT INTO _sluice_rebuild VALUES (2, 'rb2');"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectReplicaEqualsSource({"it_rsv.*"}, spec.sink_path);
  (void)RunSqlText("DROP DATABASE IF EXISTS it_rsv;");
}

// Every value of the first column `sql` returns from an SQLite replica, joined by ','.
std::string ReplicaColumn(const std::string& path, const std::string& sql) {
  std::string out;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK)
      while (sqlite3_step(s) == SQLITE_ROW) {
        const unsigned char* v = sqlite3_column_text(s, 0);
        out += (out.empty() ? "" : ",") + std::string(v ? reinterpret_cast<const char*>(v) : "NULL");
      }
    sqlite3_finalize(s);
  }
  sqlite3_close_v2(db);
  return out;
}

// A table created while streaming whose SQLite name differs from a captured table's only in
// case (`Item` beside `ITEM`; SQLite names ignore case) replaced that table in the replica:
// the CREATE dropped "it_sc_case.Item" with its rows, and the run exited 0 (probe7 F3). The
// start refuses such a pair; a run streaming when ITEM comes now stops (exit 1, as Kafka and
// NATS do for a table created onto another's topic) before anything of ITEM is applied,
// naming both source tables, the SQLite table and the remedy. The next run refuses at start (both are
// there), and leaving ITEM out (source.exclude) gets past it, Item's rows intact. The same
// for a table renamed onto the name.
TEST(SchemaChange, ATableCreatedOrRenamedOntoACapturedTablesSqliteNameStopsTheRun) {
  for (const std::string how : {"create", "rename"}) {
    SCOPED_TRACE(how);
    ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_sc_case; CREATE DATABASE it_sc_case;"
                         "CREATE TABLE it_sc_case.`Item` (id INT PRIMARY KEY, v VARCHAR(10));"
                         "INSERT INTO it_sc_case.`Item` VALUES (1, 'keep-me'), (2, 'keep-me');"
                         "CREATE TABLE it_sc_case.other (id INT PRIMARY KEY, v VARCHAR(10));"),
              0);
    TempDir dir;
    SluiceConfigSpec spec;
    spec.tables = {"it_sc_case.*"};
    spec.sink_path = dir.File("replica.db");
    std::string config = WriteConfig(dir, spec);
    // The run streams when the table comes (the start would see it and refuse the pair).
    const std::string log = dir.File("run.log");
    const pid_t pid = StartSluice({"run", "--config", config}, log);
    ASSERT_TRUE(WaitForLog(log, "streaming from", pid, std::chrono::seconds(60))) << ReadFile(log);
    ASSERT_EQ(RunSqlText(how == "create"
                             ? "CREATE TABLE it_sc_case.`ITEM` (id INT PRIMARY KEY, v VARCHAR(10));"
                               "INSERT INTO it_sc_case.`ITEM` VALUES (9, 'other');"
                             : "INSERT INTO it_sc_case.other VALUES (9, 'other');"
                               "RENAME TABLE it_sc_case.other TO it_sc_case.`ITEM`;"
                               "INSERT INTO it_sc_case.`ITEM` VALUES (10, 'other');"),
              0);
    const int code = WaitChild(pid, std::chrono::seconds(30));  // killed (and failed) if it goes on
    ProcessResult r{code, ReadFile(log)};
    EXPECT_EQ(r.exit_code, 1) << r.output;
    for (const std::string word : {"`it_sc_case`.`Item`", "`it_sc_case`.`ITEM`", "\"it_sc_case.Item\"", "source.exclude"})
      EXPECT_NE(r.output.find(word), std::string::npos) << word << "\n" << r.output;
    const std::string items = "SELECT id || ':' || v FROM \"it_sc_case.Item\" ORDER BY id";
    EXPECT_EQ(ReplicaColumn(spec.sink_path, items), "1:keep-me,2:keep-me");
    EXPECT_EQ(ReplicaColumn(spec.sink_path, "SELECT source_table FROM _sluice_tables WHERE source_db = 'it_sc_case' "
                                            "ORDER BY source_table"),
              "Item,other");

    r = RunSluice({"run", "--config", config, "--until-caught-up"});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("would both become \"it_sc_case."), std::string::npos) << r.output;

    spec.exclude = {"it_sc_case.ITEM"};
    config = WriteConfig(dir, spec);
    ASSERT_EQ(RunSqlText("INSERT INTO it_sc_case.`Item` VALUES (3, 'new')"), 0);
    r = RunSluice({"run", "--config", config, "--until-caught-up"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(ReplicaColumn(spec.sink_path, items), "1:keep-me,2:keep-me,3:new");
  }
}

// A source with lower_case_table_names = 1 stores every name in lower case, and its row
// events name the table so, while a statement in the binlog keeps the case it was written
// in: `ALTER TABLE Shop.Orders CHANGE a a INT AFTER b` changes shop.orders. Before the fix
// the stream took it for another table's statement: with binlog_row_metadata=MINIMAL (rows
// carry no column names) the next insert's a and b landed in each other's columns, exit 0;
// an ADD COLUMN stopped the run. Now the statements' names are lowered as the server does:
// a reorder, an ADD COLUMN under `USE Shop` with a bare name, and a RENAME in mixed case are
// followed, every value in its column. A pattern in another case than the server's names
// ('Shop.*') is refused at the first start, naming the table it would match.
TEST(SchemaChange, MixedCaseStatementsOnASourceWithLowerCaseTableNamesAreFollowed) {
  ThrowawayServer server("--lower-case-table-names=1 --binlog-row-metadata=MINIMAL", "SLUICE_TEST_LC_SOURCE_PASSWORD");
  ASSERT_TRUE(server.started()) << server.StartLog();
  const ConnectOptions* env = &server.options();
  auto conn = Connection::Connect(*env);
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  const auto exec = [&](const std::string& sql) {
    Status st = (*conn)->Execute(sql);
    EXPECT_TRUE(st.ok()) << sql << ": " << st.ToString();
  };
  exec("CREATE DATABASE Shop");
  exec("CREATE TABLE Shop.Orders (id INT PRIMARY KEY, a INT, b INT)");
  exec("INSERT INTO Shop.Orders VALUES (1, 10, 100)");

  TempDir dir;
  const std::string replica = dir.File("replica.db");
  const auto config = [&](const std::string& pattern) {
    const std::string path = dir.File("sluice.toml");
    std::ofstream(path) << fmt::format(
        "[source]\nhost = \"127.0.0.1\"\nport = {}\nuser = \"{}\"\npassword_env = \"SLUICE_TEST_LC_SOURCE_PASSWORD\"\n"
        "server_id = 5617\ntables = [\"{}\"]\n\n[sink]\ntype = \"sqlite\"\npath = \"{}\"\n",
        env->port, env->user, pattern, replica);
    return path;
  };
  ProcessResult r = RunSluice({"run", "--config", config("Shop.*"), "--until-caught-up"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the server holds `shop`.`orders`"), std::string::npos) << r.output;
  std::remove(replica.c_str());

  r = RunSluice({"run", "--config", config("shop.*"), "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  exec("ALTER TABLE Shop.Orders CHANGE a a INT AFTER b");
  exec("INSERT INTO shop.orders (id, a, b) VALUES (2, 20, 200)");
  exec("USE Shop");
  exec("ALTER TABLE ORDERS ADD COLUMN c INT FIRST");
  exec("INSERT INTO shop.orders (id, a, b, c) VALUES (3, 30, 300, 3)");
  exec("RENAME TABLE Shop.ORDERS TO SHOP.Orders2");
  exec("INSERT INTO shop.orders2 (id, a, b, c) VALUES (4, 40, 400, 4)");
  r = RunSluice({"run", "--config", config("shop.*"), "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ReplicaColumn(replica, "SELECT printf('%s/%s/%s/%s', id, a, b, c) FROM \"shop.orders2\" ORDER BY id"),
            "1/10/100/,2/20/200/,3/30/300/3,4/40/400/4");
  EXPECT_EQ(ReplicaColumn(replica, "SELECT group_concat(name, ' ') FROM pragma_table_info('shop.orders2')"),
            "c id b a");
}

// Definitions as the server stores them, not as written (a new user's probe, all silent
// before): with binlog_row_metadata=MINIMAL the labels of a table created while streaming are
// sluice's own parse, and ENUM('x ', ...) members kept their trailing spaces, so every row
// came out as 'x ' in every sink; ADD COLUMN ... ENUM('x ', 'y') DEFAULT 'x ' filled the
// existing rows with 'x ' (the server stores 'x'); ADD COLUMN ... DECIMAL(6,2) DEFAULT .5
// stopped every sink ("DEFAULT value not understood"). Now the replica equals the source.
TEST(SchemaChange, EnumMembersWithTrailingSpacesAndABareFractionDefaultAreStoredAsTheServerStoresThem) {
  RowMetadata mode("MINIMAL");
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_enumsp; CREATE DATABASE it_enumsp; USE it_enumsp;"
                       "CREATE TABLE seed (id INT PRIMARY KEY); INSERT INTO seed VALUES (1);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_enumsp.*"};
  spec.sink_path = dir.File("replica.db");
  const std::string config = WriteConfig(dir, spec);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("USE it_enumsp;"
                       "CREATE TABLE en (id INT PRIMARY KEY, e ENUM('x ','y','z  '), s SET('a ','b'));"
                       "INSERT INTO en VALUES (1, 'x', 'a'), (2, 'y', 'a,b'), (3, 'z', 'b');"
                       "CREATE TABLE t (id INT PRIMARY KEY, a INT); INSERT INTO t VALUES (1, 1), (2, 2);"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectReplicaEqualsSource({"it_enumsp.*"}, spec.sink_path);
  ASSERT_EQ(RunSqlText("USE it_enumsp; ALTER TABLE t ADD COLUMN h DECIMAL(6,2) DEFAULT .5;"
                       "ALTER TABLE t ADD COLUMN e ENUM('x ','y') DEFAULT 'x ';"
                       "INSERT INTO t (id, a) VALUES (3, 3); UPDATE en SET e = 'z' WHERE id = 1;"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectReplicaEqualsSource({"it_enumsp.*"}, spec.sink_path);
  EXPECT_EQ(ReplicaColumn(spec.sink_path, "SELECT printf('%s/%s', h, e) FROM \"it_enumsp.t\" ORDER BY id"),
            "0.50/x,0.50/x,0.50/x");
  (void)RunSqlText("DROP DATABASE IF EXISTS it_enumsp;");
}

// ADD PRIMARY KEY on a nullable column under a non-strict sql_mode: the server turns the
// NULLs into 0 without row events. Before: SQLite kept the NULL under the new key, exit 0 (a
// new user's probe; PostgreSQL and MySQL destinations stopped in the rebuild). Now the table
// is copied again and equals the source.
TEST(SchemaChange, AddPrimaryKeyUnderANonStrictSqlModeCopiesTheTableAgain) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_pknull; CREATE DATABASE it_pknull; USE it_pknull;"
                       "CREATE TABLE t (id INT PRIMARY KEY, i INT, v VARCHAR(5));"
                       "INSERT INTO t VALUES (1, NULL, 'a'), (2, 5, 'b');"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_pknull.*"};
  spec.sink_path = dir.File("replica.db");
  const std::string config = WriteConfig(dir, spec);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("USE it_pknull; SET sql_mode = ''; ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (id, i);"
                       "INSERT INTO t VALUES (3, 7, 'c');"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectReplicaEqualsSource({"it_pknull.*"}, spec.sink_path);
  EXPECT_EQ(ReplicaColumn(spec.sink_path, "SELECT printf('%s/%s', id, i) FROM \"it_pknull.t\" ORDER BY id"),
            "1/0,2/5,3/7");
  (void)RunSqlText("DROP DATABASE IF EXISTS it_pknull;");
}

// binlog_row_image=MINIMAL and an INSERT under a non-strict sql_mode that leaves out NOT NULL
// columns without a DEFAULT: the server stores the type's implicit default (0, the first ENUM
// member, '', the zero date), and a BLOB DEFAULT 0x4142 its bytes. Before, the sink stored NULL
// and the text '0x4142' (a new user's probe). A VARBINARY DEFAULT 0x00FF, which
// information_schema prints as '\0?', is not known exactly: a row that needs it stops the run,
// naming the column, instead of storing 0x003F.
TEST(SchemaChange, MinimalRowImagesTakeImplicitDefaultsAndStopOnADefaultNotKnownExactly) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_impl; CREATE DATABASE it_impl; USE it_impl;"
                       "CREATE TABLE df (id INT PRIMARY KEY, note VARCHAR(10), nn INT NOT NULL, e2 ENUM('p','q') NOT NULL,"
                       " c3 CHAR(3) NOT NULL, d DATE NOT NULL, dt DATETIME(3) NOT NULL, de DECIMAL(5,2) NOT NULL,"
                       " bn BINARY(2) NOT NULL, bl BLOB DEFAULT 0x4142);"
                       "CREATE TABLE dfb (id INT PRIMARY KEY, note VARCHAR(10), vb VARBINARY(4) DEFAULT 0x00FF);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_impl.*"};
  spec.sink_path = dir.File("replica.db");
  const std::string config = WriteConfig(dir, spec);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("USE it_impl; SET sql_mode = ''; SET binlog_row_image = 'MINIMAL';"
                       "INSERT INTO df (id, note) VALUES (1, 'minimal');"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ExpectReplicaEqualsSource({"it_impl.df"}, spec.sink_path);
  EXPECT_EQ(ReplicaColumn(spec.sink_path, "SELECT printf('%s/%s/[%s]/%s/%s/%s/%s/%s', nn, e2, c3, d, dt, de, hex(bn), "
                                          "hex(bl)) FROM \"it_impl.df\""),
            "0/p/[]/0000-00-00/0000-00-00 00:00:00.000/0.00/0000/4142");
  ASSERT_EQ(RunSqlText("USE it_impl; SET binlog_row_image = 'MINIMAL'; INSERT INTO dfb (id, note) VALUES (1, 'x');"), 0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  for (const char* word : {"it_impl.dfb", "vb", "not known exactly"})
    EXPECT_NE(r.output.find(word), std::string::npos) << word << "\n" << r.output;
  EXPECT_EQ(ReplicaColumn(spec.sink_path, "SELECT count(*) FROM \"it_impl.dfb\""), "0");
  (void)RunSqlText("DROP DATABASE IF EXISTS it_impl;");
}

// A table renamed into the patterns whose "db.table" name is another captured table's with
// another split: `it_dot.x`.`c` beside `it_dot`.`x.c`. The re-read looked the name up, found
// `it_dot`.`x.c` first and copied it in the new table's place (a new user's probe: SQLite held
// the other table's rows, PostgreSQL and MariaDB no table at all, exit 0). Now the run stops at
// the RENAME, naming both, before anything of it is applied; the table already there keeps its
// rows.
TEST(SchemaChange, ATableRenamedInUnderAnotherTablesDottedNameStopsTheRun) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_dot; DROP DATABASE IF EXISTS `it_dot.x`; DROP DATABASE IF EXISTS it_doto;"
                       "CREATE DATABASE it_dot; CREATE DATABASE `it_dot.x`; CREATE DATABASE it_doto;"
                       "CREATE TABLE it_dot.`x.c` (id INT PRIMARY KEY, v INT); INSERT INTO it_dot.`x.c` VALUES (1, 1);"
                       "CREATE TABLE it_doto.c (id INT PRIMARY KEY, v INT); INSERT INTO it_doto.c VALUES (10, 10), (20, 20);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_dot*.*"};
  spec.exclude = {"it_doto.*"};
  spec.sink_path = dir.File("replica.db");
  const std::string config = WriteConfig(dir, spec);
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const pid_t pid = StartSluice({"run", "--config", config}, dir.File("log"));
  ASSERT_TRUE(WaitForLog(dir.File("log"), "streaming from", pid, std::chrono::seconds(60))) << ReadFile(dir.File("log"));
  ASSERT_EQ(RunSqlText("RENAME TABLE it_doto.c TO `it_dot.x`.c; INSERT INTO `it_dot.x`.c VALUES (30, 30);"
                       "INSERT INTO it_dot.`x.c` VALUES (2, 2);"),
            0);
  EXPECT_EQ(WaitChild(pid, std::chrono::seconds(60)), 1);
  const std::string log = ReadFile(dir.File("log"));
  for (const char* word : {"`it_dot.x`.`c`", "`it_dot`.`x.c`", "leave one out"})
    EXPECT_NE(log.find(word), std::string::npos) << word << "\n" << log;
  // The next run refuses at start: both are at the source now.
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(ReplicaColumn(spec.sink_path, "SELECT group_concat(id) FROM \"it_dot.x.c\""), "1");
  (void)RunSqlText("DROP DATABASE IF EXISTS it_dot; DROP DATABASE IF EXISTS `it_dot.x`; DROP DATABASE IF EXISTS it_doto;");
}

}  // namespace
}  // namespace sluice::testing
