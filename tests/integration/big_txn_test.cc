// Memory cap (issue 8): a source transaction larger than sink.max_buffered_bytes streams in
// parts inside one open sink transaction, still all or nothing. The bounded sample of
// `make stream-bigtxn` (bench/stream-bigtxn.sh, 4 M rows): one transaction of 100,000 row
// changes (30,000 under the sanitizers) with a cap of 4 MiB, into SQLite and into JSON lines, peak RSS checked (gcc build;
// the ASan build's allocator keeps freed memory in quarantine, so only the result is checked
// there: the SQLite test is one of scripts/run-tests.sh's release tests so that make test
// checks its RSS), and a run killed while its parts are out, then restarted: the JSON lines
// output holds every row exactly once.
#include <sys/stat.h>

#include <fstream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace sluice::testing {
namespace {

using std::chrono::seconds;

// Under the sanitizers (make test's ASan shards) the transaction is smaller: RSS is not
// checked there, and 30,000 rows are still several parts of the 4 MiB cap.
int Rows() { return SluiceSanitized() ? 30000 : 100000; }
constexpr long kCapBytes = 4 << 20;
// sluice's own footprint catching up a small backlog is 20-30 MiB (BENCHMARKS.md); the
// 100k-row transaction held whole takes over 40 MiB more (measured: see the test output).
constexpr long kMaxRssKib = 48 * 1024;
// SQLite's rows are wider (about 400 bytes: 40 MB of table, more than the 32 MiB page cache
// SQLite had whatever the cap, which took it to 303 MiB under a 256 MiB cap with 4 M rows:
// BENCHMARKS.md). Its page cache is now 1/8 of this cap and counted in it.
constexpr int kSqlitePad = 360;
constexpr long kSqliteMaxRssKib = 40 * 1024;

std::string CappedConfig(const TempDir& dir, const std::string& sink, const std::string& path, long cap) {
  SluiceConfigSpec spec;
  spec.tables = {"bigtxn.t"};
  spec.sink_type = sink;
  spec.sink_path = path;
  std::string config = WriteConfig(dir, spec);
  std::ofstream(config, std::ios::app) << "max_buffered_bytes = " << cap << "\n";
  return config;
}

class BigTransaction : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS bigtxn; CREATE DATABASE bigtxn;"
                         "CREATE TABLE bigtxn.t (id INT PRIMARY KEY, c VARCHAR(100) NOT NULL, n BIGINT) ENGINE=InnoDB;"),
              0);
  }
  // One transaction of Rows() inserts (MariaDB's sequence engine), after the snapshot.
  void BigInsert(int pad = 40) {
    ASSERT_EQ(RunSqlText(fmt::format("INSERT INTO bigtxn.t SELECT seq, CONCAT('row-', seq, '-', REPEAT('x', {})), "
                                     "seq * 7 FROM seq_1_to_{}",
                                     pad, Rows()),
                         "bigtxn"),
              0);
  }
};

TEST_F(BigTransaction, SqliteAppliesItInPartsUnderTheCap) {
  TempDir dir;
  const std::string db = dir.File("replica.db");
  const std::string config = CappedConfig(dir, "sqlite", db, kCapBytes);
  ASSERT_EQ(RunSqlText("ALTER TABLE bigtxn.t MODIFY c VARCHAR(400) NOT NULL"), 0);
  auto first = RunSluice({"run", "--config", config, "--until-caught-up"}, seconds(120));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  BigInsert(kSqlitePad);
  auto run = RunSluice({"run", "--config", config, "--until-caught-up"}, seconds(300));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  ExpectReplicaEqualsSource({"bigtxn.t"}, db);
  std::cout << "one transaction of " << Rows() << " rows of about 400 bytes into SQLite, cap 4 MiB: peak RSS "
            << run.max_rss_kib / 1024 << " MiB\n";
  if (!SluiceSanitized()) {
    EXPECT_LT(run.max_rss_kib, kSqliteMaxRssKib)
        << "peak RSS of sluice applying one transaction of " << Rows()
        << " rows (40 MB of table) into SQLite with max_buffered_bytes = 4 MiB is over the bound: SQLite's page "
           "cache and the change data must stay within the cap (docs/sinks.md, Memory)";
  }
}

TEST_F(BigTransaction, JsonlAppliesItInPartsAndAKilledRunCutsThemBack) {
  TempDir dir;
  const std::string out = dir.File("out.jsonl");
  const std::string config = CappedConfig(dir, "jsonl", out, kCapBytes);
  auto first = RunSluice({"run", "--config", config, "--until-caught-up"}, seconds(120));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  BigInsert();
  struct stat st {};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  const off_t before = st.st_size;

  // Killed once parts are in the file beyond its checkpoint (over 2 MB written).
  pid_t pid = StartSluice({"run", "--config", config, "--until-caught-up"}, dir.File("killed.log"));
  bool parts_seen = false;
  for (int i = 0; i < 3000 && !parts_seen; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    parts_seen = ::stat(out.c_str(), &st) == 0 && st.st_size > before + (2 << 20);
  }
  kill(pid, SIGKILL);
  WaitChild(pid);
  EXPECT_TRUE(parts_seen) << "no part of the transaction reached the file before the kill: "
                          << ReadFile(dir.File("killed.log"));

  auto run = RunSluice({"run", "--config", config, "--until-caught-up"}, seconds(300));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // The transaction applied in parts is counted (it said "streamed 0 transactions" beside its
  // rows: a new user's probe).
  EXPECT_NE(run.output.find(fmt::format("streamed 1 transactions, {} row changes", Rows())), std::string::npos)
      << run.output;
  std::cout << "one transaction of " << Rows() << " rows into JSON lines, cap 4 MiB: peak RSS "
            << run.max_rss_kib / 1024 << " MiB\n";
  if (!SluiceSanitized()) {
    EXPECT_LT(run.max_rss_kib, kMaxRssKib) << "peak RSS of the restarted run over the bound with max_buffered_bytes = 4 MiB; its log:\n"
                                           << run.output;
  }

  // Every row exactly once, and nothing else of the table after the snapshot.
  std::ifstream in(out);
  std::string line;
  std::set<int64_t> ids;
  size_t lines = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.contains("op") || j["op"] != "c") continue;
    ++lines;
    ids.insert(j["after"]["id"].get<int64_t>());
  }
  EXPECT_EQ(lines, static_cast<size_t>(Rows())) << "insert lines in the output (each row exactly once)";
  EXPECT_EQ(ids.size(), static_cast<size_t>(Rows()));
}

}  // namespace
}  // namespace sluice::testing
