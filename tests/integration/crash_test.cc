// Crash tests: `sluice run` is killed with SIGKILL at several points during the snapshot and
// during streaming, under a concurrent write load, and started again. The SQLite replica
// must end equal to the source; the JSON lines output must hold every committed source
// transaction exactly once.
#include <atomic>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "harness.h"

namespace sluice::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Runs random multi-statement transactions against `db` until stopped; records the GTID
// of every committed transaction (MariaDB @@last_gtid).
class Writer {
 public:
  explicit Writer(std::string db, uint32_t seed) : db_(std::move(db)), seed_(seed) {}
  void Start() { thread_ = std::thread([this] { Loop(); }); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  const std::set<std::string>& gtids() const { return gtids_; }
  int committed() const { return committed_; }
  std::string error() const { return error_; }

 private:
  void Loop() {
    auto conn = Connection::Connect(TestServer());
    if (!conn.ok()) {
      error_ = conn.status().ToString();
      return;
    }
    std::mt19937 rng(seed_);
    auto exec = [&](const std::string& sql) {
      Status st = (*conn)->Execute(sql);
      if (!st.ok() && error_.empty()) error_ = st.ToString();
      return st.ok();
    };
    while (!stop_) {
      int n = 1 + static_cast<int>(rng() % 4);
      bool rollback = rng() % 10 == 0;
      if (!exec("START TRANSACTION")) return;
      for (int i = 0; i < n; ++i) {
        int id = 1 + static_cast<int>(rng() % 66000);
        switch (rng() % 7) {
          case 0:
            exec(fmt::format("INSERT INTO {}.a (k, payload, d, ts) VALUES ({}, 'w{}', {}.25, NOW(6))",
                             db_, rng() % 1000, id, id % 997));
            break;
          case 1:
            exec(fmt::format("UPDATE {}.a SET k = k + 1, payload = CONCAT(payload, '+') WHERE id = {}",
                             db_, id));
            break;
          case 2: exec(fmt::format("DELETE FROM {}.a WHERE id = {}", db_, id)); break;
          case 3:
            exec(fmt::format("UPDATE IGNORE {}.a SET id = id + 100000 WHERE id = {}", db_, id));
            break;
          case 4:
            exec(fmt::format("INSERT INTO {}.b (x, y, v) VALUES ({}, {}, 'v') "
                             "ON DUPLICATE KEY UPDATE v = CONCAT(v, 'u')",
                             db_, id % 50, id % 70));
            break;
          case 5:
            exec(fmt::format("INSERT INTO {}.c (k, v) VALUES ({}, 'n{}')", db_, id % 300, id));
            break;
          case 6:
            if (id % 2)
              exec(fmt::format("UPDATE {}.c SET v = CONCAT(v, 'u') WHERE k = {} LIMIT 1", db_, id % 300));
            else
              exec(fmt::format("DELETE FROM {}.c WHERE k = {} LIMIT 1", db_, id % 300));
            break;
        }
      }
      if (rollback) {
        exec("ROLLBACK");
        continue;
      }
      if (!exec("COMMIT")) return;
      auto g = (*conn)->Query("SELECT @@last_gtid");
      if (g.ok() && !g->rows.empty() && g->rows[0][0] && !g->rows[0][0]->empty()) gtids_.insert(*g->rows[0][0]);
      ++committed_;
      std::this_thread::sleep_for(milliseconds(rng() % 3));
    }
  }

  std::string db_;
  uint32_t seed_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::set<std::string> gtids_;
  int committed_ = 0;
  std::string error_;
};

// `rows` of a, `keyless_rows` of c (no primary key).
void CreateCrashTables(const std::string& db, int rows, int keyless_rows = 20000) {
  ASSERT_EQ(RunSqlText(fmt::format(
                "DROP DATABASE IF EXISTS {0}; CREATE DATABASE {0}; USE {0};"
                "CREATE TABLE {0}.a (id INT AUTO_INCREMENT PRIMARY KEY, k INT, payload VARCHAR(200),"
                "  d DECIMAL(10,2), ts DATETIME(6)) AUTO_INCREMENT = 50000;"
                "CREATE TABLE {0}.b (x INT, y INT, v VARCHAR(255), PRIMARY KEY (x, y));"
                "CREATE TABLE {0}.c (k INT, v VARCHAR(255));"  // no primary key
                "INSERT INTO {0}.c SELECT seq % 300, 'init' FROM seq_1_to_{2};"
                "INSERT INTO {0}.a (id, k, payload, d, ts) SELECT seq, seq % 1000, REPEAT('p', seq % 150),"
                "  seq / 7, '2024-01-01 00:00:00' + INTERVAL seq SECOND FROM seq_1_to_{1};"
                "INSERT INTO {0}.b SELECT seq % 50, seq % 70, 'init' FROM seq_1_to_3500 "
                "  ON DUPLICATE KEY UPDATE v = 'init2';",
                db, rows, keyless_rows)),
            0);
}

TEST(Crash, SigkillDuringSnapshotAndStreamingConvergesInSqlite) {
  const std::string db = "it_crash";
  // 60,000 rows of `a`: enough for three kills inside its copy under the ASan sluice; 60,000
  // of c: with 20,000 its whole copy (1.1 s under ASan) once went by between two of the
  // test's polls of the checkpoint, and the kill meant for it landed after it.
  CreateCrashTables(db, 60000, 60000);
  uint32_t seed = TestSeed();
  std::mt19937 rng(seed);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {db + ".*"};
  spec.sink_path = dir.File("replica.db");
  spec.chunk_rows = 25;
  // c's 20,000 rows in fetches of 100: the coordinator commits the fetches that are ready
  // together (up to 16), and with the default 5,000 c's whole copy could be one commit, past
  // the mark below before the test sees it; since the SQLite writer only binds (BENCHMARKS.md,
  // step 7), fetches of 500 let c finish before the kill too.
  spec.snapshot_extra = "fetch_rows = 100\n";
  std::string config = WriteConfig(dir, spec);
  std::string log = dir.File("sluice.log");

  Writer writer(db, seed);
  writer.Start();
  // Four kills during the snapshot, each once the copy of a table has passed a mark (read
  // from the checkpoint the sink stores with each chunk; c has no primary key, so its copy
  // starts over), then kills during streaming.
  // c's mark is early in its copy: its progress moves in commits of up to 1,600 rows, and
  // with 5000 the ASan run once saw c done before it saw the mark (the kill then missed c).
  const std::vector<std::pair<std::string, uint64_t>> marks = {
      {"a", 6000}, {"a", 24000}, {"a", 42000}, {"c", 1000}};
  for (const auto& [table, mark] : marks) {
    pid_t pid = StartSluice({"run", "--config", config}, log);
    bool reached = false;
    auto deadline = std::chrono::steady_clock::now() + seconds(60);
    while (!reached && std::chrono::steady_clock::now() < deadline) {
      std::string state = ReadSqliteCheckpoint(spec.sink_path);
      if (!state.empty()) {
        auto j = nlohmann::json::parse(state, nullptr, false);
        if (!j.is_discarded() && j["snapshot"]["tables"].contains(db + "." + table)) {
          const auto& t = j["snapshot"]["tables"][db + "." + table];
          reached = t["rows"].get<uint64_t>() >= mark || t["done"].get<bool>();
        }
      }
      if (!reached) std::this_thread::sleep_for(milliseconds(1));
    }
    kill(pid, SIGKILL);
    EXPECT_EQ(WaitChild(pid, seconds(30)), -SIGKILL) << ReadFile(log);
    EXPECT_TRUE(reached) << "the snapshot never reached row " << mark << " of " << table << "\n" << ReadFile(log);
  }
  for (int delay : {300, 700, 1200, 500, 900}) {
    pid_t pid = StartSluice({"run", "--config", config}, log);
    std::this_thread::sleep_for(milliseconds(delay + static_cast<int>(rng() % 200)));
    kill(pid, SIGKILL);
    EXPECT_EQ(WaitChild(pid, seconds(30)), -SIGKILL) << ReadFile(log);
  }
  writer.Stop();
  ASSERT_EQ(writer.error(), "");
  EXPECT_GT(writer.committed(), 50);

  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output << ReadFile(log);
  std::string all_logs = ReadFile(log);
  EXPECT_NE(all_logs.find("continuing the snapshot"), std::string::npos)
      << "no kill landed during the snapshot; the test lost its point\n" << all_logs;
  EXPECT_NE(all_logs.find("has no primary key and its copy was interrupted"), std::string::npos)
      << "no kill landed during the copy of the table without a key\n" << all_logs;
  ExpectReplicaEqualsSource({db + ".*"}, spec.sink_path);
}

TEST(Crash, SigkillDuringStreamingDeliversEachTransactionOnceToJsonl) {
  const std::string db = "it_crash_jsonl";
  CreateCrashTables(db, 2000);
  uint32_t seed = TestSeed();
  std::mt19937 rng(seed);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {db + ".*"};
  spec.sink_type = "jsonl";
  spec.sink_path = dir.File("changes.jsonl");
  std::string config = WriteConfig(dir, spec);
  std::string log = dir.File("sluice.log");

  // Snapshot first, so the kills below all land in streaming.
  auto first = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(first.exit_code, 0) << first.output;

  Writer writer(db, seed);
  writer.Start();
  for (int i = 0; i < 6; ++i) {
    pid_t pid = StartSluice({"run", "--config", config}, log);
    std::this_thread::sleep_for(milliseconds(300 + static_cast<int>(rng() % 700)));
    kill(pid, SIGKILL);
    WaitChild(pid, seconds(30));
  }
  writer.Stop();
  ASSERT_EQ(writer.error(), "");
  auto last = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(last.exit_code, 0) << last.output;

  std::ifstream in(spec.sink_path);
  std::string line;
  std::set<std::tuple<std::string, std::string, uint64_t, uint64_t>> seen;  // gtid, table, pos, row
  std::set<std::string> gtids;
  size_t n = 0;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "not JSON: " << line;
    if (j["op"] == "r") continue;
    ++n;
    const auto& s = j["source"];
    std::string gtid = s["gtid"].is_string() ? s["gtid"].get<std::string>() : "";
    auto key = std::make_tuple(gtid, s["table"].get<std::string>(), s["pos"].get<uint64_t>(),
                               s["row"].get<uint64_t>());
    EXPECT_TRUE(seen.insert(key).second) << "change delivered twice: " << line;
    gtids.insert(gtid);
  }
  EXPECT_GT(n, 0u);
  // Every committed source transaction that changed rows is present. (A transaction whose
  // statements matched no row changes nothing and has no row events.)
  size_t missing = 0;
  for (const auto& g : writer.gtids())
    if (!gtids.count(g)) ++missing;
  EXPECT_LE(missing, writer.gtids().size() / 4) << "too many committed transactions missing";
  for (const auto& g : gtids) EXPECT_TRUE(writer.gtids().count(g)) << "unknown GTID " << g;
}

}  // namespace
}  // namespace sluice::testing
