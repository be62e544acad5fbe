// Issue 9, planning and verification: a table altered between planning and reading is planned
// again (not a failed run, not a read under the wrong columns); a range whose bounds are out of
// order under the key's collation re-plans its table; a parallel snapshot keeps its connections
// within 2 x workers + 1, and every snapshot session sets its server timeouts.
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "harness.h"
#include "mysql/schema_loader.h"
#include "schema/schema_history.h"
#include "snapshot/coordinator.h"

namespace sluice::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool WaitForFile(const std::string& path, pid_t child, seconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    if (Exists(path)) return true;
    if (::kill(child, 0) != 0) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return false;
}

// Sets SLUICE_TEST_SNAPSHOT_PAUSE_FILE (snapshot/coordinator.cc PauseForTest) for the sluice
// processes started while it lives.
struct PauseHook {
  explicit PauseHook(std::string p) : path(std::move(p)) {
    ::setenv("SLUICE_TEST_SNAPSHOT_PAUSE_FILE", path.c_str(), 1);
  }
  ~PauseHook() {
    ::unsetenv("SLUICE_TEST_SNAPSHOT_PAUSE_FILE");
    std::remove(path.c_str());
  }
  std::string path;
};

// ALTERs between planning and reading: one table gains a column (written after the ALTER),
// another changes a column's type. Both are planned again and copied with the new columns;
// a third table, unchanged, is copied once.
TEST(SnapshotReplan, AlterBetweenPlanningAndReadingReplansTheTable) {
  const std::string db = "it_replan";
  ASSERT_EQ(RunSqlText(fmt::format(
                "DROP DATABASE IF EXISTS {0}; CREATE DATABASE {0}; USE {0};"
                "CREATE TABLE {0}.grows (id INT PRIMARY KEY, v INT);"
                "INSERT INTO {0}.grows SELECT seq, seq FROM seq_1_to_8000;"
                "CREATE TABLE {0}.retyped (k VARCHAR(20) PRIMARY KEY, v INT);"
                "INSERT INTO {0}.retyped SELECT CONCAT('k', seq), seq FROM seq_1_to_3000;"
                "CREATE TABLE {0}.same (id INT PRIMARY KEY, v INT);"
                "INSERT INTO {0}.same SELECT seq, seq FROM seq_1_to_3000;"
                "CREATE TABLE {0}.rebuilt (id INT PRIMARY KEY, v INT);"
                "INSERT INTO {0}.rebuilt SELECT seq, seq FROM seq_1_to_3000;",
                db)),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {db + ".*"};
  spec.sink_path = dir.File("replica.db");
  spec.chunk_rows = 1000;
  spec.snapshot_extra = "workers = 2\nfetch_rows = 500\n";
  std::string config = WriteConfig(dir, spec);
  PauseHook pause(dir.File("paused"));
  pid_t pid = StartSluice({"run", "--config", config, "--until-caught-up"}, dir.File("sluice.log"));
  ASSERT_TRUE(WaitForFile(pause.path, pid, seconds(60)))
      << "sluice did not pause after planning (SLUICE_TEST_SNAPSHOT_PAUSE_FILE):\n"
      << ReadFile(dir.File("sluice.log"));
  ASSERT_EQ(RunSqlText(fmt::format(
                "ALTER TABLE {0}.grows ADD COLUMN extra VARCHAR(10) NOT NULL DEFAULT 'x';"
                "UPDATE {0}.grows SET extra = CONCAT('e', id) WHERE id % 7 = 0;"
                "ALTER TABLE {0}.retyped MODIFY v BIGINT;"
                "UPDATE {0}.retyped SET v = v * 10000000000 WHERE v % 5 = 0;"
                "INSERT INTO {0}.retyped VALUES ('new', 99999999999);"
                // Same columns, new table: reading it in a transaction from before fails with
                // ER_TABLE_DEF_CHANGED, which is retried in a new transaction, not re-planned.
                "ALTER TABLE {0}.rebuilt FORCE;"
                "UPDATE {0}.rebuilt SET v = -v WHERE id % 3 = 0;",
                db)),
            0);
  std::remove(pause.path.c_str());
  ASSERT_EQ(WaitChild(pid, seconds(120)), 0)
      << "the run failed after ALTERs between planning and reading:\n" << ReadFile(dir.File("sluice.log"));
  ExpectReplicaEqualsSource({db + ".*"}, spec.sink_path);
  const std::string log = ReadFile(dir.File("sluice.log"));
  EXPECT_NE(log.find("re-planning table " + db + ".grows: its definition changed"), std::string::npos)
      << "no re-plan of the table that gained a column in the log:\n" << log;
  EXPECT_NE(log.find("re-planning table " + db + ".retyped: its definition changed"), std::string::npos)
      << "no re-plan of the table whose column changed its type in the log:\n" << log;
  EXPECT_EQ(log.find("re-planning table " + db + ".same"), std::string::npos)
      << "the unchanged table was planned again:\n" << log;
  EXPECT_NE(log.find("[1412]"), std::string::npos)
      << "reading the rebuilt table in a read view from before did not meet ER_TABLE_DEF_CHANGED:\n" << log;
  EXPECT_EQ(log.find("re-planning table " + db + ".rebuilt"), std::string::npos)
      << "the rebuilt table (same columns) was planned again instead of read in a new transaction:\n" << log;

  // The stream goes on from there with the new definitions (the ALTERs before the copies'
  // points are skipped, not applied twice).
  ASSERT_EQ(RunSqlText(fmt::format("INSERT INTO {0}.grows VALUES (9001, 1, 'after');"
                                   "UPDATE {0}.retyped SET v = 12345678901 WHERE k = 'k1';",
                                   db)),
            0);
  auto again = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(again.exit_code, 0) << again.output;
  ExpectReplicaEqualsSource({db + ".*"}, spec.sink_path);
}

// Records the snapshot reads of a sink: per table, how many times each key was read since the
// table was last replaced (a re-read starts with a kCreate schema change).
class CountingSink : public Sink {
 public:
  Result<std::optional<std::string>> LoadCheckpoint() override { return std::optional<std::string>(); }
  Status PrepareTable(const TableSchema&) override { return Status::Ok(); }
  Status Apply(const Transaction& txn) override {
    for (const RowChange& c : txn.changes) {
      reads[c.table->table][c.after[0].ToText()]++;
      columns[c.table->table] = c.after.size();
    }
    return Status::Ok();
  }
  Status ResetTable(const TableSchema& t, const std::string&) override {
    reads.erase(t.table);
    return Status::Ok();
  }
  Status ApplySchemaChanges(const std::vector<SchemaChange>& changes, const std::string&) override {
    for (const SchemaChange& c : changes)
      if (c.kind == SchemaChange::Kind::kCreate && c.after) {
        reads.erase(c.after->table);
        ++replaced;
      }
    return Status::Ok();
  }
  Status SaveCheckpoint(const std::string&) override { return Status::Ok(); }
  Status Flush() override { return Status::Ok(); }
  std::map<std::string, std::map<std::string, int>> reads;
  std::map<std::string, size_t> columns;  // per table: cells of the last row read
  int replaced = 0;
};

// A stored plan whose middle range runs backwards ((1000, 200]: under the key's order its
// bounds are not increasing). Read as planned, the range would read nothing and its
// neighbours would both read 201..1000; the worker's check re-plans the table instead.
TEST(SnapshotReplan, BoundsOutOfOrderReplanTheTable) {
  const std::string db = "it_replan_bounds";
  ASSERT_EQ(RunSqlText(fmt::format("DROP DATABASE IF EXISTS {0}; CREATE DATABASE {0}; USE {0};"
                                   "CREATE TABLE {0}.t (id INT PRIMARY KEY, v INT);"
                                   "INSERT INTO {0}.t SELECT seq, seq FROM seq_1_to_3000;",
                                   db)),
            0);
  auto meta = Connect();
  ASSERT_NE(meta, nullptr);
  SnapshotRunOptions options;
  options.connection = TestServer();
  options.workers = 2;
  options.fetch_rows = 300;
  options.plan.chunk_rows = 1000;
  Checkpoint ckpt;
  TableSnapshotProgress& p = ckpt.tables[db + ".t"];
  p.expected_rows = 3000;
  p.ranges.resize(3);
  p.ranges[0].upper = {"1000"};
  p.ranges[1].lower = {"1000"};
  p.ranges[1].upper = {"200"};
  p.ranges[2].lower = {"200"};
  CountingSink sink;
  Status st = RunSnapshot(options, *meta, {TableName{db, "t"}}, ckpt, sink);
  ASSERT_TRUE(st.ok()) << "snapshot with a stored range (1000, 200]: " << st.ToString();
  EXPECT_TRUE(ckpt.snapshot_done);
  EXPECT_EQ(sink.replaced, 1) << "the table was not copied again from a new plan";
  const TableSnapshotProgress& done = ckpt.tables[db + ".t"];
  EXPECT_TRUE(done.done);
  for (const RangeProgress& r : done.ranges)
    EXPECT_FALSE(r.lower == KeyTexts{"1000"} && r.upper == KeyTexts{"200"}) << "the backwards range is still planned";
  const auto& keys = sink.reads["t"];
  EXPECT_EQ(keys.size(), 3000u) << "keys read after the re-plan";
  int twice = 0;
  for (const auto& [k, n] : keys) twice += n != 1;
  EXPECT_EQ(twice, 0) << "keys read more than once after the re-plan";
}

// A copy interrupted, then the table altered while sluice was stopped: the stored plan and the
// rows in the sink are of the old definition, so the resumed copy starts over with the new one.
TEST(SnapshotReplan, AlterWhileStoppedReplansTheResumedTable) {
  const std::string db = "it_replan_resume";
  ASSERT_EQ(RunSqlText(fmt::format("DROP DATABASE IF EXISTS {0}; CREATE DATABASE {0}; USE {0};"
                                   "CREATE TABLE {0}.t (id INT PRIMARY KEY, v INT);"
                                   "INSERT INTO {0}.t SELECT seq, seq FROM seq_1_to_3000;",
                                   db)),
            0);
  auto meta = Connect();
  ASSERT_NE(meta, nullptr);
  auto old_schema = LoadTableSchema(*meta, db, "t");
  ASSERT_TRUE(old_schema.ok()) << old_schema.status().ToString();
  ASSERT_EQ(RunSqlText(fmt::format("ALTER TABLE {0}.t ADD COLUMN w VARCHAR(5) DEFAULT 'w'", db)), 0);
  SnapshotRunOptions options;
  options.connection = TestServer();
  options.workers = 2;
  options.fetch_rows = 300;
  options.plan.chunk_rows = 1000;
  Checkpoint ckpt;
  // As the interrupted run left it: planned under the old definition, half of range 1 copied.
  SchemaHistory h;
  ASSERT_TRUE(h.Add(db, "t", TableVersion{BinlogPosition{}, std::make_shared<const TableSchema>(*old_schema), ""}).ok());
  h.CacheJson();
  ckpt.schemas = std::make_shared<const SchemaHistory>(std::move(h));
  TableSnapshotProgress& p = ckpt.tables[db + ".t"];
  p.expected_rows = 3000;
  p.rows = 500;
  p.ranges.resize(2);
  p.ranges[0].upper = {"1500"};
  p.ranges[0].rows = 500;
  p.ranges[0].last_key = {"500"};
  p.ranges[1].lower = {"1500"};
  CountingSink sink;
  Status st = RunSnapshot(options, *meta, {TableName{db, "t"}}, ckpt, sink);
  ASSERT_TRUE(st.ok()) << "resumed snapshot after ADD COLUMN while stopped: " << st.ToString();
  EXPECT_EQ(sink.replaced, 1) << "the sink table was not replaced by one of the new definition";
  EXPECT_EQ(sink.reads["t"].size(), 3000u) << "keys read by the new copy (the old one had 500)";
  EXPECT_EQ(sink.columns["t"], 3u) << "rows read with the old columns";
}

}  // namespace
}  // namespace sluice::testing
