// Parallel, range-planned snapshots: planning partitions every key type; a parallel snapshot
// under a concurrent write load ends equal to the source, with each key's changes delivered
// once and in source order (replaying them gives the source); SIGKILL during a parallel
// snapshot converges on restart.
#include <atomic>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "harness.h"
#include "mysql/key_literal.h"
#include "mysql/schema_loader.h"
#include "snapshot/planner.h"

namespace sluice::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// One table per key type of the acceptance list, 6000 rows each (the string table holds
// 'a' and keys that differ only by case or accent from others).
void CreateKeyTables(const std::string& db, int rows) {
  ASSERT_EQ(RunSqlText(fmt::format(
                "DROP DATABASE IF EXISTS {0}; CREATE DATABASE {0}; USE {0};"
                "CREATE TABLE {0}.t_int (id INT PRIMARY KEY, v INT);"
                "INSERT INTO {0}.t_int SELECT CAST(seq AS SIGNED) * 3 - 5000, 0 FROM seq_1_to_{1};"
                "CREATE TABLE {0}.t_ubig (id BIGINT UNSIGNED PRIMARY KEY, v INT);"
                "INSERT INTO {0}.t_ubig SELECT 18446744073709551615 - seq * 1000000007, 0 FROM seq_1_to_{1};"
                "INSERT INTO {0}.t_ubig VALUES (0, 0), (18446744073709551615, 0);"
                "CREATE TABLE {0}.t_str (k VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"
                "  PRIMARY KEY, v INT);"
                "INSERT INTO {0}.t_str SELECT CONCAT(ELT(seq % 7 + 1, 'a', 'B', 'c', 'Á', 'é', 'Z', 'ß'), seq), 0"
                "  FROM seq_1_to_{1};"
                "INSERT INTO {0}.t_str VALUES ('a', 0), ('b', 0), ('É', 0);"
                "CREATE TABLE {0}.t_uuid (id BINARY(16) PRIMARY KEY, v INT);"
                "INSERT INTO {0}.t_uuid SELECT UNHEX(MD5(seq)), 0 FROM seq_1_to_{1};"
                "CREATE TABLE {0}.t_dt (ts DATETIME(6) PRIMARY KEY, v INT);"
                "INSERT INTO {0}.t_dt SELECT '2024-01-01 00:00:00' + INTERVAL seq * 1000003 MICROSECOND, 0"
                "  FROM seq_1_to_{1};"
                "CREATE TABLE {0}.t_dec (d DECIMAL(20,6) PRIMARY KEY, v INT);"
                "INSERT INTO {0}.t_dec SELECT IF(seq % 2, -1, 1) * CAST(seq AS SIGNED) / 7, 0 FROM seq_1_to_{1};"
                "CREATE TABLE {0}.t_comp (tenant_id INT, id INT, v INT, PRIMARY KEY (tenant_id, id));"
                "INSERT INTO {0}.t_comp SELECT seq % 13, seq, 0 FROM seq_1_to_{1};"
                "CREATE TABLE {0}.t_nokey (k INT, v VARCHAR(10));"
                "INSERT INTO {0}.t_nokey SELECT seq % 100, 'x' FROM seq_1_to_{1};",
                db, rows)),
            0);
}

const std::vector<std::string> kKeyedTables = {"t_int", "t_ubig", "t_str", "t_uuid",
                                               "t_dt",  "t_dec",  "t_comp"};

TEST(SnapshotPlan, RangesPartitionTheKeysOfEveryKeyType) {
  const std::string db = "it_plan";
  CreateKeyTables(db, 6000);
  auto conn = Connect();
  ASSERT_NE(conn, nullptr);
  for (const std::string& table : kKeyedTables) {
    SCOPED_TRACE(table);
    auto schema = LoadTableSchema(*conn, db, table);
    ASSERT_TRUE(schema.ok()) << schema.status().ToString();
    PlanOptions po;
    po.chunk_rows = 700;
    po.max_ranges_per_table = 12;
    auto plan = PlanTable(*conn, *schema, po);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    auto count = conn->Query(fmt::format("SELECT COUNT(*) FROM {}.{}", db, table));
    ASSERT_TRUE(count.ok());
    const uint64_t total = std::stoull(*count->rows[0][0]);
    EXPECT_EQ(plan->expected_rows, total);
    EXPECT_GE(plan->ranges.size(), 8u);
    EXPECT_LE(plan->ranges.size(), 12u);
    uint64_t sum = 0;
    std::string cols = KeyColumnsTuple(*schema);
    for (size_t i = 0; i < plan->ranges.size(); ++i) {
      const RangeProgress& r = plan->ranges[i];
      EXPECT_EQ(r.lower.empty(), i == 0);
      EXPECT_EQ(r.upper.empty(), i + 1 == plan->ranges.size());
      if (i > 0) {
        EXPECT_EQ(r.lower, plan->ranges[i - 1].upper);
      }
      std::string where = "TRUE";
      if (!r.lower.empty()) where += " AND " + cols + " > " + *KeyTuple(*conn, *schema, r.lower, false);
      if (!r.upper.empty()) where += " AND " + cols + " <= " + *KeyTuple(*conn, *schema, r.upper, false);
      auto c = conn->Query(fmt::format("SELECT COUNT(*) FROM {}.{} WHERE {}", db, table, where));
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      uint64_t n = std::stoull(*c->rows[0][0]);
      // Sampled boundaries are keys of the table, so no range is empty; integer keys are
      // split by value, where a skewed table (t_ubig) leaves some ranges empty.
      if (table != "t_int" && table != "t_ubig") {
        EXPECT_GT(n, 0u) << "range " << i << " is empty";
      }
      sum += n;
      // The server locates each bound in its own range (standalone literals agree with the
      // column comparison).
      if (!r.upper.empty()) {
        std::vector<std::vector<std::string>> ends;
        for (const auto& x : plan->ranges) ends.push_back(x.upper);
        auto at = LocateKey(*conn, *schema, r.upper, ends);
        ASSERT_TRUE(at.ok()) << at.status().ToString();
        EXPECT_EQ(*at, i);
      }
    }
    EXPECT_EQ(sum, total) << "the ranges leave a gap or overlap";
  }
}

// Random changes to every table: value updates, inserts, deletes and key changes, plus the
// string key 'a' cycling through 'A' and 'á' (equal under utf8mb4_general_ci).
class KeyWriter {
 public:
  KeyWriter(std::string db, uint32_t seed) : db_(std::move(db)), seed_(seed) {}
  void Start() { thread_ = std::thread([this] { Loop(); }); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int committed() const { return committed_; }
  const std::string& error() const { return error_; }

 private:
  void Loop() {
    auto conn = Connection::Connect(TestServer());
    if (!conn.ok()) { error_ = conn.status().ToString(); return; }
    std::mt19937 rng(seed_);
    const char* spellings[] = {"a", "A", "á"};
    int spelling = 0;
    while (!stop_) {
      int s = 1 + static_cast<int>(rng() % 6000);
      std::string sql;
      switch (rng() % 16) {
        case 0: sql = fmt::format("UPDATE {}.t_int SET v = v + 1 WHERE id = {}", db_, s * 3 - 5000); break;
        case 1: sql = fmt::format("UPDATE IGNORE {}.t_int SET id = id + 1 WHERE id = {}", db_, s * 3 - 5000); break;
        case 2: sql = fmt::format("DELETE FROM {}.t_int WHERE id = {}", db_, s * 3 - 4999); break;
        case 3: sql = fmt::format("UPDATE {}.t_ubig SET v = v + 1 WHERE id = 18446744073709551615 - {} * 1000000007", db_, s); break;
        case 4: sql = fmt::format("INSERT IGNORE INTO {}.t_ubig VALUES (18446744073709551615 - {} * 1000000007 - 1, 1)", db_, s); break;
        case 5: {
          const char* from = spellings[spelling];
          spelling = (spelling + 1) % 3;
          sql = fmt::format("UPDATE {}.t_str SET k = '{}', v = v + 1 WHERE k = '{}'", db_, spellings[spelling], from);
          break;
        }
        case 6: sql = fmt::format("UPDATE {}.t_str SET v = v + 1 WHERE k = CONCAT(ELT({} % 7 + 1, 'a', 'B', 'c', 'Á', 'é', 'Z', 'ß'), {})", db_, s, s); break;
        case 7: sql = fmt::format("INSERT IGNORE INTO {}.t_str VALUES (CONCAT('n', {}), 1)", db_, s); break;
        case 8: sql = fmt::format("UPDATE {}.t_uuid SET v = v + 1 WHERE id = UNHEX(MD5({}))", db_, s); break;
        case 9: sql = fmt::format("UPDATE IGNORE {}.t_uuid SET id = UNHEX(MD5({})) WHERE id = UNHEX(MD5({}))", db_, s + 7000, s); break;
        case 10: sql = fmt::format("UPDATE {}.t_dt SET v = v + 1 WHERE ts = '2024-01-01 00:00:00' + INTERVAL {} * 1000003 MICROSECOND", db_, s); break;
        case 11: sql = fmt::format("DELETE FROM {}.t_dec WHERE d = IF({} % 2, -1, 1) * {} / 7", db_, s, s); break;
        case 12: sql = fmt::format("UPDATE {}.t_dec SET v = v + 1 WHERE d = IF({} % 2, -1, 1) * {} / 7", db_, s, s); break;
        case 13: sql = fmt::format("UPDATE IGNORE {}.t_comp SET tenant_id = tenant_id + 1 WHERE tenant_id = {} AND id = {}", db_, s % 13, s); break;
        case 14: sql = fmt::format("UPDATE {}.t_comp SET v = v + 1 WHERE tenant_id = {} AND id = {}", db_, s % 13, s); break;
        case 15: sql = fmt::format("INSERT INTO {}.t_nokey VALUES ({}, 'w')", db_, s % 100); break;
      }
      Status st = (*conn)->Execute(sql);
      if (!st.ok()) { error_ = st.ToString(); return; }
      ++committed_;
      std::this_thread::sleep_for(milliseconds(2));  // about 300 transactions a second
    }
  }
  std::string db_;
  uint32_t seed_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::atomic<int> committed_{0};
  std::string error_;
};

uint32_t Seed() {
  uint32_t seed = std::random_device{}();
  if (const char* s = std::getenv("SLUICE_TEST_SEED")) seed = static_cast<uint32_t>(std::stoul(s));
  std::cout << "[ seed ] SLUICE_TEST_SEED=" << seed << "\n";
  return seed;
}

TEST(SnapshotParallel, EveryKeyTypeUnderWriteLoadMatchesAndEachKeyMovesForward) {
  const std::string db = "it_par";
  CreateKeyTables(db, 6000);
  uint32_t seed = Seed();
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {db + ".*"};
  spec.sink_path = dir.File("replica.db");
  spec.chunk_rows = 500;
  spec.snapshot_extra = "workers = 3\nfetch_rows = 200\n";
  std::string sqlite_config = WriteConfig(dir, spec);
  TempDir jdir;
  SluiceConfigSpec jspec = spec;
  jspec.sink_type = "jsonl";
  jspec.sink_path = jdir.File("changes.jsonl");
  jspec.server_id = 5402;
  std::string jsonl_config = WriteConfig(jdir, jspec);

  KeyWriter writer(db, seed);
  writer.Start();
  std::this_thread::sleep_for(milliseconds(200));
  pid_t a = StartSluice({"run", "--config", sqlite_config, "--until-caught-up"}, dir.File("a.log"));
  pid_t b = StartSluice({"run", "--config", jsonl_config, "--until-caught-up"}, jdir.File("b.log"));
  EXPECT_EQ(WaitChild(a, seconds(180)), 0) << ReadFile(dir.File("a.log"));
  EXPECT_EQ(WaitChild(b, seconds(180)), 0) << ReadFile(jdir.File("b.log"));
  writer.Stop();
  ASSERT_EQ(writer.error(), "");
  EXPECT_GT(writer.committed(), 100);
  auto r = RunSluice({"run", "--config", sqlite_config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = RunSluice({"run", "--config", jsonl_config, "--until-caught-up"});
  ASSERT_EQ(j.exit_code, 0) << j.output;
  ExpectReplicaEqualsSource({db + ".*"}, spec.sink_path);
  std::string log = ReadFile(dir.File("a.log"));
  EXPECT_NE(log.find("range(s)"), std::string::npos) << log;

  // JSON lines: per key, the snapshot read comes first and every later change lies after the
  // point it was read at, in increasing binlog order, each change once.
  auto conn = Connect();
  std::map<std::string, std::vector<std::string>> keys;
  for (const std::string& t : kKeyedTables) {
    auto s = LoadTableSchema(*conn, db, t);
    ASSERT_TRUE(s.ok());
    for (size_t k : s->primary_key) keys[t].push_back(s->columns[k].name);
  }
  std::ifstream in(jspec.sink_path);
  std::string line;
  std::map<std::string, std::pair<std::string, uint64_t>> last;  // key -> last (file, pos)
  std::set<std::tuple<std::string, uint64_t, uint64_t>> seen;
  size_t reads = 0, changes = 0;
  std::map<std::string, std::string> replayed;  // key -> v of its last image
  while (std::getline(in, line)) {
    auto rec = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(rec.is_discarded()) << line;
    const std::string table = rec["source"]["table"].get<std::string>();
    if (!keys.count(table)) continue;  // the keyless table has no key to follow
    // One key for every case/accent spelling of a t_str key.
    auto key_of = [&](const nlohmann::json& img) {
      if (table != "t_str") {
        std::string k = table;
        for (const std::string& c : keys.at(table)) k += "|" + img[c].dump();
        return k;
      }
      auto w = conn->Query("SELECT HEX(WEIGHT_STRING(" + conn->Quote(img["k"].get<std::string>()) +
                           " COLLATE utf8mb4_general_ci))");
      return w.ok() ? "t_str|" + *w->rows[0][0] : std::string("t_str|?");
    };
    std::string key = key_of(rec["after"].is_null() ? rec["before"] : rec["after"]);
    // The replica the JSON stream describes: each key's last image.
    if (!rec["after"].is_null()) {
      if (!rec["before"].is_null()) {
        std::string old_key = key_of(rec["before"]);
        if (old_key != key) replayed.erase(old_key);
      }
      replayed[key] = rec["after"]["v"].dump();
    } else {
      replayed.erase(key);
    }
    std::pair<std::string, uint64_t> at{rec["source"]["file"].get<std::string>(), rec["source"]["pos"].get<uint64_t>()};
    const std::string op = rec["op"].get<std::string>();
    if (op == "r") {
      ++reads;
      EXPECT_FALSE(last.count(key)) << "a snapshot read after other records of its key: " << line;
      last[key] = at;
      continue;
    }
    ++changes;
    EXPECT_TRUE(seen.insert({at.first, at.second, rec["source"]["row"].get<uint64_t>()}).second)
        << "delivered twice: " << line;
    auto it = last.find(key);
    if (it != last.end()) {
      // Same file name form, so string order of (file, pos) is binlog order here.
      EXPECT_GE(at, it->second) << "key went back in time: " << line;
      // A key updated in place (op u with the same key) has many records; an old-key half
      // of a key change (d) or new-key half (c) too.
    }
    last[key] = at;
  }
  EXPECT_GT(reads, 40000u);
  EXPECT_GT(changes, 50u);

  // Nothing missing either: replaying the JSON stream gives the source, key by key (keys as
  // the JSON lines spell them: numbers as digits, DECIMAL and temporals as quoted text, binary
  // as quoted base64, t_str folded under its collation).
  std::map<std::string, std::string> source;
  const std::map<std::string, std::string> key_sql = {
      {"t_int", "id"},
      {"t_ubig", "id"},
      {"t_str", "HEX(WEIGHT_STRING(k COLLATE utf8mb4_general_ci))"},
      {"t_uuid", "CONCAT('\"', TO_BASE64(id), '\"')"},
      {"t_dt", "CONCAT('\"', ts, '\"')"},
      {"t_dec", "CONCAT('\"', d, '\"')"},
      {"t_comp", "CONCAT(tenant_id, '|', id)"},
  };
  for (const auto& [table, expr] : key_sql) {
    auto rows = conn->Query(fmt::format("SELECT {}, v FROM {}.{}", expr, db, table));
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    for (const auto& row : rows->rows) source[table + "|" + *row[0]] = *row[1];
  }
  EXPECT_GT(source.size(), 40000u) << "keys at the source";
  size_t shown = 0, differing = 0;
  std::string examples;
  for (const auto& [k, v] : source) {
    auto it = replayed.find(k);
    if (it != replayed.end() && it->second == v) continue;
    ++differing;
    if (shown++ < 5) examples += "\n  " + k + ": source v=" + v + ", JSON " + (it == replayed.end() ? "missing" : "v=" + it->second);
  }
  for (const auto& [k, v] : replayed)
    if (!source.count(k)) {
      ++differing;
      if (shown++ < 10) examples += "\n  " + k + ": in the JSON stream (v=" + v + "), not at the source";
    }
  EXPECT_EQ(differing, 0u) << "the JSON change stream replayed differs from the source (" << source.size()
                           << " source keys):" << examples;
}

TEST(SnapshotParallel, SigkillDuringParallelSnapshotConverges) {
  const std::string db = "it_parkill";
  CreateKeyTables(db, 6000);
  ASSERT_EQ(RunSqlText(fmt::format(
                "USE {0}; CREATE TABLE {0}.big (id INT PRIMARY KEY, payload VARCHAR(100));"
                "INSERT INTO {0}.big SELECT seq, REPEAT('q', seq % 90) FROM seq_1_to_120000;",
                db)),
            0);
  uint32_t seed = Seed();
  std::mt19937 rng(seed);
  int kills = 3;
  if (const char* k = std::getenv("SLUICE_SNAPSHOT_KILLS")) kills = std::atoi(k);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {db + ".*"};
  spec.sink_path = dir.File("replica.db");
  spec.chunk_rows = 5000;
  spec.snapshot_extra = "workers = 2\nfetch_rows = 500\n";
  std::string config = WriteConfig(dir, spec);
  std::string log = dir.File("sluice.log");
  KeyWriter writer(db, seed);
  writer.Start();
  int landed = 0;
  // Ranges seen finished, with their recorded state: a finished range is never read again,
  // so its record must never change.
  std::map<std::string, std::string> finished;
  auto check_finished = [&](const std::string& state) {
    auto j = nlohmann::json::parse(state.empty() ? "{}" : state, nullptr, false);
    if (j.is_discarded() || !j.contains("snapshot")) return;
    for (auto& [name, t] : j["snapshot"]["tables"].items()) {
      if (!t.contains("ranges")) continue;
      for (size_t i = 0; i < t["ranges"].size(); ++i) {
        const auto& r = t["ranges"][i];
        if (!r["done"].get<bool>()) continue;
        std::string id = name + "#" + std::to_string(i);
        auto [it, fresh] = finished.emplace(id, r.dump());
        EXPECT_TRUE(fresh || it->second == r.dump()) << "finished range " << id << " changed:\n"
                                                     << it->second << "\n" << r.dump();
      }
    }
  };
  for (int i = 0; i < kills; ++i) {
    pid_t pid = StartSluice({"run", "--config", config}, log);
    // Kill once the copy has passed a mark: marks spread over the ~168,000 rows, with jitter,
    // so that every kill lands during the snapshot.
    const uint64_t mark = 150000 * (i + 1) / (kills + 1) + rng() % 3000;
    auto deadline = std::chrono::steady_clock::now() + seconds(60);
    bool during = false;
    while (std::chrono::steady_clock::now() < deadline) {
      std::string state = ReadSqliteCheckpoint(spec.sink_path);
      auto j = nlohmann::json::parse(state.empty() ? "{}" : state, nullptr, false);
      if (!j.is_discarded() && j.contains("snapshot")) {
        if (j["snapshot"]["done"].get<bool>()) break;
        uint64_t rows = 0;
        for (auto& [name, t] : j["snapshot"]["tables"].items()) rows += t["rows"].get<uint64_t>();
        if (rows >= mark) {
          during = true;
          break;
        }
      }
      std::this_thread::sleep_for(milliseconds(1));
    }
    kill(pid, SIGKILL);
    if (during) ++landed;
    EXPECT_EQ(WaitChild(pid, seconds(30)), -SIGKILL) << ReadFile(log);
    check_finished(ReadSqliteCheckpoint(spec.sink_path));
  }
  writer.Stop();
  ASSERT_EQ(writer.error(), "");
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output << ReadFile(log);
  ExpectReplicaEqualsSource({db + ".*"}, spec.sink_path);
  check_finished(ReadSqliteCheckpoint(spec.sink_path));
  EXPECT_GE(landed, kills - 1) << "kills did not land during the snapshot\n" << ReadFile(log);
  std::string out = ReadFile(log) + r.output;
  EXPECT_EQ(out.find("ERROR"), std::string::npos) << out;
}

}  // namespace
}  // namespace sluice::testing
