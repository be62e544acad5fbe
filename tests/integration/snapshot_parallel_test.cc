// Parallel, range-planned snapshots: planning partitions every key type; a parallel snapshot
// under a concurrent write load ends equal to the source, with each key's changes delivered
// once and in source order (replaying them gives the source); SIGKILL during a parallel
// snapshot converges on restart.
#include <atomic>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

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
      // split by value, unless that leaves one range far more than its share (t_ubig: all its
      // keys but one near 2^64, one at 0: one range held all but one row, read by one worker).
      EXPECT_GT(n, 0u) << "range " << i << " is empty";
      EXPECT_LE(n, 2 * total / plan->ranges.size() + 1) << "range " << i << " holds more than twice its share";
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

// Keys of a character set other than utf8mb4 (latin1, as many older schemas have): the
// standalone literals that place a key among the range ends (LocateKey, which the hand-off
// rule uses for each streamed change) and that check a range's bounds hold the key's text
// in that character set. They held its UTF-8 bytes read as latin1, so 'ü9995' sorted after
// 'å20796' (a new user's probe): changes were judged against another range's point and lost,
// and a table with such bounds was planned again and again until the run stopped.
TEST(SnapshotPlan, KeysOfOtherCharacterSetsAreLocatedUnderTheirCollation) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_plan_cs; CREATE DATABASE it_plan_cs; USE it_plan_cs;"
                       "CREATE TABLE it_plan_cs.t_lat (k VARCHAR(20) CHARACTER SET latin1 COLLATE "
                       "latin1_swedish_ci PRIMARY KEY, v INT);"
                       "INSERT INTO it_plan_cs.t_lat SELECT CONCAT(ELT(seq % 6 + 1, 'a', 'ü', 'å', 'y', 'Ö', 'é'), "
                       "LPAD(seq, 6, '0')), 0 FROM seq_1_to_3000;"
                       "CREATE TABLE it_plan_cs.t_utf16 (k VARCHAR(20) CHARACTER SET utf16 COLLATE "
                       "utf16_general_ci PRIMARY KEY, v INT);"
                       "INSERT INTO it_plan_cs.t_utf16 SELECT k, v FROM it_plan_cs.t_lat;"),
            0);
  auto conn = Connect();
  ASSERT_NE(conn, nullptr);
  for (const char* table : {"t_lat", "t_utf16"}) {
    SCOPED_TRACE(table);
    auto schema = LoadTableSchema(*conn, "it_plan_cs", table);
    ASSERT_TRUE(schema.ok()) << schema.status().ToString();
    PlanOptions po;
    po.chunk_rows = 100;
    po.max_ranges_per_table = 30;
    auto plan = PlanTable(*conn, *schema, po);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_GE(plan->ranges.size(), 20u);
    std::vector<std::vector<std::string>> ends;
    for (const auto& x : plan->ranges) ends.push_back(x.upper);
    for (size_t i = 0; i < plan->ranges.size(); ++i) {
      const RangeProgress& r = plan->ranges[i];
      if (!r.lower.empty() && !r.upper.empty()) {  // what the workers check (BoundsIncreasing)
        auto q = conn->Query("SELECT " + *KeyTuple(*conn, *schema, r.lower, true) + " < " +
                             *KeyTuple(*conn, *schema, r.upper, true));
        ASSERT_TRUE(q.ok()) << q.status().ToString();
        EXPECT_EQ(q->rows[0][0], std::optional<std::string>("1")) << "range " << i << ": " << r.lower[0] << " .. "
                                                                  << r.upper[0];
      }
    }
    // Every key of the table is located in the range whose column comparison holds it.
    auto keys = conn->Query(fmt::format("SELECT k FROM it_plan_cs.{} ORDER BY k", table));
    ASSERT_TRUE(keys.ok());
    size_t range = 0, wrong = 0;
    for (const auto& row : keys->rows) {
      const std::vector<std::string> key = {*row[0]};
      while (range + 1 < plan->ranges.size() && !plan->ranges[range].upper.empty()) {
        auto in = conn->Query(fmt::format("SELECT COUNT(*) FROM it_plan_cs.{} WHERE k = {} AND k <= {}", table,
                                          *KeyTuple(*conn, *schema, key, false),
                                          *KeyTuple(*conn, *schema, plan->ranges[range].upper, false)));
        ASSERT_TRUE(in.ok());
        if (in->rows[0][0] == std::optional<std::string>("1")) break;
        ++range;
      }
      auto at = LocateKey(*conn, *schema, key, ends);
      ASSERT_TRUE(at.ok()) << at.status().ToString();
      if (*at != range && wrong++ < 5) ADD_FAILURE() << "key " << key[0] << " located in range " << *at << ", not " << range;
    }
    EXPECT_EQ(wrong, 0u);
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

// A parallel snapshot of every key type under KeyWriter's load into SQLite and JSON lines, both
// run to --until-caught-up: the replica equals the source, and the JSON stream holds each key's
// changes once, in source order, never going back. `snapshot_extra`: more [snapshot] lines.
void CheckEveryKeyTypeUnderWriteLoad(const std::string& db, int rows, const std::string& snapshot_extra,
                                     int jsonl_server_id, std::string* sqlite_log) {
  CreateKeyTables(db, rows);
  uint32_t seed = TestSeed();
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {db + ".*"};
  spec.sink_path = dir.File("replica.db");
  spec.chunk_rows = 500;
  spec.snapshot_extra = "workers = 3\nfetch_rows = 200\n" + snapshot_extra;
  std::string sqlite_config = WriteConfig(dir, spec);
  TempDir jdir;
  SluiceConfigSpec jspec = spec;
  jspec.sink_type = "jsonl";
  jspec.sink_path = jdir.File("changes.jsonl");
  jspec.server_id = jsonl_server_id;
  std::string jsonl_config = WriteConfig(jdir, jspec);

  KeyWriter writer(db, seed);
  writer.Start();
  std::this_thread::sleep_for(milliseconds(200));
  pid_t a = StartSluice({"run", "--config", sqlite_config, "--until-caught-up"}, dir.File("a.log"));
  pid_t b = StartSluice({"run", "--config", jsonl_config, "--until-caught-up"}, jdir.File("b.log"));
  EXPECT_EQ(WaitChild(a, seconds(180)), 0) << ReadFile(dir.File("a.log"));
  EXPECT_EQ(WaitChild(b, seconds(180)), 0) << ReadFile(jdir.File("b.log"));
  {
    // --until-caught-up ends at or after the latest point a range was read at: the writer ran
    // through the copy, so ranges read later hold changes the earlier ones must get from the
    // stream before the run ends (a target read before the copy stopped short of them).
    std::ifstream copied(jspec.sink_path);
    std::string line;
    std::pair<std::string, uint64_t> latest;
    while (std::getline(copied, line)) {
      auto rec = nlohmann::json::parse(line, nullptr, false);
      if (rec.is_discarded() || rec["op"] != "r") continue;
      latest = std::max(latest, std::pair<std::string, uint64_t>{rec["source"]["file"].get<std::string>(),
                                                                 rec["source"]["pos"].get<uint64_t>()});
    }
    const std::string blog = ReadFile(jdir.File("b.log"));
    std::smatch m;
    ASSERT_TRUE(std::regex_search(blog, m, std::regex("stopped at ([^: ]+):([0-9]+)"))) << blog;
    EXPECT_GE((std::pair<std::string, uint64_t>{m[1].str(), std::stoull(m[2].str())}), latest)
        << "the run stopped before the latest snapshot point " << latest.first << ":" << latest.second << "\n"
        << blog;
  }
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
  *sqlite_log = log + ReadFile(jdir.File("b.log"));

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
    // Each change continues its key's history: its before image is the key's last image in
    // the stream so far (a change also in the copy, or one missing, breaks the chain).
    if (!rec["before"].is_null()) {
      auto prev = replayed.find(key_of(rec["before"]));
      if (prev != replayed.end()) {
        EXPECT_EQ(prev->second, rec["before"]["v"].dump()) << "a change whose before image is not its key's last image: " << line;
      }
    }
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
  EXPECT_GT(reads, static_cast<size_t>(rows) * 7 * 9 / 10) << "snapshot reads in the JSON stream";
  EXPECT_GT(changes, static_cast<size_t>(rows) / 120) << "changes streamed after the snapshot (the load was too light?)";

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
  EXPECT_GT(source.size(), static_cast<size_t>(rows) * 7 * 9 / 10) << "keys at the source";
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

TEST(SnapshotParallel, EveryKeyTypeUnderWriteLoadMatchesAndEachKeyMovesForward) {
  std::string log;
  CheckEveryKeyTypeUnderWriteLoad("it_par", 6000, "", 5402, &log);
}

// consistency = "watermark" (snapshot/watermark.h), the same checks on a smaller copy (the
// writer's keys 1..6000 still span every range): every read transaction takes its low
// watermark's point, and rows changed inside its window are left to the stream.
TEST(SnapshotParallel, WatermarkConsistencyUnderWriteLoadMatchesAndEachKeyMovesForward) {
  std::string log;
  // Besides the load, every window changes 1 key in 40 of t_int (before and after the read
  // view is made): those rows must be left out of every copy and come from the stream.
  setenv("SLUICE_TEST_WATERMARK_WINDOW_SQL", "UPDATE it_parwm.t_int SET v = v + 1000 WHERE MOD(id, 40) = 0", 1);
  CheckEveryKeyTypeUnderWriteLoad("it_parwm", 1500, "consistency = \"watermark\"\n", 5405, &log);
  unsetenv("SLUICE_TEST_WATERMARK_WINDOW_SQL");
  EXPECT_NE(log.find("watermark read at"), std::string::npos) << "the watermark path was not taken:\n" << log;
  // How much the windows caught (load dependent, so printed, not asserted: the unit tests in
  // snapshot/watermark_test.cc pin the filtering itself).
  size_t windows = 0, keys = 0, dropped = 0, at = 0;
  while ((at = log.find("watermark read at", at)) != std::string::npos) {
    ++windows;
    size_t k = log.find(" transaction(s), ", at);
    if (k != std::string::npos) keys += std::strtoul(log.c_str() + k + 17, nullptr, 10);
    ++at;
  }
  const std::string kDropped = " row(s) changed inside watermark windows";
  for (at = log.find(kDropped); at != std::string::npos; at = log.find(kDropped, at + 1)) {
    size_t start = log.rfind(' ', at - 1);
    dropped += std::strtoul(log.c_str() + start + 1, nullptr, 10);
  }
  std::cout << "[ info ] " << windows << " watermark windows, " << keys << " key(s) changed inside them, "
            << dropped << " row(s) left to the stream\n";
  // Each of the two copies leaves the 37 t_int rows its windows changed to the stream, less
  // those the writer deleted before the window (it deletes id = 3s - 4999, a multiple of 40
  // now and then: 73 of 74 once in the ASan shard).
  EXPECT_GE(dropped, 2u * 37 - 8) << "each of the two copies leaves the ~37 t_int rows its windows changed to the stream";
  // The signal table never reaches the sink.
  EXPECT_EQ(log.find("sluice.watermarks copied"), std::string::npos) << log;
}

// Without the privileges the signal table needs, the run stops before copying anything, and
// the message names the table, the privilege and the fix.
TEST(SnapshotParallel, WatermarkWithoutWritePrivilegeNamesThePrivilege) {
  const std::string db = "it_wmpriv";
  auto server = TestServer();
  ASSERT_EQ(RunSqlText(fmt::format(
                "DROP DATABASE IF EXISTS {0}; CREATE DATABASE {0};"
                "CREATE TABLE {0}.t (id INT PRIMARY KEY, v INT); INSERT INTO {0}.t VALUES (1, 1);"
                "DROP DATABASE IF EXISTS it_wmsig;"
                "DROP USER IF EXISTS 'it_wm'@'127.0.0.1'; CREATE USER 'it_wm'@'127.0.0.1' IDENTIFIED BY 'wm-pw';"
                "GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'it_wm'@'127.0.0.1';",
                db)),
            0);
  setenv("SLUICE_IT_WM_PW", "wm-pw", 1);
  TempDir dir;
  const std::string config = dir.File("wm.toml");
  const auto write_config = [&](const std::string& more_tables) {
    std::ofstream(config) << fmt::format(
        "[source]\nhost = \"{}\"\nport = {}\nuser = \"it_wm\"\npassword_env = \"SLUICE_IT_WM_PW\"\n"
        "server_id = 5407\ntables = [\"{}.*\"{}]\n"
        "[snapshot]\nconsistency = \"watermark\"\nwatermark_table = \"it_wmsig.marks\"\n"
        "[sink]\npath = \"{}\"\n",
        server.host, server.port, db, more_tables, dir.File("wm.db"));
  };
  write_config("");
  // No table and no CREATE: the message says which privilege and gives the DDL.
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cannot create the signal table it_wmsig.marks"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("GRANT CREATE, INSERT, UPDATE ON `it_wmsig`.*"), std::string::npos) << r.output;
  // The table exists, but the user may only read it.
  ASSERT_EQ(RunSqlText("CREATE DATABASE it_wmsig; CREATE TABLE it_wmsig.marks (id INT UNSIGNED NOT NULL PRIMARY KEY,"
                       " token VARCHAR(64) NOT NULL, written_at DATETIME(6) NOT NULL) ENGINE=InnoDB;"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cannot write the watermark signal table it_wmsig.marks"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("GRANT INSERT, UPDATE ON `it_wmsig`.`marks`"), std::string::npos) << r.output;
  // Granted: the copy runs, and the signal table (selected by the pattern) stays out of the sink.
  ASSERT_EQ(RunSqlText("GRANT INSERT, UPDATE ON it_wmsig.marks TO 'it_wm'@'127.0.0.1';"), 0);
  write_config(", \"it_wmsig.*\"");
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  sqlite3* sdb = nullptr;
  ASSERT_EQ(sqlite3_open_v2(dir.File("wm.db").c_str(), &sdb, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(sdb, "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'it_wmsig%'", -1, &q, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(q, 0), 0) << "the signal table reached the sink";
  sqlite3_finalize(q);
  sqlite3_close_v2(sdb);
  ExpectReplicaEqualsSource({db + ".*"}, dir.File("wm.db"));
  (void)RunSqlText("DROP USER IF EXISTS 'it_wm'@'127.0.0.1'; DROP DATABASE IF EXISTS it_wmsig;");
}

TEST(SnapshotParallel, SigkillDuringParallelSnapshotConverges) {
  const std::string db = "it_parkill";
  CreateKeyTables(db, 6000);
  ASSERT_EQ(RunSqlText(fmt::format(
                "USE {0}; CREATE TABLE {0}.big (id INT PRIMARY KEY, payload VARCHAR(100));"
                "INSERT INTO {0}.big SELECT seq, REPEAT('q', seq % 90) FROM seq_1_to_120000;",
                db)),
            0);
  uint32_t seed = TestSeed();
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
