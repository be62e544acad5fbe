// Pure parts of watermark consistency (watermark.h): which keys a window collects, which rows
// a chunk then leaves to the stream, and how the window is found between L and H.
#include "snapshot/watermark.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TableSchemaPtr Table(const std::string& db, const std::string& name, std::vector<std::string> cols,
                     std::vector<size_t> pk) {
  auto s = std::make_shared<TableSchema>();
  s->db = db;
  s->table = name;
  for (const std::string& c : cols) {
    ColumnDesc d;
    d.name = c;
    s->columns.push_back(d);
  }
  s->primary_key = std::move(pk);
  return s;
}

RowChange Change(Op op, TableSchemaPtr t, Row before, Row after, uint64_t pos = 100) {
  RowChange c;
  c.op = op;
  c.table = std::move(t);
  c.before = std::move(before);
  c.after = std::move(after);
  c.source.file = "bin.000001";
  c.source.pos = pos;
  return c;
}

Row R(int64_t tenant, std::string id, int64_t v) { return Row{Value::Int(tenant), Value::Text(std::move(id)), Value::Int(v)}; }

TEST(WindowKeys, CollectsBothImagesOfEveryChangeAndMatchesExactKeys) {
  auto t = Table("shop", "orders", {"tenant", "id", "v"}, {0, 1});
  WindowKeys w;
  ASSERT_TRUE(w.Add(Change(Op::kUpdate, t, R(1, "a", 0), R(1, "A", 1))).ok());  // key change
  ASSERT_TRUE(w.Add(Change(Op::kDelete, t, R(2, "x", 0), {})).ok());
  ASSERT_TRUE(w.Add(Change(Op::kCreate, t, {}, R(3, "n", 5))).ok());
  EXPECT_EQ(w.keys(), 4u) << "old and new key of the update, the deleted and the inserted key";
  EXPECT_TRUE(w.Touches("shop.orders"));
  EXPECT_FALSE(w.Touches("shop.other"));
  // Values other than the key do not matter; the key must match column by column.
  EXPECT_TRUE(w.Contains(*t, R(1, "a", 42)));
  EXPECT_TRUE(w.Contains(*t, R(1, "A", 7)));
  EXPECT_TRUE(w.Contains(*t, R(2, "x", 0)));
  EXPECT_TRUE(w.Contains(*t, R(3, "n", 0)));
  EXPECT_FALSE(w.Contains(*t, R(2, "a", 0))) << "the same id under another tenant is another key";
  EXPECT_FALSE(w.Contains(*t, R(1, "b", 0)));
  // Column texts are kept apart: ("1", "2a") is not ("12", "a").
  auto u = Table("shop", "pairs", {"a", "b"}, {0, 1});
  WindowKeys w2;
  ASSERT_TRUE(w2.Add(Change(Op::kCreate, u, {}, Row{Value::Text("1"), Value::Text("2a")})).ok());
  EXPECT_FALSE(w2.Contains(*u, Row{Value::Text("12"), Value::Text("a")}));
  EXPECT_TRUE(w2.Contains(*u, Row{Value::Text("1"), Value::Text("2a")}));
  // The same key in another table is not this table's key.
  auto other = Table("shop", "orders2", {"tenant", "id", "v"}, {0, 1});
  EXPECT_FALSE(w.Contains(*other, R(1, "a", 0)));
}

TEST(WindowKeys, RefusesAPartialAfterImage) {
  // binlog_row_image MINIMAL/NOBLOB: a dropped row could not be rebuilt from this change.
  auto t = Table("shop", "orders", {"tenant", "id", "v"}, {0, 1});
  WindowKeys w;
  Status st = w.Add(Change(Op::kUpdate, t, R(1, "a", 0), Row{Value::Int(1), Value::Text("a"), Value::Absent()}, 4242));
  ASSERT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("shop.orders"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("bin.000001:4242"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("column v"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("binlog_row_image"), std::string::npos) << st.message();
  // A partial before image (the key is there) is fine: only after images rebuild rows.
  Status del = w.Add(Change(Op::kDelete, t, Row{Value::Int(1), Value::Text("a"), Value::Absent()}, {}));
  EXPECT_TRUE(del.ok()) << del.ToString();
}

TEST(WatermarkSettings, NeedFullImagesAndCommitsInBinlogOrder) {
  EXPECT_TRUE(CheckWatermarkSettings("FULL", std::nullopt).ok()) << "MariaDB: no binlog_order_commits";
  EXPECT_TRUE(CheckWatermarkSettings("FULL", "1").ok()) << "MySQL, binlog_order_commits=ON";
  EXPECT_TRUE(CheckWatermarkSettings("FULL", "ON").ok());
  for (const char* image : {"MINIMAL", "NOBLOB", ""}) {
    Status st = CheckWatermarkSettings(image, std::nullopt);
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << image;
    EXPECT_NE(st.message().find("binlog_row_image=FULL"), std::string::npos) << st.message();
  }
  for (const char* off : {"0", "OFF", ""}) {
    Status st = CheckWatermarkSettings("FULL", std::string(off));
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << "binlog_order_commits=" << off;
    EXPECT_NE(st.message().find("binlog_order_commits=ON"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("(the server has " + std::string(*off ? off : "none") + ")"), std::string::npos)
        << st.message();
  }
}

TEST(WindowKeys, KeylessTablesAreTouchedButHaveNoKeys) {
  auto t = Table("shop", "log", {"k", "v"}, {});
  WindowKeys w;
  ASSERT_TRUE(w.Add(Change(Op::kCreate, t, {}, Row{Value::Int(1), Value::Text("x")})).ok());
  EXPECT_TRUE(w.Touches("shop.log"));
  EXPECT_EQ(w.keys(), 0u);
}

TEST(DropWindowRows, DropsOnlyTheWindowsKeysAndKeepsOrder) {
  auto t = Table("shop", "orders", {"tenant", "id", "v"}, {0, 1});
  WindowKeys w;
  ASSERT_TRUE(w.Add(Change(Op::kUpdate, t, R(1, "b", 0), R(1, "b", 1))).ok());
  ASSERT_TRUE(w.Add(Change(Op::kDelete, t, R(1, "d", 0), {})).ok());
  std::vector<Row> rows = {R(1, "a", 0), R(1, "b", 0), R(1, "c", 0), R(1, "d", 0), R(1, "e", 0)};
  EXPECT_EQ(DropWindowRows(w, *t, &rows), 2u);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0][1].ToText(), "a");
  EXPECT_EQ(rows[1][1].ToText(), "c");
  EXPECT_EQ(rows[2][1].ToText(), "e");
  // A window that did not touch the table leaves the chunk alone; an empty window too.
  auto other = Table("shop", "items", {"tenant", "id", "v"}, {0, 1});
  std::vector<Row> items = {R(1, "b", 0)};
  EXPECT_EQ(DropWindowRows(w, *other, &items), 0u);
  EXPECT_EQ(items.size(), 1u);
  EXPECT_EQ(DropWindowRows(WindowKeys{}, *t, &items), 0u);
  // Every row dropped: an empty chunk (its last key still counts as read, coordinator.cc).
  std::vector<Row> all = {R(1, "b", 0), R(1, "d", 0)};
  EXPECT_EQ(DropWindowRows(w, *t, &all), 2u);
  EXPECT_TRUE(all.empty());
}

CommittedTransaction Txn(std::vector<RowChange> changes, uint64_t end) {
  CommittedTransaction t;
  t.changes = std::move(changes);
  t.end.position = BinlogPosition{"bin.000001", end};
  t.end.gtid = fmt::format("0-1-{}", end);
  return t;
}

TEST(WindowScan, CollectsKeysOnlyBetweenLowAndHighAndTakesLowsEnd) {
  auto signal = Table("sluice", "watermarks", {"id", "token", "written_at"}, {0});
  auto t = Table("shop", "orders", {"tenant", "id", "v"}, {0, 1});
  auto mark = [&](const std::string& token) {
    return Change(Op::kUpdate, signal, Row{Value::UInt(1), Value::Text("old"), Value::Text("x")},
                  Row{Value::UInt(1), Value::Text(token), Value::Text("x")});
  };
  WindowScan scan("sluice.watermarks", "L-1", "H-1");
  // Before L: in the copy, not in the window.
  ASSERT_FALSE(*scan.Feed(Txn({Change(Op::kUpdate, t, R(1, "before", 0), R(1, "before", 1))}, 200)));
  // Another worker's marks are ordinary transactions of the signal table: ignored.
  ASSERT_FALSE(*scan.Feed(Txn({mark("L-other")}, 250)));
  ASSERT_FALSE(scan.found_low());
  ASSERT_FALSE(*scan.Feed(Txn({mark("L-1")}, 300)));
  ASSERT_TRUE(scan.found_low());
  EXPECT_EQ(scan.low_end().position.pos, 300u) << "the point is the end of L's transaction";
  EXPECT_EQ(scan.low_end().gtid, "0-1-300");
  ASSERT_FALSE(*scan.Feed(Txn({Change(Op::kUpdate, t, R(1, "in", 0), R(1, "in", 1)), mark("H-other")}, 400)));
  auto done = scan.Feed(Txn({mark("H-1")}, 500));
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(*done);
  EXPECT_EQ(scan.high_end().position.pos, 500u);
  EXPECT_EQ(scan.transactions(), 1u);
  EXPECT_TRUE(scan.keys().Contains(*t, R(1, "in", 9)));
  EXPECT_FALSE(scan.keys().Contains(*t, R(1, "before", 9))) << "a change before L is in the copy";
  EXPECT_FALSE(scan.keys().Touches("sluice.watermarks")) << "the signal table is not a captured table";
}

TEST(WindowScan, HighBeforeLowIsAnError) {
  auto signal = Table("sluice", "watermarks", {"id", "token", "written_at"}, {0});
  WindowScan scan("sluice.watermarks", "L-1", "H-1");
  auto st = scan.Feed(Txn({Change(Op::kCreate, signal, {}, Row{Value::UInt(1), Value::Text("H-1"), Value::Text("x")})}, 10));
  EXPECT_EQ(st.status().code(), StatusCode::kInternal);
}

TEST(WindowScan, AWindowOfNoTransactionsIsEmpty) {
  auto signal = Table("sluice", "watermarks", {"id", "token", "written_at"}, {0});
  WindowScan scan("sluice.watermarks", "L-1", "H-1");
  auto mk = [&](const char* tok) { return Change(Op::kCreate, signal, {}, Row{Value::UInt(1), Value::Text(tok), Value::Text("x")}); };
  ASSERT_FALSE(*scan.Feed(Txn({mk("L-1")}, 10)));
  ASSERT_TRUE(*scan.Feed(Txn({mk("H-1")}, 20)));
  EXPECT_EQ(scan.keys().keys(), 0u);
  EXPECT_EQ(scan.keys().tables(), 0u);
  EXPECT_EQ(scan.transactions(), 0u);
}

}  // namespace
}  // namespace sluice
