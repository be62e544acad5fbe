// MariaDB as a destination (issue 10, part 2; sink/mysql_sink.h). A second throwaway MariaDB
// ("dest") is started once for the suite beside the usual test server (the source); sluice
// runs as a child process with [sink] type = "mysql", and every check ends with
// CompareTablesMysql (what `sluice compare` prints) finding the destination equal to the
// source value by value.
//   SakilaAndMixedDml     snapshot, then inserts/updates/deletes, key changes (single and
//                         composite keys), one key inserted, deleted, inserted and updated
//                         in one transaction (the sink batches by key), a keyless table, a multi-statement and a
//                         rolled-back transaction, CREATE/ALTER (add, modify, drop column)/
//                         RENAME/TRUNCATE: destination equals source; `sluice compare` exit 0
//   EveryType             the types test's table and edge values, snapshot and binlog
//   TransfersAreAtomic    a reader polling the destination never sees a transfer half done
//   KillAndRestart        SIGKILL while a 40,000-row transaction is being applied (nothing of
//                         it visible), then the destination restarted mid-stream: equal, and
//                         a keyless log table shows no transaction applied twice
//   SchemaChangeRepeated  MySQL DDL commits before its checkpoint: each schema change (add
//                         column, rename, modify column by rebuild) applied a second time, as
//                         after a crash between the DDL and the checkpoint, finds it done;
//                         the rows and the final definition are intact; with drop_tables a
//                         DROP drops the table (also when repeated)
//   StatementRepeatedAfterACrash  a statement of several renames (a swap through tmp; a
//                         table moved aside and another moved in) stopped by a lock wait
//                         after its last rename or between two, then applied again, as
//                         after a crash: each table holds its own rows (the swap is not
//                         swapped back), none is dropped, no marker table is left
//   SameServerTellsTheDestinationFromTheSource  SameServer (mysql/server_probe.h): the two
//                         servers (both server_id 1) are told apart, the source is found again
//                         through a proxy
//   MysqlDestIsSource     the destination is the source server itself, reached through a
//                         TCP proxy (another port than the source's): `run` refuses (exit 2)
//                         when a database it would write is captured, before writing
//                         anything (binlog end and rows unchanged), `check` fails the same;
//                         a database no pattern captures is copied into as usual
//   MysqlDestIgnoringCase a destination with lower_case_table_names = 1: source tables
//                         differing only in case refused before anything is written (run,
//                         check); case-only renames followed with their rows; a table created
//                         while streaming onto another's name but for case stops the run
#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <tuple>

#include "harness.h"
#include "mysql/schema_loader.h"
#include "mysql/server_probe.h"
#include "tcp_proxy.h"
#include "sink/mysql_sink.h"
#include "types_fixture.h"

namespace sluice::testing {
namespace {


struct DestServer {
  std::string dir;
  int port = 0;
  std::string password;
  bool started = false;
};
DestServer g_dest;

class MysqlDest : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    char d[] = "/tmp/sluice-it-dest.XXXXXX";
    g_dest.dir = mkdtemp(d);
    std::string cmd = "TMPDIR=" + g_dest.dir + "/tmp " + TestServerScript() + " start " + g_dest.dir + " >/dev/null";
    std::filesystem::create_directories(g_dest.dir + "/tmp");
    (void)std::system(cmd.c_str());
    std::ifstream in(g_dest.dir + "/env");
    std::string line;
    while (std::getline(in, line)) {
      auto eq = line.find('=');
      if (eq == std::string::npos) continue;
      std::string key = line.substr(0, eq), value = line.substr(eq + 1);
      if (key.ends_with("_PORT")) g_dest.port = std::atoi(value.c_str());
      if (key.ends_with("_PASSWORD")) g_dest.password = value;
    }
    g_dest.started = g_dest.port > 0;
    setenv("SLUICE_TEST_DEST_PASSWORD", g_dest.password.c_str(), 1);
  }
  static void TearDownTestSuite() {
    (void)std::system((TestServerScript() + " stop " + g_dest.dir).c_str());
    std::error_code ec;
    std::filesystem::remove_all(g_dest.dir, ec);
  }
  void SetUp() override { ASSERT_TRUE(g_dest.started) << "the destination MariaDB did not start (" << g_dest.dir << ")"; }
};

ConnectOptions DestOptions() {
  ConnectOptions o;
  o.host = "127.0.0.1";
  o.port = static_cast<uint16_t>(g_dest.port);
  o.user = "sluice";
  o.password = g_dest.password;
  return o;
}

std::unique_ptr<Connection> DestConnect() {
  auto c = Connection::Connect(DestOptions());
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

// A config for the test server as source and the destination server as sink; `meta` is the
// destination database of the checkpoint, `map` extra [sink.mysql.databases] lines.
std::string WriteMysqlConfig(const TempDir& dir, const std::vector<std::string>& tables, int server_id,
                             const std::string& meta, const std::string& map = "") {
  ConnectOptions o = TestServer();
  std::ostringstream t;
  t << "[source]\nhost = \"" << o.host << "\"\nport = " << o.port << "\nuser = \"" << o.user
    << "\"\npassword_env = \"SLUICE_TEST_MYSQL_PASSWORD\"\nserver_id = " << server_id << "\ntables = [";
  for (size_t i = 0; i < tables.size(); ++i) t << (i ? ", \"" : "\"") << tables[i] << "\"";
  t << "]\n\n[snapshot]\nchunk_rows = 1000\nallow_inconsistent_read = [\"sakila.film_text\"]  # MyISAM\n\n[sink]\ntype = \"mysql\"\ngroup_max_ms = 50\n\n[sink.mysql]\n"
    << "host = \"127.0.0.1\"\nport = " << g_dest.port
    << "\nuser = \"sluice\"\npassword_env = \"SLUICE_TEST_DEST_PASSWORD\"\ndatabase = \"" << meta << "\"\n";
  if (!map.empty()) t << "\n[sink.mysql.databases]\n" << map << "\n";
  std::string path = dir.File("sluice.toml");
  std::ofstream(path) << t.str();
  return path;
}

MysqlSinkOptions DestSinkOptions(const std::map<std::string, std::string>& map = {}) {
  MysqlSinkOptions o;
  o.connect = DestOptions();
  o.databases = map;
  return o;
}

// Empty when every selected table is equal, else what differs.
std::string Differences(const std::vector<std::string>& tables, const std::map<std::string, std::string>& map = {}) {
  auto r = cli::CompareTablesMysql(TestServer(), TableFilter{tables, {}}, DestSinkOptions(map));
  if (!r.ok()) return "compare failed: " + r.status().ToString();
  std::string out;
  for (const auto& t : *r) {
    if (t.equal()) continue;
    out += fmt::format("{}: source {} rows, destination {}; {} missing, {} extra, {} differing\n", t.table,
                       t.source_rows, t.replica_rows, t.missing, t.extra, t.differing);
    for (const auto& e : t.examples) out += "    " + e + "\n";
  }
  if (r->empty()) out = "no table matched";
  return out;
}

bool WaitEqual(const std::vector<std::string>& tables, std::chrono::seconds timeout, std::string* last) {
  auto until = std::chrono::steady_clock::now() + timeout;
  do {
    *last = Differences(tables);
    if (last->empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (std::chrono::steady_clock::now() < until);
  return false;
}

TEST_F(MysqlDest, SakilaAndMixedDml) {
  const std::string fixtures = std::string(SLUICE_SOURCE_DIR) + "/../shared/fixtures/sakila";
  // Sakila as another test left it (loaded when missing: loading takes ~10 s); whatever its
  // rows, the destination must equal it.
  auto src = Connect();
  ASSERT_NE(src, nullptr);
  auto have = src->Query("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'sakila' AND TABLE_NAME = 'film'");
  ASSERT_TRUE(have.ok()) << have.status().ToString();
  if (have->rows[0][0] != std::optional<std::string>("1")) {
    ASSERT_EQ(RunSqlFile(fixtures + "/sakila-schema.sql"), 0);
    ASSERT_EQ(RunSqlFile(fixtures + "/sakila-data.sql"), 0);
  }
  ASSERT_EQ(RunSqlText("DROP TABLE IF EXISTS sakila.it_kv, sakila.it_kv2, sakila.it_nokey, sakila.it_new;"
                       "CREATE TABLE sakila.it_kv (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b));"
                       "CREATE TABLE sakila.it_nokey (x INT, y VARCHAR(10) CHARACTER SET latin1);"
                       "INSERT INTO sakila.it_kv VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3);"
                       "INSERT INTO sakila.it_nokey VALUES (1, 'a'), (1, 'a'), (2, 'A'), (3, NULL);"),
            0);
  TempDir dir;
  // Sakila goes to the destination database "sakila_copy" (sink.mysql.databases).
  const std::map<std::string, std::string> map = {{"sakila", "sakila_copy"}};
  std::string config = WriteMysqlConfig(dir, {"sakila.*"}, 5411, "it_meta_sakila", "sakila = \"sakila_copy\"");
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << "snapshot of sakila into MariaDB: " << r.output;
  std::string diff = Differences({"sakila.*"}, map);
  ASSERT_EQ(diff, "") << "after the snapshot";

  ASSERT_EQ(RunSqlText(R"(
INSERT INTO actor (first_name, last_name) VALUES ('ADA', 'LOVELACE'), ('ALAN', 'TURING');
UPDATE actor SET last_name = 'O''NEIL\\' WHERE actor_id = 5;
DELETE FROM film_actor WHERE actor_id = 1 AND film_id IN (1, 23);
UPDATE film SET rental_rate = rental_rate + 1.01, description = CONCAT(description, ' é') WHERE film_id <= 20;
UPDATE it_kv SET a = 10 WHERE a = 1;
UPDATE it_kv SET b = 'z', v = 20 WHERE a = 2;
DELETE FROM it_kv WHERE a = 3;
UPDATE it_kv SET a = 3, b = 'c', v = 99 WHERE a = 10;
UPDATE it_nokey SET y = 'b' WHERE x = 1 LIMIT 1;
DELETE FROM it_nokey WHERE x = 2;
UPDATE it_nokey SET y = 'n' WHERE y IS NULL;
START TRANSACTION;
INSERT INTO category (name) VALUES ('Westerns');
UPDATE customer SET email = NULL, active = 0 WHERE customer_id BETWEEN 1 AND 50;
DELETE FROM payment WHERE payment_id BETWEEN 1 AND 30;
COMMIT;
START TRANSACTION;
INSERT INTO language (name) VALUES ('Klingon');
DELETE FROM film_text WHERE film_id < 500;
ROLLBACK;
CREATE TABLE it_new (id BIGINT UNSIGNED PRIMARY KEY, t TEXT, d DATETIME(3) DEFAULT '2000-01-01 00:00:00.000');
INSERT INTO it_new (id, t) VALUES (18446744073709551615, 'max'), (0, 'zero');
START TRANSACTION;
INSERT INTO it_new (id, t) VALUES (5, 'a');
DELETE FROM it_new WHERE id = 5;
INSERT INTO it_new (id, t) VALUES (5, 'b');
UPDATE it_new SET t = 'c' WHERE id = 0;
DELETE FROM it_new WHERE id = 0;
INSERT INTO it_new (id, t) VALUES (6, 'x');
UPDATE it_new SET t = 'y' WHERE id = 5;
COMMIT;
ALTER TABLE it_kv ADD COLUMN note VARCHAR(20) NOT NULL DEFAULT 'n/a';
INSERT INTO it_kv VALUES (4, 'd', 4, 'new');
ALTER TABLE it_kv MODIFY v BIGINT;
UPDATE it_kv SET v = 9000000000 WHERE a = 4;
ALTER TABLE it_kv DROP COLUMN note;
RENAME TABLE it_kv TO it_kv2;
INSERT INTO it_kv2 VALUES (5, 'e', 5);
TRUNCATE TABLE it_nokey;
INSERT INTO it_nokey VALUES (7, 'after');
)", "sakila"), 0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << "streaming the mixed DML and DDL into MariaDB: " << r.output;
  EXPECT_EQ(Differences({"sakila.*"}, map), "") << "after the mixed DML, key changes and schema changes";
  auto dest = DestConnect();
  ASSERT_NE(dest, nullptr);
  auto kv = dest->Query("SELECT COUNT(*) FROM sakila_copy.it_kv2");
  ASSERT_TRUE(kv.ok()) << "the renamed table exists in the destination: " << kv.status().ToString();
  // The CLI says the same.
  auto cmp = RunSluice({"compare", "--config", config});
  EXPECT_EQ(cmp.exit_code, 0) << cmp.output;
  EXPECT_NE(cmp.output.find("OK:"), std::string::npos) << cmp.output;
}

TEST_F(MysqlDest, EveryType) {
  ASSERT_EQ(RunSqlText(kCreate), 0);
  ASSERT_EQ(RunSqlText(kRows), 0);
  TempDir dir;
  std::string config = WriteMysqlConfig(dir, {"it_types.t"}, 5412, "it_meta_types");
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << "snapshot of every type into MariaDB: " << r.output;
  EXPECT_EQ(Differences({"it_types.t"}), "") << "rows 1-5 through the snapshot";

  // The same values through the binlog (rows 101-105), then updates, a key change, a delete.
  ASSERT_EQ(RunSqlText("SET SESSION sql_mode = ''; INSERT INTO it_types.t SELECT id + 100, ti, tiu, si, siu, mi, miu, i, iu, bi, biu,"
                       " dec1, dec2, dec3, dec4, f, d, b1, b13, b64, y, dt, tm, tm6, tm2, dtm, dtm3, dtm6, ts, ts6,"
                       " c, c255, vc, c_latin1, c_utf8mb3, bin, vbin, tt, tx, mt, lt, tb, bl, mb, lb, e, s, j, g, pt"
                       " FROM it_types.t WHERE id <= 5;"
                       "UPDATE it_types.t a JOIN it_types.t b ON b.id = 103 SET a.ti = b.ti, a.biu = b.biu, a.dec1 = b.dec1,"
                       " a.f = b.f, a.d = b.d, a.b64 = b.b64, a.tm6 = b.tm6, a.dtm6 = b.dtm6, a.ts6 = b.ts6, a.vc = b.vc,"
                       " a.vbin = b.vbin, a.lt = b.lt, a.lb = b.lb, a.e = b.e, a.s = b.s, a.j = b.j, a.g = b.g WHERE a.id = 101;"
                       "UPDATE it_types.t SET ti = NULL, vc = NULL, lb = NULL, j = NULL, g = NULL WHERE id = 103;"
                       "UPDATE it_types.t SET id = 1000 WHERE id = 104;"
                       "DELETE FROM it_types.t WHERE id = 102;"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << "streaming every type into MariaDB: " << r.output;
  EXPECT_EQ(Differences({"it_types.t"}), "") << "rows 101-105 through the binlog, updates, key change, delete";
  // The column definitions are the source's one to one.
  auto dest = DestConnect();
  ASSERT_NE(dest, nullptr);
  auto src = Connect();
  const std::string q =
      "SELECT COLUMN_NAME, COLUMN_TYPE, IFNULL(CHARACTER_SET_NAME, ''), IFNULL(COLLATION_NAME, ''), IS_NULLABLE "
      "FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'it_types' AND TABLE_NAME = 't' ORDER BY ORDINAL_POSITION";
  auto a = src->Query(q);
  auto b = dest->Query(q);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->rows.size(), b->rows.size());
  for (size_t i = 0; i < a->rows.size(); ++i) EXPECT_EQ(a->rows[i], b->rows[i]) << "column " << *a->rows[i][0];
}

TEST_F(MysqlDest, TransfersAreAtomic) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_atom; CREATE DATABASE it_atom;"
                       "CREATE TABLE it_atom.a (id INT PRIMARY KEY, bal INT NOT NULL);"
                       "CREATE TABLE it_atom.b (id INT PRIMARY KEY, bal INT NOT NULL);"
                       "INSERT INTO it_atom.a VALUES (1, 500); INSERT INTO it_atom.b VALUES (1, 500);"),
            0);
  TempDir dir;
  std::string config = WriteMysqlConfig(dir, {"it_atom.*"}, 5413, "it_meta_atom");
  pid_t pid = StartSluice({"run", "--config", config}, dir.File("log"));
  std::string last;
  ASSERT_TRUE(WaitEqual({"it_atom.*"}, std::chrono::seconds(30), &last)) << last << ReadFile(dir.File("log"));

  // Each source transaction moves an amount from one table's row to the other's; the sum
  // is 1000 in every committed state.
  std::atomic<bool> done{false};
  std::atomic<int> polls{0}, torn{0};
  std::string torn_example;
  std::thread reader([&] {
    auto dest = DestConnect();
    if (!dest) return;
    while (!done) {
      auto r = dest->Query("SELECT (SELECT SUM(bal) FROM it_atom.a) + (SELECT SUM(bal) FROM it_atom.b)");
      if (!r.ok()) continue;
      ++polls;
      if (r->rows[0][0] != std::optional<std::string>("1000")) {
        if (torn++ == 0) torn_example = r->rows[0][0].value_or("NULL");
      }
    }
  });
  std::string sql;
  for (int i = 1; i <= 300; ++i) {
    int amount = (i * 37) % 101 - 50;
    sql += fmt::format("START TRANSACTION; UPDATE it_atom.a SET bal = bal - {0} WHERE id = 1; "
                       "UPDATE it_atom.b SET bal = bal + {0} WHERE id = 1; COMMIT;\n",
                       amount);
  }
  ASSERT_EQ(RunSqlText(sql), 0);
  bool equal = WaitEqual({"it_atom.*"}, std::chrono::seconds(60), &last);
  done = true;
  reader.join();
  kill(pid, SIGTERM);
  EXPECT_EQ(WaitChild(pid), 0) << ReadFile(dir.File("log"));
  EXPECT_TRUE(equal) << last << ReadFile(dir.File("log"));
  EXPECT_GT(polls.load(), 20) << "the reader polled the destination while 300 transfers were applied";
  EXPECT_EQ(torn.load(), 0) << "a reader saw a sum of " << torn_example << " instead of 1000 (part of a transaction)";
}

// A key column changed to another collation (a new user's probe): the destination took the
// new definition as matching its own (collations were not compared), so 'A' overwrote 'a'.
TEST_F(MysqlDest, KeyCollationChangeIsFollowed) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_coll; CREATE DATABASE it_coll;"
                       "CREATE TABLE it_coll.t (code VARCHAR(10) PRIMARY KEY, v INT) COLLATE utf8mb4_general_ci;"
                       "INSERT INTO it_coll.t VALUES ('a', 1), ('b', 2);"
                       "CREATE TABLE it_coll.w (code VARCHAR(10) PRIMARY KEY, v INT) COLLATE utf8mb4_general_ci;"
                       "INSERT INTO it_coll.w VALUES ('a', 1);"),
            0);
  TempDir dir;
  std::string config = WriteMysqlConfig(dir, {"it_coll.*"}, 5417, "it_meta_coll");
  ProcessResult r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("ALTER TABLE it_coll.t MODIFY code VARCHAR(10) COLLATE utf8mb4_bin;"
                       "INSERT INTO it_coll.t VALUES ('A', 3);"
                       "ALTER TABLE it_coll.w CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;"
                       "INSERT INTO it_coll.w VALUES ('A', 2);"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Differences({"it_coll.*"}), "");
  auto dest = DestConnect();
  ASSERT_NE(dest, nullptr);
  auto rows = dest->Query("SELECT GROUP_CONCAT(code, ':', v ORDER BY v) FROM it_coll.t");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_EQ(rows->rows[0][0], std::optional<std::string>("a:1,b:2,A:3"));
}

TEST_F(MysqlDest, KillAndRestart) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_fault; CREATE DATABASE it_fault;"
                       "CREATE TABLE it_fault.big (id INT PRIMARY KEY, v VARCHAR(100), n INT);"
                       "CREATE TABLE it_fault.log (txn INT, rows_in_txn INT);"),
            0);
  TempDir dir;
  std::string config = WriteMysqlConfig(dir, {"it_fault.*"}, 5414, "it_meta_fault");
  // big exists in the destination as sluice would create it (it is used as it is), so that
  // a key of it can be held below before any row arrives.
  auto dest = DestConnect();
  ASSERT_NE(dest, nullptr);
  ASSERT_TRUE(dest->Execute("DROP DATABASE IF EXISTS it_fault").ok());
  ASSERT_TRUE(dest->Execute("CREATE DATABASE it_fault").ok());
  ASSERT_TRUE(dest->Execute("CREATE TABLE it_fault.big (id INT PRIMARY KEY, v VARCHAR(100), n INT)").ok());
  pid_t pid = StartSluice({"run", "--config", config}, dir.File("log1"));
  std::string last;
  ASSERT_TRUE(WaitEqual({"it_fault.*"}, std::chrono::seconds(30), &last)) << last << ReadFile(dir.File("log1"));
  // Empty tables are equal before the snapshot ends (big exists already): wait for the stream,
  // or the large transaction below could be copied by the snapshot, whose ranges commit one by
  // one (an ASan run saw 17,000 of its 20,000 rows committed that way).
  bool streaming = false;
  for (int i = 0; i < 600 && !streaming; ++i) {
    streaming = ReadFile(dir.File("log1")).find("streaming from") != std::string::npos;
    if (!streaming) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(streaming) << "the first run starts streaming: " << ReadFile(dir.File("log1"));

  // One large source transaction; sluice is killed while its INSERTs run in the destination,
  // half-way through: key rows / 2 is inserted by a destination transaction left open, so
  // sluice's insert of that key waits on its lock until the kill (watching for the INSERTs
  // alone left a window that polls could miss under load).
  const int rows = SluiceSanitized() ? 20000 : 40000;
  auto blocker = DestConnect();
  ASSERT_NE(blocker, nullptr);
  ASSERT_TRUE(blocker->Execute("BEGIN").ok());
  Status held = blocker->Execute(fmt::format("INSERT INTO it_fault.big VALUES ({}, 'held', 0)", rows / 2));
  ASSERT_TRUE(held.ok()) << held.ToString();
  ASSERT_EQ(RunSqlText(fmt::format("START TRANSACTION; INSERT INTO it_fault.big SELECT seq, REPEAT('x', 90), 0 FROM seq_1_to_{0};"
                                   "INSERT INTO it_fault.log VALUES (1, {0}); COMMIT;",
                                   rows),
                       "it_fault"),
            0);
  bool in_flight = false;
  for (int i = 0; i < 3000 && !in_flight; ++i) {
    auto r = dest->Query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'INSERT INTO `it_fault`.`big`%' "
                         "AND TIME_MS > 300");
    in_flight = r.ok() && r->rows[0][0] != std::optional<std::string>("0");
    if (!in_flight) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  EXPECT_EQ(WaitChild(pid), -SIGKILL);
  ASSERT_TRUE(blocker->Execute("ROLLBACK").ok());
  EXPECT_TRUE(in_flight) << "an INSERT of the large transaction was seen waiting for the held key in the destination";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the server rolls back the killed session
  auto seen = dest->Query("SELECT COUNT(*) FROM it_fault.big");
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(seen->rows[0][0], std::optional<std::string>("0")) << "none of a transaction whose apply was killed is visible";

  // Run again; while it streams small transactions, the destination server restarts.
  pid = StartSluice({"run", "--config", config}, dir.File("log2"));
  streaming = false;
  for (int i = 0; i < 300 && !streaming; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    streaming = ReadFile(dir.File("log2")).find("streaming from") != std::string::npos;
  }
  ASSERT_TRUE(streaming) << "the second run starts streaming: " << ReadFile(dir.File("log2"));
  std::thread writer([&] {
    for (int t = 2; t <= 41; ++t) {
      (void)RunSqlText(fmt::format("START TRANSACTION; INSERT INTO it_fault.log VALUES ({0}, 1);"
                                   "UPDATE it_fault.big SET n = n + 1 WHERE id = {0}; COMMIT;",
                                   t));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int rc = std::system((TestServerScript() + " restart " + g_dest.dir).c_str());
  writer.join();
  EXPECT_EQ(rc, 0) << "restart of the destination MariaDB";
  bool equal = WaitEqual({"it_fault.*"}, std::chrono::seconds(60), &last);
  kill(pid, SIGTERM);
  int exit_code = WaitChild(pid);
  const std::string log = ReadFile(dir.File("log2"));
  EXPECT_TRUE(equal) << "after SIGKILL and a destination restart (the keyless log table shows a transaction "
                        "applied twice as an extra row): "
                     << last << log;
  EXPECT_EQ(exit_code, 0) << log;
  EXPECT_NE(log.find("retrying the same transaction"), std::string::npos)
      << "the destination restart was seen and retried: " << log;
}

// A table copied again beside the stream (`sluice resnapshot`) commits its fetches ready
// together as one destination transaction, as the first snapshot does: it committed each
// fetch on its own, 1.5-2x the first copy's time (BENCHMARKS.md). Counted as COMMITs at the
// destination: 200 fetches of 100 rows.
TEST_F(MysqlDest, ACopyAgainCommitsTheFetchesReadyTogetherAsOne) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_regroup; CREATE DATABASE it_regroup; USE it_regroup;"
                       "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(100));"
                       "INSERT INTO t SELECT seq, REPEAT('x', 90) FROM seq_1_to_20000;"),
            0);
  TempDir dir;
  std::string config = WriteMysqlConfig(dir, {"it_regroup.*"}, 5416, "it_meta_regroup");
  {
    std::string text = ReadFile(config);
    text.replace(text.find("[snapshot]\n"), 11, "[snapshot]\nfetch_rows = 100\nworkers = 2\n");
    std::ofstream(config) << text;
  }
  auto dest = DestConnect();
  ASSERT_NE(dest, nullptr);
  ASSERT_TRUE(dest->Execute("DROP DATABASE IF EXISTS it_regroup").ok());
  ASSERT_TRUE(dest->Execute("DROP DATABASE IF EXISTS it_meta_regroup").ok());
  auto first = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  auto again = RunSluice({"resnapshot", "--config", config, "it_regroup.t"});
  ASSERT_EQ(again.exit_code, 0) << again.output;
  auto commits = [&]() -> long {
    auto r = dest->Query("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'COM_COMMIT'");
    return r.ok() && !r->rows.empty() && r->rows[0][0] ? std::atol(r->rows[0][0]->c_str()) : -1;
  };
  const long before = commits();
  auto copy = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(copy.exit_code, 0) << copy.output;
  const long during = commits() - before;
  ASSERT_GE(before, 0);
  EXPECT_NE(copy.output.find("re-reading table it_regroup.t"), std::string::npos) << copy.output;
  EXPECT_LT(during, 100) << "destination COMMITs while 200 fetches were copied again\n" << copy.output;
  std::string last;
  EXPECT_TRUE(WaitEqual({"it_regroup.*"}, std::chrono::seconds(10), &last)) << last;
}

// Issue 10 (faults) during the snapshot rather than the stream: the destination server is
// killed and started again while chunks are being applied; the coordinator waits for it and
// applies the same chunk again (snapshot/coordinator.cc CallSinkRetrying), so no row is lost
// and none applied twice (the keyless table would show a repeated chunk as extra rows).
// ADD COLUMN ... TEXT DEFAULT <literal> (followed in place): the existing rows take the default
// at the source; the destination column was created without it (TEXT, BLOB and JSON take a
// literal default only as an expression there), and its rows stayed NULL, exit 0 (a new user's
// probe). Now created with DEFAULT (<literal>). (A BLOB's literal default has the table copied
// again: the server converts it in ways sluice does not reproduce.)
TEST_F(MysqlDest, ATextColumnsDefaultFillsTheExistingRows) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_textdef; CREATE DATABASE it_textdef; USE it_textdef;"
                       "CREATE TABLE t (id INT PRIMARY KEY, a INT);"
                       "INSERT INTO t (id, a) VALUES (1, 1), (2, 2);"),
            0);
  TempDir dir;
  const std::string config = WriteMysqlConfig(dir, {"it_textdef.*"}, 5418, "it_meta_textdef");
  auto dest = DestConnect();
  ASSERT_NE(dest, nullptr);
  ASSERT_TRUE(dest->Execute("DROP DATABASE IF EXISTS it_textdef").ok());
  ASSERT_TRUE(dest->Execute("DROP DATABASE IF EXISTS it_meta_textdef").ok());
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("USE it_textdef; ALTER TABLE t ADD COLUMN h TEXT DEFAULT 'abc';"
                       "INSERT INTO t (id, a) VALUES (3, 3);"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string last;
  EXPECT_TRUE(WaitEqual({"it_textdef.*"}, std::chrono::seconds(10), &last)) << last;
  EXPECT_EQ(RowsOf(*dest, "SELECT id, h FROM it_textdef.t ORDER BY id"), "1,abc;2,abc;3,abc");
}

// ALTER ... MODIFY f FLOAT(7,3): the source keeps the floats it stored (its rows are not
// rewritten); the destination's rebuild copied them into a FLOAT(7,3) column, which rounded
// them (1.23456 -> 1.235, 0.0004 -> 0; a new user's probe). FLOAT(M,D)/DOUBLE(M,D) columns
// are created without M,D there, so every value is kept as the binlog carries it.
TEST_F(MysqlDest, FloatsKeepTheirStoredValueWhenTheColumnGainsDecimals) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_floatmd; CREATE DATABASE it_floatmd; USE it_floatmd;"
                       "CREATE TABLE t (id INT PRIMARY KEY, f FLOAT, d DOUBLE);"
                       "INSERT INTO t VALUES (1, -3.5e-39, 1.23456789), (2, 1.23456, 0.0004), (3, 0.0004, -2.5e-300);"),
            0);
  TempDir dir;
  const std::string config = WriteMysqlConfig(dir, {"it_floatmd.*"}, 5419, "it_meta_floatmd");
  auto dest = DestConnect();
  ASSERT_NE(dest, nullptr);
  ASSERT_TRUE(dest->Execute("DROP DATABASE IF EXISTS it_floatmd").ok());
  ASSERT_TRUE(dest->Execute("DROP DATABASE IF EXISTS it_meta_floatmd").ok());
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_EQ(RunSqlText("USE it_floatmd; ALTER TABLE t MODIFY f FLOAT(7,3), MODIFY d DOUBLE(12,4);"
                       "INSERT INTO t VALUES (4, 1.23456, 9.87654321);"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string last;
  EXPECT_TRUE(WaitEqual({"it_floatmd.*"}, std::chrono::seconds(10), &last)) << last;
  const std::string values = "SELECT id, CAST(f AS DOUBLE), CAST(d AS DOUBLE) FROM {} ORDER BY id";
  EXPECT_EQ(RowsOf(*dest, fmt::format(fmt::runtime(values), "it_floatmd.t")),
            RowsOf(*Connect(), fmt::format(fmt::runtime(values), "it_floatmd.t")));
}

// A source database that maps onto the bookkeeping database (sink.mysql.database): its tables
// would go among sluice's own, and a source table named _sluice_checkpoint had its row 1
// overwritten by every checkpoint, exit 0 (a new user's probe). Refused at start (exit 2),
// before anything is written to the destination, and by `check`, naming the key.
TEST_F(MysqlDest, ASourceDatabaseOnTheBookkeepingDatabaseIsRefused) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_bk; CREATE DATABASE it_bk;"
                       "CREATE TABLE it_bk._sluice_checkpoint (id INT NOT NULL PRIMARY KEY, state LONGTEXT NOT NULL);"
                       "INSERT INTO it_bk._sluice_checkpoint VALUES (1, 'user data');"),
            0);
  TempDir dir;
  const std::string config = WriteMysqlConfig(dir, {"it_bk.*"}, 5420, "it_bk");
  auto dest = DestConnect();
  ASSERT_NE(dest, nullptr);
  ASSERT_TRUE(dest->Execute("DROP DATABASE IF EXISTS it_bk").ok());
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  for (const char* word : {"`it_bk`.`_sluice_checkpoint`", "sink.mysql.database", "bookkeeping"})
    EXPECT_NE(r.output.find(word), std::string::npos) << word << "\n" << r.output;
  EXPECT_EQ(RowsOf(*dest, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'it_bk'"), "0");
  r = RunSluice({"check", "--config", config});
  EXPECT_EQ(CheckLine(r.output, "sink table names").rfind("FAIL", 0), 0u) << r.output;
}

TEST_F(MysqlDest, DestinationRestartDuringTheSnapshotIsWaitedOut) {
  const int rows = SluiceSanitized() ? 30000 : 40000;
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_snapfault; CREATE DATABASE it_snapfault;"), 0);
  ASSERT_EQ(RunSqlText(fmt::format("CREATE TABLE it_snapfault.t (id INT PRIMARY KEY, v VARCHAR(40));"
                                   "CREATE TABLE it_snapfault.nokey (id INT, v VARCHAR(40));"
                                   "INSERT INTO it_snapfault.t SELECT seq, CONCAT('row ', seq) FROM seq_1_to_{0};"
                                   "INSERT INTO it_snapfault.nokey SELECT seq, CONCAT('row ', seq) FROM seq_1_to_3000;",
                                   rows),
                       "it_snapfault"),
            0);
  TempDir dir;
  std::string config = WriteMysqlConfig(dir, {"it_snapfault.*"}, 5415, "it_meta_snapfault");
  {
    // Small fetches: many destination transactions, so the restart lands in the middle.
    std::string text = ReadFile(config);
    text.replace(text.find("chunk_rows = 1000"), 17, "chunk_rows = 20000\nfetch_rows = 100\nworkers = 2");
    std::ofstream(config) << text;
  }
  auto dest = DestConnect();
  ASSERT_NE(dest, nullptr);
  // The snapshot is held in the middle on purpose: the table exists as sluice would create it
  // (an existing table of the same shape is used as it is) and the last key is inserted by a
  // transaction left open, so sluice's insert of that key waits on its lock. Restarting once
  // the first rows arrived raced: the snapshot could end before the server went down.
  ASSERT_TRUE(dest->Execute("DROP DATABASE IF EXISTS it_snapfault").ok());
  ASSERT_TRUE(dest->Execute("CREATE DATABASE it_snapfault").ok());
  ASSERT_TRUE(dest->Execute("CREATE TABLE it_snapfault.t (id INT PRIMARY KEY, v VARCHAR(40))").ok());
  auto blocker = DestConnect();
  ASSERT_NE(blocker, nullptr);
  ASSERT_TRUE(blocker->Execute("BEGIN").ok());
  ASSERT_TRUE(blocker->Execute(fmt::format("INSERT INTO it_snapfault.t VALUES ({}, 'held')", rows)).ok());
  pid_t pid = StartSluice({"run", "--config", config}, dir.File("log"));
  bool waiting = false;
  for (int i = 0; i < 3000 && !waiting; ++i) {
    // The same user sees its own threads without PROCESS (which INNODB_TRX would need); a
    // batch insert running for 300 ms is the one waiting.
    auto r = dest->Query(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'INSERT INTO `it_snapfault`.`t`%' "
        "AND TIME_MS > 300");
    waiting = r.ok() && r->rows[0][0] != std::optional<std::string>("0");
    if (!waiting) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(waiting) << "the snapshot's insert of the held key waits on its lock: " << ReadFile(dir.File("log"));
  int rc = std::system((TestServerScript() + " restart " + g_dest.dir).c_str());
  EXPECT_EQ(rc, 0) << "restart of the destination MariaDB";
  blocker.reset();  // its transaction ended with the restart
  std::string last;
  bool equal = WaitEqual({"it_snapfault.*"}, std::chrono::seconds(90), &last);
  kill(pid, SIGTERM);
  int exit_code = WaitChild(pid);
  const std::string log = ReadFile(dir.File("log"));
  EXPECT_TRUE(equal) << "after a destination restart during the snapshot: " << last << log;
  EXPECT_EQ(exit_code, 0) << log;
  EXPECT_NE(log.find("retrying the same chunk"), std::string::npos)
      << "the restart happened while the snapshot applied chunks, and was waited out: " << log;
}

TEST_F(MysqlDest, SchemaChangeRepeated) {
  // Three definitions of one table, read from the source as the stream would have them.
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_redo; CREATE DATABASE it_redo;"
                       "CREATE TABLE it_redo.v1 (id INT PRIMARY KEY, a VARCHAR(10));"
                       "CREATE TABLE it_redo.v2 (id INT PRIMARY KEY, a VARCHAR(10), b INT NOT NULL DEFAULT 7);"
                       "CREATE TABLE it_redo.v3 (id INT PRIMARY KEY, a VARCHAR(20), b INT NOT NULL DEFAULT 7);"),
            0);
  auto src = Connect();
  ASSERT_NE(src, nullptr);
  auto load = [&](const char* from, const char* as) {
    auto t = LoadTableSchema(*src, "it_redo", from);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    TableSchema s = t.ok() ? *t : TableSchema{};
    s.table = as;
    return std::make_shared<const TableSchema>(std::move(s));
  };
  const TableSchemaPtr s1 = load("v1", "t"), s2 = load("v2", "t"), s2r = load("v2", "t2"), s3 = load("v3", "t2");
  ASSERT_FALSE(s1->columns.empty() || s3->columns.empty());
  auto dest = DestConnect();
  ASSERT_NE(dest, nullptr);
  ASSERT_TRUE(dest->Execute("DROP DATABASE IF EXISTS it_redo").ok());
  MysqlSinkOptions o = DestSinkOptions();
  o.database = "it_meta_redo";
  auto sink = MysqlSink::Open(o);
  ASSERT_TRUE(sink.ok()) << sink.status().ToString();
  Transaction txn;
  for (int id = 1; id <= 2; ++id) {
    RowChange c;
    c.op = Op::kCreate;
    c.table = s1;
    c.after = {Value::Int(id), id == 1 ? Value::Text("x") : Value::Null()};
    txn.changes.push_back(std::move(c));
  }
  txn.checkpoint = "c0";
  ASSERT_TRUE((*sink)->Apply(txn).ok());

  SchemaChange add{SchemaChange::Kind::kAlter, s1, s2, {0, 1, -1}, "ALTER TABLE t ADD COLUMN b", {}};
  SchemaChange rename{SchemaChange::Kind::kRename, s2, s2r, {}, "RENAME TABLE t TO t2", {}};
  SchemaChange modify{SchemaChange::Kind::kAlter, s2r, s3, {0, 1, 2}, "ALTER TABLE t2 MODIFY a VARCHAR(20)", {}};
  int n = 0;
  for (const SchemaChange* c : {&add, &rename, &modify}) {
    const std::string ckpt = "c" + std::to_string(++n);
    Status first = (*sink)->ApplySchemaChanges({*c}, ckpt);
    ASSERT_TRUE(first.ok()) << c->ddl << ": " << first.ToString();
    Status again = (*sink)->ApplySchemaChanges({*c}, ckpt);
    EXPECT_TRUE(again.ok()) << c->ddl << " applied again (a crash lost its checkpoint): " << again.ToString();
  }
  auto cols = dest->Query("SELECT GROUP_CONCAT(COLUMN_NAME, ' ', COLUMN_TYPE ORDER BY ORDINAL_POSITION) FROM "
                          "information_schema.COLUMNS WHERE TABLE_SCHEMA = 'it_redo' AND TABLE_NAME = 't2'");
  ASSERT_TRUE(cols.ok());
  EXPECT_EQ(cols->rows[0][0], std::optional<std::string>("id int(11),a varchar(20),b int(11)"));
  auto rows = dest->Query("SELECT GROUP_CONCAT(id, ':', IFNULL(a, 'NULL'), ':', b ORDER BY id) FROM it_redo.t2");
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->rows[0][0], std::optional<std::string>("1:x:7,2:NULL:7")) << "the rows survived every repeat";
  auto old = dest->Query("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'it_redo'");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->rows[0][0], std::optional<std::string>("1")) << "only t2 is left (no t, no rebuild scratch)";
  auto stored = (*sink)->LoadCheckpoint();
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(*stored, std::optional<std::string>("c3"));
  // sink.drop_tables = "drop" (run.cc sets it for every SQL destination): a DROP follows, twice.
  (*sink)->set_drop_tables(true);
  SchemaChange drop{SchemaChange::Kind::kDrop, s3, nullptr, {}, "DROP TABLE t2", {}};
  for (int i = 0; i < 2; ++i) {
    Status st = (*sink)->ApplySchemaChanges({drop}, "c4");
    EXPECT_TRUE(st.ok()) << "DROP TABLE t2, time " << i + 1 << ": " << st.ToString();
  }
  old = dest->Query("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'it_redo'");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->rows[0][0], std::optional<std::string>("0")) << "t2 dropped with sink.drop_tables = drop";
  // A rename of a table the destination no longer has (a crash between the renames of a swap,
  // a new user's probe): the stop names the statement, its position and the repair.
  auto moved = std::make_shared<TableSchema>(*s3);
  moved->table = "t3";
  SchemaChange gone{SchemaChange::Kind::kRename, s3, moved, {}, "RENAME TABLE t2 TO t3", {}};
  gone.source.file = "mariadb-bin.000007";
  gone.source.pos = 4242;
  Status st = (*sink)->ApplySchemaChanges({gone}, "c5");
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("\"RENAME TABLE t2 TO t3\" at binlog mariadb-bin.000007:4242"), std::string::npos)
      << st.ToString();
  EXPECT_NE(st.message().find("sluice resnapshot --config FILE"), std::string::npos) << st.ToString();
}


// A statement of several renames, interrupted (a lock wait standing in for a crash: the renames
// it made stay, MySQL DDL committing on its own) and applied again, as sluice does after a
// restart from the checkpoint before it. Before statement markers the swap applied twice was
// swapped back silently, and a table moved aside then replaced was dropped.
TEST_F(MysqlDest, StatementRepeatedAfterACrash) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_swap; CREATE DATABASE it_swap;"
                       "CREATE TABLE it_swap.a (id INT PRIMARY KEY, v VARCHAR(10));"),
            0);
  auto src = Connect();
  ASSERT_NE(src, nullptr);
  auto shape = LoadTableSchema(*src, "it_swap", "a");
  ASSERT_TRUE(shape.ok()) << shape.status().ToString();
  auto named = [&](const char* table) {
    TableSchema s = *shape;
    s.table = table;
    return std::make_shared<const TableSchema>(std::move(s));
  };
  const TableSchemaPtr a = named("a"), b = named("b"), tmp = named("tmp"), a_old = named("a_old"),
                       a_new = named("a_new");
  auto dest = DestConnect();
  ASSERT_NE(dest, nullptr);
  auto admin = DestConnect();  // holds the locks that interrupt the sink
  ASSERT_NE(admin, nullptr);
  auto contents = [&](const char* table) -> std::string {
    auto r = dest->Query(std::string("SELECT IFNULL(GROUP_CONCAT(id, ':', v ORDER BY id), '') FROM it_swap.") + table);
    return r.ok() ? r->rows[0][0].value_or("NULL") : "missing";
  };
  auto tables = [&]() -> std::string {
    auto r = dest->Query(
        "SELECT GROUP_CONCAT(TABLE_SCHEMA, '.', TABLE_NAME ORDER BY TABLE_SCHEMA, TABLE_NAME) FROM "
        "information_schema.TABLES WHERE TABLE_SCHEMA IN ('it_swap', 'it_meta_swap') AND TABLE_NAME NOT IN "
        "('_sluice_checkpoint', '_sluice_tables', '_sluice_schemas')");
    return r.ok() ? r->rows[0][0].value_or("") : r.status().ToString();
  };
  ASSERT_TRUE(dest->Execute("DROP DATABASE IF EXISTS it_swap").ok());
  ASSERT_TRUE(dest->Execute("DROP DATABASE IF EXISTS it_meta_swap").ok());
  // Lock waits of a second: the sink's session takes the global values when it connects.
  ASSERT_TRUE(admin->Execute("SET GLOBAL lock_wait_timeout = 1, GLOBAL innodb_lock_wait_timeout = 1").ok());
  MysqlSinkOptions o = DestSinkOptions();
  o.database = "it_meta_swap";
  auto sink = MysqlSink::Open(o);
  ASSERT_TRUE(admin->Execute("SET GLOBAL lock_wait_timeout = DEFAULT, GLOBAL innodb_lock_wait_timeout = DEFAULT").ok());
  ASSERT_TRUE(sink.ok()) << sink.status().ToString();
  Transaction txn;
  for (const auto& [table, id, v] : {std::tuple{a, 1, "a1"}, {a, 2, "a2"}, {b, 10, "b10"}, {a_new, 20, "new20"}}) {
    RowChange c;
    c.op = Op::kCreate;
    c.table = table;
    c.after = {Value::Int(id), Value::Text(v)};
    txn.changes.push_back(std::move(c));
  }
  txn.checkpoint = "c0";
  ASSERT_TRUE((*sink)->Apply(txn).ok());
  auto rename = [](const TableSchemaPtr& from, const TableSchemaPtr& to, const char* ddl) {
    SchemaChange c{SchemaChange::Kind::kRename, from, to, {}, ddl, {}};
    c.source.file = "mariadb-bin.000003";
    c.source.pos = 777;
    return c;
  };
  const char* swap_ddl = "RENAME TABLE a TO tmp, b TO a, tmp TO b";
  const std::vector<SchemaChange> swap = {rename(a, tmp, swap_ddl), rename(b, a, swap_ddl), rename(tmp, b, swap_ddl)};

  // 1. Interrupted after its last rename, before its checkpoint: a row lock on the checkpoint.
  ASSERT_TRUE(admin->Execute("BEGIN").ok());
  ASSERT_TRUE(admin->Query("SELECT * FROM it_meta_swap._sluice_checkpoint FOR UPDATE").ok());
  Status st = (*sink)->ApplySchemaChanges(swap, "c1");
  ASSERT_TRUE(admin->Execute("ROLLBACK").ok());
  ASSERT_FALSE(st.ok()) << "the checkpoint row was locked";
  EXPECT_EQ(contents("a"), "10:b10");
  st = (*sink)->ApplySchemaChanges(swap, "c1");
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(contents("a"), "10:b10") << "the swap applied again must not swap back";
  EXPECT_EQ(contents("b"), "1:a1,2:a2");
  EXPECT_EQ(*(*sink)->LoadCheckpoint(), std::optional<std::string>("c1"));

  // 2. Interrupted between its renames: a lock on b (now holding a's rows) stops the second.
  const std::vector<SchemaChange> swap_back = {rename(a, tmp, swap_ddl), rename(b, a, swap_ddl),
                                               rename(tmp, b, swap_ddl)};
  std::vector<SchemaChange> again = swap_back;
  for (SchemaChange& c : again) c.source.pos = 999;  // another statement, same text
  ASSERT_TRUE(admin->Execute("BEGIN").ok());
  ASSERT_TRUE(admin->Query("SELECT * FROM it_swap.b").ok());  // a metadata lock until ROLLBACK
  st = (*sink)->ApplySchemaChanges(again, "c2");
  ASSERT_TRUE(admin->Execute("ROLLBACK").ok());
  ASSERT_FALSE(st.ok()) << "b was locked";
  EXPECT_EQ(contents("tmp"), "10:b10") << "the first rename was made";
  // a is missing until the rest is applied: not a table dropped by hand (run's start copied it
  // again on that answer, then stopped on the rest of the swap).
  auto has = (*sink)->HasTable(*a);
  ASSERT_TRUE(has.ok()) << has.status().ToString();
  EXPECT_FALSE(has->has_value()) << "a half-applied statement's missing name was answered " << **has;
  st = (*sink)->ApplySchemaChanges(again, "c2");
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(contents("a"), "1:a1,2:a2");
  EXPECT_EQ(contents("b"), "10:b10");

  // 3. A table moved aside and another moved in (an online schema change tool's swap),
  // interrupted after both renames.
  const char* move_ddl = "RENAME TABLE a TO a_old, a_new TO a";
  std::vector<SchemaChange> move = {rename(a, a_old, move_ddl), rename(a_new, a, move_ddl)};
  for (SchemaChange& c : move) c.source.pos = 1234;
  ASSERT_TRUE(admin->Execute("BEGIN").ok());
  ASSERT_TRUE(admin->Query("SELECT * FROM it_meta_swap._sluice_checkpoint FOR UPDATE").ok());
  st = (*sink)->ApplySchemaChanges(move, "c3");
  ASSERT_TRUE(admin->Execute("ROLLBACK").ok());
  ASSERT_FALSE(st.ok()) << "the checkpoint row was locked";
  st = (*sink)->ApplySchemaChanges(move, "c3");
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(contents("a_old"), "1:a1,2:a2") << "the table moved aside is kept";
  EXPECT_EQ(contents("a"), "20:new20");
  EXPECT_EQ(tables(), "it_swap.a,it_swap.a_old,it_swap.b") << "no marker or scratch table is left";
  EXPECT_EQ(*(*sink)->LoadCheckpoint(), std::optional<std::string>("c3"));
}

// The source server's binlog end, "file:position".
std::string BinlogEnd() {
  auto c = Connect();
  auto r = c->Query("SHOW MASTER STATUS");
  if (!r.ok() || r->rows.empty()) return "unknown: " + (r.ok() ? std::string("no row") : r.status().ToString());
  return r->rows[0][0].value_or("") + ":" + r->rows[0][1].value_or("");
}

// The rows of `sql` as "a,b;c,d".
std::string Rows(const std::string& sql) { return RowsOf(*Connect(), sql); }

// A config whose MySQL destination is the test server itself, through 127.0.0.1:`dest_port`
// (a proxy); `meta` is sink.mysql.database, `map` [sink.mysql.databases] lines.
std::string WriteSelfConfig(const TempDir& dir, const std::vector<std::string>& tables, int server_id,
                            uint16_t dest_port, const std::string& meta, const std::string& map = "") {
  ConnectOptions o = TestServer();
  std::ostringstream t;
  t << "[source]\nhost = \"" << o.host << "\"\nport = " << o.port << "\nuser = \"" << o.user
    << "\"\npassword_env = \"SLUICE_TEST_MYSQL_PASSWORD\"\nserver_id = " << server_id << "\ntables = [";
  for (size_t i = 0; i < tables.size(); ++i) t << (i ? ", \"" : "\"") << tables[i] << "\"";
  t << "]\n\n[sink]\ntype = \"mysql\"\ngroup_max_ms = 50\n\n[sink.mysql]\nhost = \"127.0.0.1\"\nport = " << dest_port
    << "\nuser = \"" << o.user << "\"\npassword_env = \"SLUICE_TEST_MYSQL_PASSWORD\"\ndatabase = \"" << meta << "\"\n";
  if (!map.empty()) t << "\n[sink.mysql.databases]\n" << map << "\n";
  std::string path = dir.File(fmt::format("sluice-{}.toml", server_id));
  std::ofstream(path) << t.str();
  return path;
}

// SameServer (mysql/server_probe.h) tells the destination server from the source although
// both report server_id 1 and the same host name, and finds the source again through a
// proxy on another port, either way round; it writes nothing (the binlog end stays).
TEST_F(MysqlDest, SameServerTellsTheDestinationFromTheSource) {
  auto source = Connect();
  auto dest = DestConnect();
  ASSERT_TRUE(source && dest);
  const std::string before = BinlogEnd();
  Result<bool> same = SameServer(*source, *dest);
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_FALSE(*same);
  TcpProxy proxy(TestServer().port);
  ConnectOptions o = TestServer();
  o.port = proxy.port();
  o.unix_socket.reset();
  auto again = Connection::Connect(o);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  same = SameServer(*source, **again);
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_TRUE(*same);
  same = SameServer(**again, *source);
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_TRUE(*same);
  EXPECT_EQ(BinlogEnd(), before);
}

// [sink.mysql] naming the source server itself (a new user's probe: with the default
// database mapping the run dropped and created the source's own tables, read those writes
// back from the binlog and wrote them again, 1,600 times in 30 s, and left a source table
// empty and another missing; `check` said READY). The destination is reached through a
// proxy on another port, so no address comparison could tell. `run` refuses with exit code
// 2 before writing anything: the binlog does not move, the rows stay, the bookkeeping
// database is not created; the message names the server, the destination database and the
// pattern, and the fix. `check` fails a `sink server` line in the same words, also without
// writing. The same when only the bookkeeping database (sink.mysql.database) is captured.
TEST(MysqlDestIsSource, ACapturedDestinationDatabaseIsRefusedBeforeAnythingIsWritten) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_self; DROP DATABASE IF EXISTS it_self_meta;"
                       "DROP DATABASE IF EXISTS it_self_copy; CREATE DATABASE it_self;"
                       "CREATE TABLE it_self.t (id INT PRIMARY KEY, v INT); INSERT INTO it_self.t VALUES (1, 10), (2, 20)"),
            0);
  TcpProxy proxy(TestServer().port);
  ASSERT_NE(proxy.port(), 0);
  TempDir dir;
  const std::string config = WriteSelfConfig(dir, {"it_self.*"}, 5611, proxy.port(), "it_self_meta");
  const std::string schemas =
      "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN ('it_self', 'it_self_meta', "
      "'it_self_copy') ORDER BY 1";
  const std::string before = BinlogEnd();

  ProcessResult r = RunSluice({"run", "--config", config, "--until-caught-up"}, std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  const std::string dest = fmt::format("127.0.0.1:{}", proxy.port());
  for (const std::string& word : {dest, std::string("is the source server"), std::string("it_self.*"),
                                  std::string("destination database it_self"), std::string("sink.mysql.databases")})
    EXPECT_NE(r.output.find(word), std::string::npos) << word << "\n" << r.output;
  EXPECT_GT(proxy.accepted(), 0) << "the destination was not asked";
  EXPECT_EQ(BinlogEnd(), before) << "the run wrote to the source\n" << r.output;
  EXPECT_EQ(Rows("SELECT id, v FROM it_self.t ORDER BY id"), "1,10;2,20");
  EXPECT_EQ(Rows(schemas), "it_self");

  r = RunSluice({"check", "--config", config}, std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  std::string line = CheckLine(r.output, "sink server");
  EXPECT_EQ(line.rfind("FAIL", 0), 0u) << r.output;
  for (const std::string& word : {dest, std::string("is the source server"), std::string("it_self.*"),
                                  std::string("destination database it_self")})
    EXPECT_NE(line.find(word), std::string::npos) << word << "\n" << r.output;
  EXPECT_NE(r.output.find("fix: map"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("NOT READY"), std::string::npos) << r.output;
  EXPECT_EQ(BinlogEnd(), before) << "check wrote to the source\n" << r.output;
  EXPECT_EQ(Rows(schemas), "it_self");

  // `resnapshot` refuses it too, before it opens the destination (which creates its
  // bookkeeping tables: it wrote them into the source).
  r = RunSluice({"resnapshot", "--config", config, "it_self.t"}, std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("is the source server"), std::string::npos) << r.output;
  EXPECT_EQ(BinlogEnd(), before) << "resnapshot wrote to the source\n" << r.output;
  EXPECT_EQ(Rows(schemas), "it_self");

  // The tables mapped away, but the bookkeeping tables into the captured database.
  const std::string meta_captured =
      WriteSelfConfig(dir, {"it_self.*"}, 5612, proxy.port(), "it_self", "it_self = \"it_self_copy\"");
  r = RunSluice({"run", "--config", meta_captured, "--until-caught-up"}, std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  for (const char* word : {"sink.mysql.database", "it_self.*", "destination database it_self"})
    EXPECT_NE(r.output.find(word), std::string::npos) << word << "\n" << r.output;
  EXPECT_EQ(BinlogEnd(), before) << "the run wrote to the source\n" << r.output;
  EXPECT_EQ(Rows("SELECT id, v FROM it_self.t ORDER BY id"), "1,10;2,20");
  EXPECT_EQ(Rows(schemas), "it_self");
}

// The source server is a fine destination for databases no source.tables pattern captures:
// it_selfa copied into it_selfb (bookkeeping in it_selfm) on the same server, through a
// proxy, snapshot and binlog; `check` says so on a passing `sink server` line.
TEST(MysqlDestIsSource, AnotherDatabaseOfTheSameServerIsCopiedInto) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_selfa; DROP DATABASE IF EXISTS it_selfb;"
                       "DROP DATABASE IF EXISTS it_selfm; CREATE DATABASE it_selfa;"
                       "CREATE TABLE it_selfa.t (id INT PRIMARY KEY, v INT); INSERT INTO it_selfa.t VALUES (1, 10), (2, 20)"),
            0);
  TcpProxy proxy(TestServer().port);
  ASSERT_NE(proxy.port(), 0);
  TempDir dir;
  const std::string config =
      WriteSelfConfig(dir, {"it_selfa.*"}, 5613, proxy.port(), "it_selfm", "it_selfa = \"it_selfb\"");
  ProcessResult r = RunSluice({"check", "--config", config}, std::chrono::seconds(60));
  std::string line = CheckLine(r.output, "sink server");
  EXPECT_EQ(line.rfind("PASS", 0), 0u) << r.output;
  for (const char* word : {"is the source server", "it_selfb", "it_selfm"})
    EXPECT_NE(line.find(word), std::string::npos) << word << "\n" << r.output;

  r = RunSluice({"run", "--config", config, "--until-caught-up"}, std::chrono::seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Rows("SELECT id, v FROM it_selfb.t ORDER BY id"), "1,10;2,20");
  ASSERT_EQ(RunSqlText("INSERT INTO it_selfa.t VALUES (3, 30); UPDATE it_selfa.t SET v = 11 WHERE id = 1;"
                       "DELETE FROM it_selfa.t WHERE id = 2"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"}, std::chrono::seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Rows("SELECT id, v FROM it_selfb.t ORDER BY id"), "1,11;3,30");
  EXPECT_EQ(Rows("SELECT id, v FROM it_selfa.t ORDER BY id"), "1,11;3,30");
}

// A destination started with lower_case_table_names = 1 (as on Windows, macOS with 2, or a
// managed server set so) holds `T` and `t` as one table. Before the fix: source tables
// it_lc.T {1, 2} and it_lc.t {1, 3} became one destination table {1, 2, 3}, exit 0; a table
// created while streaming under a name that differed only in case replaced the other's rows
// ({1, 2} became {5}, exit 0: the CREATE's DROP TABLE IF EXISTS), and a rename that changed
// only the case dropped the table itself, then stopped on the RENAME ([1146]). Now: the pair is refused before anything is written
// (`run` exit 2, `check` a FAIL line, both naming the setting); renames that change only the
// case are followed, keeping the rows; a table created while streaming onto a name another
// holds stops the run before anything of it is applied, the other's rows untouched.
TEST(MysqlDestIgnoringCase, TablesDifferingOnlyInCaseAreRefusedAndACaseRenameIsFollowed) {
  ThrowawayServer server("--lower-case-table-names=1", "SLUICE_TEST_LC_DEST_PASSWORD");
  ASSERT_TRUE(server.started()) << server.StartLog();
  const ConnectOptions* env = &server.options();
  auto dest = Connection::Connect(*env);
  ASSERT_TRUE(dest.ok()) << dest.status().ToString();
  const auto dest_rows = [&](const std::string& sql) { return RowsOf(**dest, sql); };
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_lc; CREATE DATABASE it_lc;"
                       "CREATE TABLE it_lc.T (a INT PRIMARY KEY); INSERT INTO it_lc.T VALUES (1), (2);"
                       "CREATE TABLE it_lc.t (a INT PRIMARY KEY); INSERT INTO it_lc.t VALUES (1), (3);"),
            0);
  TempDir dir;
  ConnectOptions o = TestServer();
  const std::string config = dir.File("sluice.toml");
  std::ofstream(config) << fmt::format(
      "[source]\nhost = \"{}\"\nport = {}\nuser = \"{}\"\npassword_env = \"SLUICE_TEST_MYSQL_PASSWORD\"\n"
      "server_id = 5615\ntables = [\"it_lc.*\"]\n\n[sink]\ntype = \"mysql\"\ngroup_max_ms = 50\n\n[sink.mysql]\n"
      "host = \"127.0.0.1\"\nport = {}\nuser = \"{}\"\npassword_env = \"SLUICE_TEST_LC_DEST_PASSWORD\"\n",
      o.host, o.port, o.user, env->port, env->user);

  ProcessResult r = RunSluice({"check", "--config", config}, std::chrono::seconds(60));
  const std::string line = CheckLine(r.output, "sink table names");
  EXPECT_EQ(line.rfind("FAIL", 0), 0u) << r.output;
  r = RunSluice({"run", "--config", config, "--until-caught-up"}, std::chrono::seconds(60));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  for (const char* word : {"`it_lc`.`T`", "`it_lc`.`t`", "lower_case_table_names = 1", "source.exclude"}) {
    EXPECT_NE(r.output.find(word), std::string::npos) << word << "\n" << r.output;
    EXPECT_NE(line.find(word), std::string::npos) << word << "\n" << line;
  }
  EXPECT_EQ(dest_rows("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'it_lc'"), "0");

  // One of them: copied; renamed by case only, and on by case again, with rows between.
  ASSERT_EQ(RunSqlText("DROP TABLE it_lc.t"), 0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"}, std::chrono::seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(dest_rows("SELECT a FROM it_lc.t ORDER BY a"), "1;2");
  ASSERT_EQ(RunSqlText("RENAME TABLE it_lc.T TO it_lc.t; INSERT INTO it_lc.t VALUES (11);"
                       "RENAME TABLE it_lc.t TO it_lc.Q; INSERT INTO it_lc.Q VALUES (12);"
                       "ALTER TABLE it_lc.Q ADD COLUMN z INT; RENAME TABLE it_lc.Q TO it_lc.q; INSERT INTO it_lc.q VALUES (13, 1)"),
            0);
  r = RunSluice({"run", "--config", config, "--until-caught-up"}, std::chrono::seconds(60));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(dest_rows("SELECT a, z FROM it_lc.q ORDER BY a"), "1,NULL;2,NULL;11,NULL;12,NULL;13,1");

  // A table created while streaming under the name another holds, but for case: the run
  // stops before it is applied.
  const pid_t pid = StartSluice({"run", "--config", config}, dir.File("log"));
  ASSERT_TRUE(WaitForLog(dir.File("log"), "streaming from", pid, std::chrono::seconds(60))) << ReadFile(dir.File("log"));
  ASSERT_EQ(RunSqlText("CREATE TABLE it_lc.Q (a INT PRIMARY KEY, z INT); INSERT INTO it_lc.Q VALUES (5, 5);"
                       "INSERT INTO it_lc.q VALUES (14, 1)"),
            0);
  EXPECT_NE(WaitChild(pid, std::chrono::seconds(60)), 0);
  const std::string log = ReadFile(dir.File("log"));
  for (const char* word : {"`it_lc`.`q`", "`it_lc`.`Q`", "ignore case", "source.exclude"})
    EXPECT_NE(log.find(word), std::string::npos) << word << "\n" << log;
  EXPECT_EQ(dest_rows("SELECT a, z FROM it_lc.q ORDER BY a"), "1,NULL;2,NULL;11,NULL;12,NULL;13,1");
}

}  // namespace
}  // namespace sluice::testing

namespace sluice::testing {
namespace {

// A streamed row whose statement is over the destination's max_allowed_packet: the run stops
// at once naming the setting. A new user's probe: the server dropped the connection ([1153],
// seen as 2006 "gone away"), and the same transaction was retried for 4.5 minutes first.
TEST_F(MysqlDest, ARowOverTheDestinationsMaxAllowedPacketStopsAtOnceNamingIt) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_bigrow; CREATE DATABASE it_bigrow; USE it_bigrow;"
                       "CREATE TABLE t (id INT PRIMARY KEY, b LONGBLOB); INSERT INTO t VALUES (1, 'small');"),
            0);
  TempDir dir;
  const std::string config = WriteMysqlConfig(dir, {"it_bigrow.*"}, 5419, "it_meta_bigrow");
  auto dest = DestConnect();
  ASSERT_NE(dest, nullptr);
  ASSERT_TRUE(dest->Execute("DROP DATABASE IF EXISTS it_bigrow").ok());
  ASSERT_TRUE(dest->Execute("DROP DATABASE IF EXISTS it_meta_bigrow").ok());
  auto r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto packet = dest->Query("SELECT @@global.max_allowed_packet");
  ASSERT_TRUE(packet.ok() && !packet->rows.empty() && packet->rows[0][0]);
  const std::string old_packet = *packet->rows[0][0];
  ASSERT_TRUE(dest->Execute("SET GLOBAL max_allowed_packet = 1048576").ok());
  ASSERT_EQ(RunSqlText("UPDATE it_bigrow.t SET b = REPEAT('x', 3000000) WHERE id = 1"), 0);
  const auto started = std::chrono::steady_clock::now();
  r = RunSluice({"run", "--config", config, "--until-caught-up"}, std::chrono::seconds(120));
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(dest->Execute("SET GLOBAL max_allowed_packet = " + old_packet).ok());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("more than the destination's max_allowed_packet (1048576 bytes)"), std::string::npos)
      << r.output;
  EXPECT_LT(took, std::chrono::seconds(30)) << r.output;
  // Raised (back), the next run applies it.
  r = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string last;
  EXPECT_TRUE(WaitEqual({"it_bigrow.*"}, std::chrono::seconds(10), &last)) << last;
}

}  // namespace
}  // namespace sluice::testing
