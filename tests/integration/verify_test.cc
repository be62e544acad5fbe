// `sluice verify` (issue 11, item 2) on a 1 M-row table: equality on a correct replica and a
// single changed value found and named by key, both idle and while a run streams a write
// load into the replica.
#include <signal.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <random>
#include <thread>

#include "harness.h"

namespace sluice::testing {
namespace {

using std::chrono::seconds;

// 1 M rows in the gcc build (the acceptance figure); the ASan build checks the same logic on
// fewer rows to keep `make test` short.
const int kRows = SluiceSanitized() ? 200000 : 1000000;
const std::string kRowsText = std::to_string(kRows);
const std::string kRanges = std::to_string(kRows / 10000);  // verify's default --chunk-rows
const std::string kIdleKey = std::to_string(kRows / 2 - 7);  // changed while idle
const std::string kLiveKey = std::to_string(kRows - 1);      // changed under load
const std::string kLiveA = std::to_string((kRows - 1) % 1000);

// Writes to the replica behind sluice's back (the test's stand-in for a corrupted replica).
void ReplicaExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_busy_timeout(db, 10000);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << " " << sql;
  sqlite3_free(err);
  sqlite3_close(db);
}

TEST(Verify, MillionRowsEqualAndOneChangedValueNamedIdleAndUnderLoad) {
  auto tstart = std::chrono::steady_clock::now();
  // The 1 M-row table is narrow (time); the types table carries the canonical-value cases
  // (decimal, temporal, float, binary, JSON, ENUM/SET, BIT, NULLs) under a composite key.
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_verify; CREATE DATABASE it_verify; USE it_verify;"
                       "CREATE TABLE big (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(40));"
                       "SET SESSION sql_log_bin = 0;"  // the snapshot copies it; no 1 M-row binlog to write
                       "INSERT INTO big SELECT seq, seq % 1000, CONCAT('row', seq) FROM seq_1_to_" + kRowsText + ";"
                       "SET SESSION sql_log_bin = 1;"
                       "CREATE TABLE types (k1 INT, k2 VARCHAR(20), d DECIMAL(12,3), t DATETIME(3), ts TIMESTAMP(6) NULL,"
                       "  f FLOAT, db DOUBLE, bin VARBINARY(16), j JSON, e ENUM('x','y','z'), st SET('p','q'),"
                       "  bt BIT(5), u BIGINT UNSIGNED, dt DATE, tm TIME(2), PRIMARY KEY (k1, k2));"
                       "INSERT INTO types SELECT seq % 50, CONCAT('k', seq), seq * 1.125 - 400, "
                       "  '2024-02-29 23:59:59.125' + INTERVAL seq MINUTE, IF(seq % 3 = 0, NULL, '2030-01-01 00:00:00.5'),"
                       "  seq / 7, seq / 3, UNHEX(HEX(seq)), JSON_OBJECT('n', seq, 'a', JSON_ARRAY(1, 'x')),"
                       "  ELT(1 + seq % 3, 'x', 'y', 'z'), IF(seq % 2 = 0, 'p,q', ''), seq % 32,"
                       "  18446744073709551615 - seq, '1999-12-31' + INTERVAL seq DAY, '-12:30:00.25'"
                       "  FROM seq_1_to_1000;"
                       "CREATE TABLE nokey (x INT, y VARCHAR(10));"
                       "INSERT INTO nokey VALUES (1, 'a'), (1, 'a'), (2, NULL);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_verify.*"};
  spec.sink_path = dir.File("replica.db");
  spec.chunk_rows = 50000;
  spec.snapshot_extra = "workers = 2\nfetch_rows = 20000\n";
  std::string config = WriteConfig(dir, spec);
  auto t0 = std::chrono::steady_clock::now();
  std::printf("1M rows inserted in %.1f s\n", std::chrono::duration<double>(t0 - tstart).count());
  auto snap = RunSluice({"run", "--config", config, "--until-caught-up", "-q"});
  ASSERT_EQ(snap.exit_code, 0) << snap.output;
  auto t1 = std::chrono::steady_clock::now();

  // Idle, correct replica.
  auto equal = RunSluice({"verify", "--config", config});
  auto t2 = std::chrono::steady_clock::now();
  EXPECT_EQ(equal.exit_code, 0) << equal.output;
  EXPECT_NE(equal.output.find("it_verify.big"), std::string::npos) << equal.output;
  EXPECT_NE(equal.output.find(kRowsText + " rows  equal (" + kRanges + " ranges)"), std::string::npos) << equal.output;
  EXPECT_NE(equal.output.find("OK: 3 of 3 tables"), std::string::npos) << equal.output;
  std::printf("snapshot %.1f s, verify (idle, equal) %.1f s\n",
              std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());

  // Idle, one value changed in the replica.
  ReplicaExec(spec.sink_path, "UPDATE \"it_verify.big\" SET b = 'tampered' WHERE id = " + kIdleKey);
  auto changed = RunSluice({"verify", "--config", config, "--tables", "it_verify.big"});
  EXPECT_EQ(changed.exit_code, 1) << changed.output;
  EXPECT_NE(changed.output.find("1 of " + kRanges + " ranges differed; 1 rows differ persistently"), std::string::npos)
      << changed.output;
  EXPECT_NE(changed.output.find("id=" + kIdleKey + ": column b: source Text(\"row" + kIdleKey +
                                        "\") replica Text(\"tampered\")"),
            std::string::npos) << changed.output;
  EXPECT_NE(changed.output.find("MISMATCH: 0 of 1 tables"), std::string::npos) << changed.output;
  ReplicaExec(spec.sink_path, "UPDATE \"it_verify.big\" SET b = 'row" + kIdleKey + "' WHERE id = " + kIdleKey);

  // While a run streams a write load into the replica.
  pid_t run = StartSluice({"run", "--config", config}, dir.File("run.log"));
  std::atomic<bool> stop{false};
  std::atomic<int> writes{0};
  std::thread load([&] {
    auto c = Connect();
    if (!c) return;
    std::mt19937 rng(7);
    int next = kRows + 1;
    while (!stop.load()) {
      int id = static_cast<int>(rng() % (kRows * 9 / 10)) + 1;  // never the tampered row below
      Status st = c->Execute(fmt::format("UPDATE it_verify.big SET a = a + 1, b = CONCAT('load', {0}) WHERE id = {0}", id));
      if (st.ok()) st = c->Execute(fmt::format("INSERT INTO it_verify.big VALUES ({}, 1, 'new')", next++));
      if (st.ok() && next % 50 == 0) st = c->Execute(fmt::format("DELETE FROM it_verify.big WHERE id = {}", id + 1));
      if (!st.ok()) {
        ADD_FAILURE() << st.ToString();
        return;
      }
      ++writes;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  std::this_thread::sleep_for(seconds(1));
  auto t3 = std::chrono::steady_clock::now();
  auto live_equal = RunSluice({"verify", "--config", config, "--tables", "it_verify.big"});
  EXPECT_EQ(live_equal.exit_code, 0) << live_equal.output;
  std::printf("%s", live_equal.output.c_str());
  auto t4 = std::chrono::steady_clock::now();
  std::printf("verify under load (equal) %.1f s\n", std::chrono::duration<double>(t4 - t3).count());
  ReplicaExec(spec.sink_path, "UPDATE \"it_verify.big\" SET a = -5 WHERE id = " + kLiveKey);
  auto live_changed = RunSluice({"verify", "--config", config, "--tables", "it_verify.big"});
  EXPECT_EQ(live_changed.exit_code, 1) << live_changed.output;
  EXPECT_NE(live_changed.output.find("1 rows differ persistently"), std::string::npos) << live_changed.output;
  EXPECT_NE(live_changed.output.find("id=" + kLiveKey + ": column a: source Int(" + kLiveA + ") replica Int(-5)"), std::string::npos)
      << live_changed.output;
  stop = true;
  load.join();
  EXPECT_GT(writes.load(), 100);
  kill(run, SIGTERM);
  EXPECT_EQ(WaitChild(run, seconds(30)), 0) << ReadFile(dir.File("run.log"));
  std::printf("load: %d write rounds during the live verifies\n", writes.load());

  EXPECT_EQ(RunSqlText("DROP DATABASE it_verify"), 0);
}

// JSON lines holds no tables: verify says so instead of comparing nothing.
// Keys the server orders other than SQLite does: a case- and accent-insensitive VARCHAR
// ('a' < 'B' under the collation, 'B' < 'a' by bytes), a DECIMAL with negative values (compared
// as numbers on the server, as TEXT in SQLite) and a composite (VARCHAR, INT) key. The ranges
// must hold the same rows on both sides: before, the replica side of each range held other
// rows, every range "differed in passing", and past kMaxCandidates a correct replica was
// reported DIFFERENT. One changed value is still found and named.
TEST(Verify, KeysOrderedUnlikeSqliteCutTheSameRanges) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_verify_ci; CREATE DATABASE it_verify_ci; USE it_verify_ci;"
                       "CREATE TABLE ci (k VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci PRIMARY KEY,"
                       "  v INT);"
                       "INSERT INTO ci SELECT CONCAT(ELT(1 + seq % 4, 'a', 'B', '\xC3\xA9', 'Z'), LPAD(seq, 5, '0')), seq"
                       "  FROM seq_1_to_3000;"
                       "CREATE TABLE dec_key (d DECIMAL(8,2) PRIMARY KEY, v INT);"
                       "INSERT INTO dec_key SELECT seq * 1.25 - 1500, seq FROM seq_1_to_2000;"
                       "CREATE TABLE comp (tenant VARCHAR(10) COLLATE utf8mb4_unicode_ci, id INT, v INT,"
                       "  PRIMARY KEY (tenant, id));"
                       "INSERT INTO comp SELECT ELT(1 + seq % 3, 'acme', 'Beta', 'zed'), seq, seq FROM seq_1_to_2000;"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_verify_ci.*"};
  spec.sink_path = dir.File("replica.db");
  std::string config = WriteConfig(dir, spec);
  auto snap = RunSluice({"run", "--config", config, "--until-caught-up", "-q"});
  ASSERT_EQ(snap.exit_code, 0) << snap.output;

  auto equal = RunSluice({"verify", "--config", config, "--chunk-rows", "150"});
  EXPECT_EQ(equal.exit_code, 0) << equal.output;
  EXPECT_NE(equal.output.find("3000 rows  equal (20 ranges)\n"), std::string::npos) << equal.output;
  EXPECT_NE(equal.output.find("2000 rows  equal (14 ranges)\n"), std::string::npos) << equal.output;
  EXPECT_EQ(equal.output.find("differed in passing"), std::string::npos) << equal.output;
  EXPECT_NE(equal.output.find("OK: 3 of 3 tables"), std::string::npos) << equal.output;

  ReplicaExec(spec.sink_path, "UPDATE \"it_verify_ci.ci\" SET v = -1 WHERE k = 'B00001' OR k = 'B00005'");
  ReplicaExec(spec.sink_path, "UPDATE \"it_verify_ci.dec_key\" SET v = -1 WHERE d = '-2.50'");
  auto changed = RunSluice({"verify", "--config", config, "--chunk-rows", "150"});
  EXPECT_EQ(changed.exit_code, 1) << changed.output;
  EXPECT_NE(changed.output.find("2 rows differ persistently"), std::string::npos) << changed.output;
  EXPECT_NE(changed.output.find("k=B00005: column v: source Int(5) replica Int(-1)"), std::string::npos) << changed.output;
  EXPECT_NE(changed.output.find("1 rows differ persistently"), std::string::npos) << changed.output;
  EXPECT_NE(changed.output.find("MISMATCH: 1 of 3 tables"), std::string::npos) << changed.output;
}

// A new user's probe of verify (2026-12-02): keys the replica stores other than the source
// (BIGINT UNSIGNED above 2^63 as text), binary keys, and replica rows the source cannot hold.
TEST(Verify, UnusualKeysAndImpossibleReplicaRowsAreJudgedAndNamed) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_verify_odd; CREATE DATABASE it_verify_odd; USE it_verify_odd;"
                       "CREATE TABLE u64 (k BIGINT UNSIGNED PRIMARY KEY, v INT);"
                       "INSERT INTO u64 SELECT 9300000000000000000 + seq * 1000, seq FROM seq_1_to_150;"
                       "INSERT INTO u64 SELECT 10000000000000000000 + seq * 1000, seq FROM seq_1_to_150;"
                       "INSERT INTO u64 SELECT seq, seq FROM seq_1_to_100;"
                       "CREATE TABLE bits (b BIT(64) PRIMARY KEY, v INT);"
                       "INSERT INTO bits VALUES (b'1', 1), (0xFFFFFFFFFFFFFFFF, 2), (0x8000000000000000, 3), (0x7FFFFFFFFFFFFFFF, 4);"
                       "CREATE TABLE bin (k BINARY(4) PRIMARY KEY, v INT);"
                       "INSERT INTO bin VALUES (X'0102', 1), (X'ABCDEF00', 2);"
                       "CREATE TABLE en (k ENUM('a','b') PRIMARY KEY, v INT); INSERT INTO en VALUES ('a', 1), ('b', 2);"
                       "CREATE TABLE l1 (k VARCHAR(10) CHARACTER SET latin1 PRIMARY KEY, v INT);"
                       "INSERT INTO l1 VALUES ('x', 1), ('y', 2);"
                       "CREATE TABLE txt (k VARCHAR(10) PRIMARY KEY, v INT); INSERT INTO txt VALUES ('a', 1), ('b', 2), ('c', 3);"
                       "CREATE TABLE vals (id INT PRIMARY KEY, n BIGINT UNSIGNED, f FLOAT);"
                       "INSERT INTO vals VALUES (1, 5, 0.5), (2, 18446744073709551615, 0.1), (3, 7, 1);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_verify_odd.*"};
  spec.sink_path = dir.File("replica.db");
  std::string config = WriteConfig(dir, spec);
  auto snap = RunSluice({"run", "--config", config, "--until-caught-up", "-q"});
  ASSERT_EQ(snap.exit_code, 0) << snap.output;

  auto equal = RunSluice({"verify", "--config", config, "--chunk-rows", "40"});
  EXPECT_EQ(equal.exit_code, 0) << equal.output;
  EXPECT_NE(equal.output.find("400 rows  equal (10 ranges)\n"), std::string::npos) << equal.output;
  EXPECT_EQ(equal.output.find("differed in passing"), std::string::npos) << equal.output;
  EXPECT_NE(equal.output.find("OK: 7 of 7 tables"), std::string::npos) << equal.output;

  const std::string db = spec.sink_path;
  ReplicaExec(db, "UPDATE \"it_verify_odd.bin\" SET v = 100 WHERE v = 1");
  ReplicaExec(db, "INSERT INTO \"it_verify_odd.en\" VALUES ('c', 3)");
  ReplicaExec(db, "INSERT INTO \"it_verify_odd.l1\" VALUES ('\xE4\xB8\xAD', 3)");
  ReplicaExec(db, "INSERT INTO \"it_verify_odd.txt\" VALUES (NULL, 4)");
  ReplicaExec(db, "UPDATE \"it_verify_odd.vals\" SET n = '5 apples' WHERE id = 1");
  ReplicaExec(db, "UPDATE \"it_verify_odd.vals\" SET n = -1, f = 0.1 WHERE id = 2");
  auto changed = RunSluice({"verify", "--config", config});
  EXPECT_EQ(changed.exit_code, 1) << changed.output;
  EXPECT_NE(changed.output.find("k=0x01020000: column v: source Int(1) replica Int(100)"), std::string::npos)
      << changed.output;
  EXPECT_NE(changed.output.find("k=c: extra in the replica"), std::string::npos) << changed.output;
  EXPECT_NE(changed.output.find("k=\xE4\xB8\xAD: extra in the replica"), std::string::npos) << changed.output;
  EXPECT_NE(changed.output.find("k=NULL: extra in the replica"), std::string::npos) << changed.output;
  EXPECT_NE(changed.output.find("id=1: column n: source UInt(5) replica Text(\"5 apples\")"), std::string::npos)
      << changed.output;
  EXPECT_NE(changed.output.find("id=2: column n: source UInt(18446744073709551615) replica Int(-1)"),
            std::string::npos) << changed.output;
  EXPECT_NE(changed.output.find("MISMATCH: 2 of 7 tables"), std::string::npos) << changed.output;

  // A float the replica holds as another double is not the source's float.
  ReplicaExec(db, "UPDATE \"it_verify_odd.vals\" SET n = 18446744073709551615 WHERE id = 2");
  ReplicaExec(db, "UPDATE \"it_verify_odd.vals\" SET n = '18446744073709551615' WHERE id = 2");
  auto f = RunSluice({"verify", "--config", config, "--tables", "it_verify_odd.vals"});
  EXPECT_EQ(f.exit_code, 1) << f.output;
  EXPECT_NE(f.output.find("id=2: column f: source Float(0.1) replica Double(0.1)"), std::string::npos) << f.output;
}

// The re-probe: DECIMAL ZEROFILL copied and streamed alike; compare's report escaped as
// verify's; a replica key of another SQLite type shown with its kind.
TEST(Verify, ZerofillDecimalsAgreeAndReportsStayOnTheirLines) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_verify_zf; CREATE DATABASE it_verify_zf; USE it_verify_zf;"
                       "CREATE TABLE dz (k DECIMAL(8,2) UNSIGNED ZEROFILL PRIMARY KEY, v DECIMAL(6,1) ZEROFILL);"
                       "INSERT INTO dz VALUES (1.5, 2.5), (9, 10), (300.25, 0);"
                       "CREATE TABLE nk (k VARCHAR(10) PRIMARY KEY, v VARCHAR(10));"
                       "INSERT INTO nk VALUES ('a\\0b', 'x'), ('c\\nOK: x', 'y');"
                       "CREATE TABLE big (k BIGINT UNSIGNED PRIMARY KEY, v INT); INSERT INTO big VALUES (3000, 1), (3001, 2);"
                       "CREATE TABLE wide (k INT PRIMARY KEY, a INT, b INT, c INT, d INT, e INT, f INT);"
                       "INSERT INTO wide VALUES (1, 1, 2, 3, 4, 5, 6);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_verify_zf.*"};
  spec.sink_path = dir.File("replica.db");
  std::string config = WriteConfig(dir, spec);
  ASSERT_EQ(RunSluice({"run", "--config", config, "--until-caught-up", "-q"}).exit_code, 0);
  ASSERT_EQ(RunSqlText("INSERT INTO it_verify_zf.dz VALUES (10, 11.5), (20.75, 3);"
                       "UPDATE it_verify_zf.dz SET v = 7 WHERE k = 9"),
            0);
  auto streamed = RunSluice({"run", "--config", config, "--until-caught-up", "-q"});
  ASSERT_EQ(streamed.exit_code, 0) << streamed.output;
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(spec.sink_path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT group_concat(k || '=' || v, ' ') FROM (SELECT k, v FROM \"it_verify_zf.dz\" ORDER BY k + 0)",
                                 -1, &st, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))),
              "1.50=2.5 9.00=7.0 10.00=11.5 20.75=3.0 300.25=0.0");
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  auto equal = RunSluice({"verify", "--config", config, "--chunk-rows", "2"});
  EXPECT_EQ(equal.exit_code, 0) << equal.output;
  EXPECT_EQ(equal.output.find("differed in passing"), std::string::npos) << equal.output;
  auto cmp_equal = RunSluice({"compare", "--config", config});
  EXPECT_EQ(cmp_equal.exit_code, 0) << cmp_equal.output;

  ReplicaExec(spec.sink_path, "UPDATE \"it_verify_zf.nk\" SET v = 'z'");
  ReplicaExec(spec.sink_path, "UPDATE \"it_verify_zf.big\" SET k = CAST(k AS TEXT) WHERE k = 3000");
  // Every differing column is named, not only the first: three described, the rest counted.
  ReplicaExec(spec.sink_path, "UPDATE \"it_verify_zf.wide\" SET a = -1, c = -3, d = -4, e = -5, f = -6");
  auto cmp = RunSluice({"compare", "--config", config});
  EXPECT_EQ(cmp.exit_code, 1) << cmp.output;
  EXPECT_NE(cmp.output.find("key Text(\"a\\x00b\"): column v: source Text(\"x\") replica Text(\"z\")"), std::string::npos)
      << cmp.output;
  EXPECT_NE(cmp.output.find("key Text(\"c\\x0aOK: x\")"), std::string::npos) << cmp.output;
  EXPECT_EQ(cmp.output.find("\nOK: x"), std::string::npos) << cmp.output;
  auto ver = RunSluice({"verify", "--config", config});
  EXPECT_EQ(ver.exit_code, 1) << ver.output;
  EXPECT_NE(ver.output.find("k=Text(\"3000\"): extra in the replica"), std::string::npos) << ver.output;
  EXPECT_NE(ver.output.find("k=3000: missing in the replica"), std::string::npos) << ver.output;
  EXPECT_NE(ver.output.find("k=a\\x00b: column v"), std::string::npos) << ver.output;
  const std::string wide =
      "column a: source Int(1) replica Int(-1); column c: source Int(3) replica Int(-3); "
      "column d: source Int(4) replica Int(-4); and 2 more columns: e, f";
  EXPECT_NE(cmp.output.find("key Int(1): " + wide), std::string::npos) << cmp.output;
  EXPECT_NE(ver.output.find("k=1: " + wide), std::string::npos) << ver.output;
}

// A table excluded for a while and selected again missed the changes made meanwhile: it is
// copied again (it was taken as copied; a new user's probe of compare found the neighbour of
// this: an excluded table's unfinished copy finished by the next re-read of another table).
TEST(Verify, ATableExcludedAndSelectedAgainIsCopiedAgain) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_verify_ex; CREATE DATABASE it_verify_ex; USE it_verify_ex;"
                       "CREATE TABLE a (k INT PRIMARY KEY, v INT); INSERT INTO a SELECT seq, seq FROM seq_1_to_50;"
                       "CREATE TABLE b (k INT PRIMARY KEY, v INT); INSERT INTO b SELECT seq, seq FROM seq_1_to_50;"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_verify_ex.*"};
  spec.sink_path = dir.File("replica.db");
  ASSERT_EQ(RunSluice({"run", "--config", WriteConfig(dir, spec), "--until-caught-up", "-q"}).exit_code, 0);
  spec.exclude = {"it_verify_ex.b"};
  auto excluded = RunSluice({"run", "--config", WriteConfig(dir, spec), "--until-caught-up"});
  ASSERT_EQ(excluded.exit_code, 0) << excluded.output;
  EXPECT_NE(excluded.output.find("it_verify_ex.b: no longer selected"), std::string::npos) << excluded.output;
  ASSERT_EQ(RunSqlText("DELETE FROM it_verify_ex.b WHERE k % 5 = 0; UPDATE it_verify_ex.b SET v = -v WHERE k < 10;"
                       "INSERT INTO it_verify_ex.b VALUES (100, 100)"),
            0);
  spec.exclude.clear();
  const std::string config = WriteConfig(dir, spec);
  auto again = RunSluice({"run", "--config", config, "--until-caught-up"});
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("new to this replica: it_verify_ex.b"), std::string::npos) << again.output;
  auto v = RunSluice({"verify", "--config", config});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("OK: 2 of 2 tables"), std::string::npos) << v.output;
}

// A table the run is copying again (an online re-read: `sluice resnapshot`, a table added to
// the patterns, a DDL that rewrites rows) is said to be being copied, not reported as rows
// missing or differing, and not held against the verdict: verify reported "32800 rows differ
// persistently" and MISMATCH for a table being re-read (a new user's probe, 3 of 3).
TEST(Verify, ATableBeingCopiedAgainIsNotVerifiedYet) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_verify_rr; CREATE DATABASE it_verify_rr; USE it_verify_rr;"
                       "CREATE TABLE a (k INT PRIMARY KEY, v INT); INSERT INTO a SELECT seq, seq FROM seq_1_to_2000;"
                       "CREATE TABLE b (k INT PRIMARY KEY, v INT); INSERT INTO b SELECT seq, seq FROM seq_1_to_50;"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_verify_rr.*"};
  spec.sink_path = dir.File("replica.db");
  const std::string config = WriteConfig(dir, spec);
  ASSERT_EQ(RunSluice({"run", "--config", config, "--until-caught-up", "-q"}).exit_code, 0);
  ASSERT_EQ(RunSqlText("UPDATE it_verify_rr.a SET v = -v WHERE k % 3 = 0"), 0);
  auto r = RunSluice({"resnapshot", "--config", config, "it_verify_rr.a"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  {
    PauseHook pause("SLUICE_TEST_REREAD_PAUSE_FILE", dir.File("paused"));
    pid_t pid = StartSluice({"run", "--config", config, "--until-caught-up"}, dir.File("log"));
    ASSERT_TRUE(WaitForFile(pause.path, pid, std::chrono::seconds(60))) << ReadFile(dir.File("log"));
    auto v = RunSluice({"verify", "--config", config, "--settle-seconds", "1"});
    std::remove(pause.path.c_str());
    EXPECT_EQ(WaitChild(pid, std::chrono::seconds(60)), 0) << ReadFile(dir.File("log"));
    EXPECT_EQ(v.exit_code, 0) << v.output;
    EXPECT_NE(v.output.find("it_verify_rr.a"), std::string::npos) << v.output;
    EXPECT_NE(v.output.find("it_verify_rr.a                           being copied"), std::string::npos) << v.output;
    EXPECT_NE(v.output.find("is under way): not verified"), std::string::npos) << v.output;
    EXPECT_EQ(v.output.find("DIFFERENT"), std::string::npos) << v.output;
    EXPECT_NE(v.output.find("OK: 1 of 2 tables in the replica match the source; 1 being copied, not verified"),
              std::string::npos)
        << v.output;
  }
  auto v = RunSluice({"verify", "--config", config});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("OK: 2 of 2 tables"), std::string::npos) << v.output;
}

// Tables read without the binlog (probe13 F3): verify listed them as "being copied" forever
// and said "OK" with exit code 0, also after their replica rows were changed and deleted by
// hand. They are said to be read without the binlog; with no table verified at all there is
// no "OK" (exit code 3), and beside a cdc table the verdict is about that table.
TEST(Verify, TablesReadWithoutTheBinlogAreNotCalledOk) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_verify_inc; CREATE DATABASE it_verify_inc; USE it_verify_inc;"
                       "CREATE TABLE i (k INT PRIMARY KEY, v INT, updated_at DATETIME NOT NULL);"
                       "INSERT INTO i SELECT seq, seq, '2020-01-01' FROM seq_1_to_20;"
                       "CREATE TABLE c (k INT PRIMARY KEY, v INT); INSERT INTO c VALUES (1, 1);"),
            0);
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"it_verify_inc.i"};
  spec.sink_path = dir.File("replica.db");
  std::string config = WriteConfig(dir, spec);
  std::ofstream(config, std::ios::app) << "\n[table.\"it_verify_inc.i\"]\nmode = \"incremental\"\n";
  ASSERT_EQ(RunSluice({"run", "--config", config}).exit_code, 0);
  auto v = RunSluice({"verify", "--config", config});
  EXPECT_EQ(v.exit_code, 3) << v.output;
  EXPECT_NE(v.output.find("read without the binlog (mode incremental): not verified"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("NOT VERIFIED: none of the 1 tables could be verified; 1 read without the binlog"),
            std::string::npos)
      << v.output;
  EXPECT_EQ(v.output.find("OK"), std::string::npos) << v.output;

  spec.tables = {"it_verify_inc.*"};
  spec.server_id = 5431;
  config = WriteConfig(dir, spec);
  std::ofstream(config, std::ios::app) << "\n[table.\"it_verify_inc.i\"]\nmode = \"incremental\"\n";
  ASSERT_EQ(RunSluice({"run", "--config", config, "--until-caught-up"}).exit_code, 0);
  v = RunSluice({"verify", "--config", config});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_NE(v.output.find("OK: 1 of 2 tables in the replica match the source; 1 read without the binlog, not verified"),
            std::string::npos)
      << v.output;
}

// A replica on a read-only file system (a backup volume, a read-only mount): SQLite cannot
// create the WAL database's -shm file there, and compare said "replica has no table" with
// every row missing, verify exited 2 (a new user's probe). Both read it as it is now.
TEST(Verify, AReplicaOnAReadOnlyFileSystemIsReadAsItIs) {
  ASSERT_EQ(RunSqlText("DROP DATABASE IF EXISTS it_verify_ro; CREATE DATABASE it_verify_ro; USE it_verify_ro;"
                       "CREATE TABLE a (k INT PRIMARY KEY, v INT); INSERT INTO a SELECT seq, seq FROM seq_1_to_500;"),
            0);
  TempDir dir;
  const std::string rw = dir.File("rw"), ro = dir.File("ro");
  ASSERT_EQ(::mkdir(rw.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(ro.c_str(), 0755), 0);
  SluiceConfigSpec spec;
  spec.tables = {"it_verify_ro.*"};
  spec.sink_path = rw + "/replica.db";
  ASSERT_EQ(RunSluice({"run", "--config", WriteConfig(dir, spec), "--until-caught-up", "-q"}).exit_code, 0);
  // A read-only view of the directory (a bind mount made read-only).
  ASSERT_EQ(::mount(rw.c_str(), ro.c_str(), nullptr, MS_BIND, nullptr), 0) << strerror(errno);
  const bool remounted = ::mount(nullptr, ro.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0;
  spec.sink_path = ro + "/replica.db";
  const std::string config = WriteConfig(dir, spec);
  auto cmp = RunSluice({"compare", "--config", config});
  auto ver = RunSluice({"verify", "--config", config});
  ::umount2(ro.c_str(), MNT_DETACH);
  ASSERT_TRUE(remounted) << strerror(errno);
  EXPECT_EQ(cmp.exit_code, 0) << cmp.output;
  EXPECT_NE(cmp.output.find("OK: 1 of 1 tables"), std::string::npos) << cmp.output;
  EXPECT_EQ(ver.exit_code, 0) << ver.output;
  EXPECT_NE(ver.output.find("OK: 1 of 1 tables"), std::string::npos) << ver.output;
}

TEST(Verify, JsonLinesIsNotATableStore) {
  TempDir dir;
  SluiceConfigSpec spec;
  spec.tables = {"mysql.user"};
  spec.sink_type = "jsonl";
  spec.sink_path = dir.File("out.jsonl");
  auto r = RunSluice({"verify", "--config", WriteConfig(dir, spec)});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("JSON lines, Kafka and NATS carry changes, not tables"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace sluice::testing
