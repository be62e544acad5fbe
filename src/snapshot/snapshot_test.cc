// Live tests of the consistent snapshot against the MariaDB started by
// scripts/mariadb-test-server.sh (fail, never skip, when SLUICE_TEST_MYSQL_* is unset).
#include "snapshot/snapshot.h"

#include <atomic>
#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mysql/schema_loader.h"
#include "mysql/server_probe.h"
#include "mysql/testing_env.h"

namespace sluice {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class SnapshotLiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::TestServerOptions(&opts_));
    c_ = testing::ConnectTestServer();
    ASSERT_NE(c_, nullptr);
    Exec("DROP DATABASE IF EXISTS snap_test");
    Exec("CREATE DATABASE snap_test");
    Exec("CREATE TABLE snap_test.comp (a INT NOT NULL, b VARCHAR(10) NOT NULL, v INT, "
         "PRIMARY KEY (a, b))");
    Exec("CREATE TABLE snap_test.nopk (x INT, y VARCHAR(5))");
  }
  void Exec(const std::string& sql) {
    Status st = c_->Execute(sql);
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  TableSchema Load(const char* table) {
    auto s = LoadTableSchema(*c_, "snap_test", table);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : TableSchema{};
  }
  std::string BinlogGtidPos() {
    auto r = c_->Query("SELECT @@gtid_binlog_pos");
    EXPECT_TRUE(r.ok());
    return r.ok() ? r->rows[0][0].value_or("") : "";
  }

  ConnectOptions opts_;
  std::unique_ptr<Connection> c_;
};

// Collects (a, b) pairs and the chunk sizes.
struct Collector {
  std::vector<std::string> keys;
  std::vector<size_t> chunk_sizes;
  std::vector<std::vector<std::string>> last_keys;
  Snapshot::ChunkCallback Callback() {
    return [this](std::vector<Row> rows, const std::vector<std::string>& last_key) {
      chunk_sizes.push_back(rows.size());
      last_keys.push_back(last_key);
      for (const Row& r : rows) keys.push_back(r[0].ToText() + "/" + r[1].ToText());
      return Status::Ok();
    };
  }
};

TEST_F(SnapshotLiveTest, PointIsLastCommitBeforeAndIgnoresLaterWrites) {
  Exec("INSERT INTO snap_test.comp VALUES (1,'a',10),(2,'b',20)");
  auto before = ReadBinlogPosition(*c_);
  ASSERT_TRUE(before.ok());
  std::string gtid_before = BinlogGtidPos();

  auto snap = Snapshot::Begin(opts_);
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  const SnapshotPoint point = (*snap)->point();
  EXPECT_EQ(point.flavor, Flavor::kMariaDB);
  EXPECT_EQ(point.position, *before);
  EXPECT_EQ(point.gtid, gtid_before);

  // A write committed after START TRANSACTION but before reading: invisible, and the point
  // does not move.
  Exec("INSERT INTO snap_test.comp VALUES (3,'c',30)");
  Exec("UPDATE snap_test.comp SET v = 99 WHERE a = 1");
  auto after = ReadBinlogPosition(*c_);
  ASSERT_TRUE(after.ok());
  EXPECT_GT(ComparePositions(*after, point.position), 0);

  TableSchema s = Load("comp");
  std::vector<Row> all;
  Status st = (*snap)->ReadTable(s, std::nullopt, 100,
                                 [&](std::vector<Row> rows, const std::vector<std::string>&) {
                                   for (Row& r : rows) all.push_back(std::move(r));
                                   return Status::Ok();
                                 });
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0][0], Value::Int(1));
  EXPECT_EQ(all[0][1], Value::Text("a"));
  EXPECT_EQ(all[0][2], Value::Int(10));  // not 99
  EXPECT_EQ(all[1][0], Value::Int(2));
  EXPECT_EQ((*snap)->point().position, point.position);
  EXPECT_TRUE((*snap)->Finish().ok());
}

TEST_F(SnapshotLiveTest, LockTablesMethodGivesTheSamePoint) {
  Exec("INSERT INTO snap_test.comp VALUES (1,'a',10)");
  auto before = ReadBinlogPosition(*c_);
  ASSERT_TRUE(before.ok());
  std::string gtid_before = BinlogGtidPos();
  SnapshotOptions so;
  so.method = SnapshotMethod::kLockTables;
  so.lock_tables = {{"snap_test", "comp"}, {"snap_test", "nopk"}};
  auto snap = Snapshot::Begin(opts_, so);
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  EXPECT_EQ((*snap)->point().position, *before);
  EXPECT_EQ((*snap)->point().gtid, gtid_before);
  // The lock is released: writes go through at once.
  Exec("INSERT INTO snap_test.comp VALUES (2,'b',20)");
  Collector col;
  ASSERT_TRUE((*snap)->ReadTable(Load("comp"), std::nullopt, 10, col.Callback()).ok());
  EXPECT_THAT(col.keys, ElementsAre("1/a"));

  so.lock_tables.clear();
  EXPECT_EQ(Snapshot::Begin(opts_, so).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(SnapshotLiveTest, ChunkedCompositeKeyReadReturnsEveryRowOnceInOrder) {
  // 3 x 4 keys inserted out of order; b values that sort differently as numbers and text.
  Exec("INSERT INTO snap_test.comp VALUES "
       "(2,'b',1),(1,'c',1),(3,'a',1),(1,'a',1),(2,'a',1),(3,'c',1),"
       "(1,'b',1),(2,'c',1),(3,'b',1),(1,'d''q',1),(2,'10',1),(2,'9',1)");
  auto snap = Snapshot::Begin(opts_);
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  TableSchema s = Load("comp");
  Collector col;
  Status st = (*snap)->ReadTable(s, std::nullopt, 3, col.Callback());
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_THAT(col.keys, ElementsAre("1/a", "1/b", "1/c", "1/d'q", "2/10", "2/9", "2/a", "2/b",
                                    "2/c", "3/a", "3/b", "3/c"));
  EXPECT_THAT(col.chunk_sizes, ElementsAre(3, 3, 3, 3));
  EXPECT_THAT(col.last_keys[0], ElementsAre("1", "c"));
  EXPECT_THAT(col.last_keys[1], ElementsAre("2", "9"));

  // Resume after a last key (one with a quote in it).
  Collector resumed;
  st = (*snap)->ReadTable(s, std::vector<std::string>{"1", "d'q"}, 5, resumed.Callback());
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_THAT(resumed.keys,
              ElementsAre("2/10", "2/9", "2/a", "2/b", "2/c", "3/a", "3/b", "3/c"));
  EXPECT_THAT(resumed.chunk_sizes, ElementsAre(5, 3));

  // A wrong-sized or ill-typed key is rejected.
  EXPECT_EQ((*snap)->ReadTable(s, std::vector<std::string>{"1"}, 5, resumed.Callback()).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      (*snap)->ReadTable(s, std::vector<std::string>{"x;DROP", "a"}, 5, resumed.Callback()).code(),
      StatusCode::kInvalidArgument);
}

TEST_F(SnapshotLiveTest, TableWithoutPrimaryKeyIsStreamedInChunks) {
  Exec("INSERT INTO snap_test.nopk VALUES (1,'a'),(2,NULL),(3,'c'),(4,'d'),(5,'e')");
  auto snap = Snapshot::Begin(opts_);
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  TableSchema s = Load("nopk");
  std::vector<size_t> sizes;
  std::vector<Row> all;
  Status st = (*snap)->ReadTable(s, std::nullopt, 2,
                                 [&](std::vector<Row> rows, const std::vector<std::string>& key) {
                                   EXPECT_TRUE(key.empty());
                                   sizes.push_back(rows.size());
                                   for (Row& r : rows) all.push_back(std::move(r));
                                   return Status::Ok();
                                 });
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_THAT(sizes, ElementsAre(2, 2, 1));
  ASSERT_EQ(all.size(), 5u);
  EXPECT_TRUE(all[1][1].is_null());
  // The connection is usable after the stream.
  Collector col;
  EXPECT_TRUE((*snap)->ReadTable(Load("comp"), std::nullopt, 2, col.Callback()).ok());
}

TEST_F(SnapshotLiveTest, TypedKeysPaginateExactly) {
  Exec("CREATE TABLE snap_test.typed (u BIGINT UNSIGNED NOT NULL, e ENUM('z','y','x') NOT NULL, "
       "bin VARBINARY(4) NOT NULL, d DECIMAL(6,2) NOT NULL, ts TIMESTAMP(3) NOT NULL, "
       "PRIMARY KEY (u, e, bin, d, ts))");
  Exec("SET time_zone = '+00:00'");
  // Values next to each other where a string or double comparison would go wrong.
  Exec("INSERT INTO snap_test.typed VALUES "
       "(18446744073709551615, 'z', X'00', 1.50, '2020-01-01 00:00:00.001'),"
       "(18446744073709551614, 'x', X'FF', 1.50, '2020-01-01 00:00:00.001'),"
       "(18446744073709551614, 'y', X'00', 1.50, '2020-01-01 00:00:00.001'),"
       "(18446744073709551614, 'z', X'FF', 2.00, '2020-01-01 00:00:00.002'),"
       "(18446744073709551614, 'z', X'FF', 1.50, '2020-01-01 00:00:00.002'),"
       "(18446744073709551614, 'z', X'FF', 1.50, '2020-01-01 00:00:00.001'),"
       "(18446744073709551614, 'z', X'00', 10.00, '2020-01-01 00:00:00.001')");
  auto snap = Snapshot::Begin(opts_);
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  TableSchema s = Load("typed");
  std::vector<std::string> keys;
  Status st = (*snap)->ReadTable(s, std::nullopt, 1,
                                 [&](std::vector<Row> rows, const std::vector<std::string>&) {
                                   for (const Row& r : rows) {
                                     std::string k;
                                     for (const Value& v : r) k += v.DebugString() + " ";
                                     keys.push_back(k);
                                   }
                                   return Status::Ok();
                                 });
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_EQ(keys.size(), 7u);
  // Enum order is definition order (z < y < x); binary order is byte order.
  EXPECT_THAT(keys[0], HasSubstr("UInt(18446744073709551614) Text(\"z\") Bytes(0x00) Text(\"10.00\")"));
  EXPECT_THAT(keys[1], HasSubstr("UInt(18446744073709551614) Text(\"z\") Bytes(0xff) Text(\"1.50\") Text(\"2020-01-01 00:00:00.001\")"));
  EXPECT_THAT(keys[2], HasSubstr("Text(\"1.50\") Text(\"2020-01-01 00:00:00.002\")"));
  EXPECT_THAT(keys[3], HasSubstr("Text(\"2.00\")"));
  EXPECT_THAT(keys[4], HasSubstr("Text(\"y\")"));
  EXPECT_THAT(keys[5], HasSubstr("Text(\"x\")"));
  EXPECT_THAT(keys[6], HasSubstr("UInt(18446744073709551615)"));
}

TEST_F(SnapshotLiveTest, KeyLiterals) {
  ColumnDesc i;
  i.name = "i";
  i.SetType("int");
  EXPECT_EQ(*KeyLiteral(*c_, i, "-5"), "-5");
  EXPECT_EQ(KeyLiteral(*c_, i, "5 OR 1=1").status().code(), StatusCode::kInvalidArgument);
  ColumnDesc d;
  d.SetType("double");
  EXPECT_EQ(*KeyLiteral(*c_, d, "0.1"), "0.1e0");
  ColumnDesc f;
  f.SetType("float");
  EXPECT_EQ(*KeyLiteral(*c_, f, "0.1"), "CAST(0.1 AS FLOAT)");
  ColumnDesc e;
  e.SetType("enum");
  e.labels = {"p", "q"};
  EXPECT_EQ(*KeyLiteral(*c_, e, "q"), "2");
  ColumnDesc st;
  st.SetType("set");
  st.labels = {"p", "q", "r"};
  EXPECT_EQ(*KeyLiteral(*c_, st, "p,r"), "5");
  ColumnDesc b;
  b.SetType("varbinary");
  b.charset = "binary";
  EXPECT_EQ(*KeyLiteral(*c_, b, std::string("\x00\xab", 2)), "X'00AB'");
  ColumnDesc t;
  t.SetType("varchar");
  t.charset = "utf8mb4";
  EXPECT_EQ(*KeyLiteral(*c_, t, "it's"), "'it\\'s'");
}

// Read transactions opened together at one binlog offset share one BINLOG_GTID_POS (the
// server reads the binlog file from its start for it); every point's GTID must still be what
// the server maps that transaction's own offset to.
TEST_F(SnapshotLiveTest, ManyTransactionsCarryTheGtidOfTheirOwnOffset) {
  Exec("INSERT INTO snap_test.comp VALUES (1, 'a', 1)");
  auto snaps = Snapshot::BeginMany(opts_, 3, SnapshotOptions{});
  ASSERT_TRUE(snaps.ok()) << snaps.status().ToString();
  ASSERT_EQ(snaps->size(), 3u);
  for (size_t i = 0; i < snaps->size(); ++i) {
    const SnapshotPoint& p = (*snaps)[i]->point();
    auto g = c_->Query(fmt::format("SELECT BINLOG_GTID_POS({}, {})", c_->Quote(p.position.file), p.position.pos));
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_EQ(p.gtid, g->rows[0][0].value_or("NULL"))
        << "transaction " << i << " at " << p.position.ToString() << ": its GTID must map its own offset";
    EXPECT_FALSE(p.gtid.empty()) << "transaction " << i;
  }
}

// A point at the binlog's end takes its GTID from @@global.gtid_binlog_pos, read between two
// reads of the binlog's end; any other point from BINLOG_GTID_POS. With a writer committing
// all the while, some transactions open at the end and some behind it, and a GTID from the
// variable read while a commit lands would be one transaction ahead: every point's GTID must
// be what BINLOG_GTID_POS maps its offset to.
TEST_F(SnapshotLiveTest, PointsTakenDuringCommitsCarryTheGtidOfTheirOwnOffset) {
  std::atomic<bool> stop{false};
  std::atomic<int> inserted{0};
  std::thread writer([&] {
    auto w = testing::ConnectTestServer();
    if (w == nullptr) return;
    for (int i = 1; !stop.load(); ++i) {
      if (!w->Execute(fmt::format("INSERT INTO snap_test.comp VALUES ({}, 'w', {})", i, i)).ok()) return;
      inserted.fetch_add(1);
    }
  });
  std::vector<SnapshotPoint> points;
  for (int i = 0; i < 40; ++i) {
    auto snap = Snapshot::Begin(opts_, SnapshotOptions{});
    ASSERT_TRUE(snap.ok()) << snap.status().ToString();
    points.push_back((*snap)->point());
  }
  stop = true;
  writer.join();
  EXPECT_GT(inserted.load(), 0) << "the writer never committed: the test proves nothing";
  std::set<std::string> gtids;
  for (const SnapshotPoint& p : points) {
    auto g = c_->Query(fmt::format("SELECT BINLOG_GTID_POS({}, {})", c_->Quote(p.position.file), p.position.pos));
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_EQ(p.gtid, g->rows[0][0].value_or("NULL")) << "point " << p.position.ToString();
    gtids.insert(p.gtid);
  }
  EXPECT_GT(gtids.size(), 1u) << "every point was at one GTID: the writer did not overlap the snapshots";
  // Quiet now: the point is the binlog's end, the GTID comes from the variable.
  auto snap = Snapshot::Begin(opts_, SnapshotOptions{});
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  EXPECT_EQ((*snap)->point().gtid, BinlogGtidPos());
}

}  // namespace
}  // namespace sluice
