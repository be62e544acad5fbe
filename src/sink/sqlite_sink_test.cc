#include "sink/sqlite_sink.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdint>
#include <limits>
#include <map>
#include <thread>

#include "checkpoint/checkpoint.h"

namespace sluice {
namespace {

ColumnDesc Col(std::string name, std::string type, bool is_unsigned = false) {
  ColumnDesc c;
  c.name = std::move(name);
  c.SetType(type);
  c.is_unsigned = is_unsigned;
  return c;
}

TableSchemaPtr Table(std::string db, std::string table, std::vector<ColumnDesc> cols,
                     std::vector<size_t> pk) {
  auto t = std::make_shared<TableSchema>();
  t->db = std::move(db);
  t->table = std::move(table);
  t->columns = std::move(cols);
  t->primary_key = std::move(pk);
  return t;
}

// shop.items(id INT PK, name VARCHAR, price DECIMAL, qty INT)
TableSchemaPtr ItemsTable() {
  static TableSchemaPtr t = Table(
      "shop", "items",
      {Col("id", "int"), Col("name", "varchar"), Col("price", "decimal"), Col("qty", "int")}, {0});
  return t;
}

RowChange Change(Op op, TableSchemaPtr t, Row before, Row after) {
  RowChange c;
  c.op = op;
  c.table = std::move(t);
  c.before = std::move(before);
  c.after = std::move(after);
  return c;
}

Row Item(int64_t id, std::string name, std::string price, int64_t qty) {
  return {Value::Int(id), Value::Text(std::move(name)), Value::Text(std::move(price)),
          Value::Int(qty)};
}

Transaction ItemTxn(std::vector<RowChange> changes, std::string cp) {
  Transaction t;
  t.changes = std::move(changes);
  t.checkpoint = std::move(cp);
  return t;
}

class SqliteSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-sqlite-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/replica.db";
    sink_ = OpenSink();
  }
  void TearDown() override {
    sink_.reset();
    (void)std::system(("rm -rf " + dir_).c_str());
  }

  std::unique_ptr<SqliteSink> OpenSink(size_t rows_per_statement = 1) {
    SqliteSinkOptions o;
    o.path = path_;
    o.rows_per_statement = rows_per_statement;
    Result<std::unique_ptr<SqliteSink>> s = SqliteSink::Open(o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  void ApplyOk(std::vector<RowChange> changes, std::string cp = "") {
    Status st = sink_->Apply(ItemTxn(std::move(changes), std::move(cp)));
    ASSERT_TRUE(st.ok()) << st.ToString();
  }

  // Whether the database file (not its WAL) grows to `bytes` within 5 s: the background
  // checkpointer copied the WAL into it. *size gets the last size seen.
  bool DatabaseFileReaches(off_t bytes, off_t* size) {
    struct stat st {};
    for (int i = 0; i < 500; ++i) {
      if (::stat(path_.c_str(), &st) == 0 && st.st_size >= bytes) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    *size = st.st_size;
    return st.st_size >= bytes;
  }

  // Rows of `sql` through a separate connection, each value as "<type>:<text>".
  std::vector<std::vector<std::string>> Query(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    std::vector<std::vector<std::string>> rows;
    while (s != nullptr && sqlite3_step(s) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(s); ++i) {
        switch (sqlite3_column_type(s, i)) {
          case SQLITE_NULL:
            row.push_back("null");
            break;
          case SQLITE_INTEGER:
            row.push_back("i:" + std::to_string(sqlite3_column_int64(s, i)));
            break;
          case SQLITE_FLOAT:
            row.push_back(fmt::format("r:{}", sqlite3_column_double(s, i)));
            break;
          case SQLITE_TEXT:
            row.push_back("t:" +
                          std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, i)),
                                      sqlite3_column_bytes(s, i)));
            break;
          case SQLITE_BLOB: {
            std::string hex;
            const auto* p = static_cast<const unsigned char*>(sqlite3_column_blob(s, i));
            for (int k = 0; k < sqlite3_column_bytes(s, i); ++k) hex += fmt::format("{:02x}", p[k]);
            row.push_back("b:" + hex);
          }
        }
      }
      rows.push_back(row);
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return rows;
  }

  std::optional<std::string> Checkpoint() {
    Result<std::optional<std::string>> r = sink_->LoadCheckpoint();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::nullopt;
  }

  using Rows = std::vector<std::vector<std::string>>;
  std::string dir_, path_;
  std::unique_ptr<SqliteSink> sink_;
};

// The page cache counts against sink.max_buffered_bytes (issue 8: a 32 MiB cache beside a
// full cap of change data took SQLite to 303 MiB under 256 MiB): cache and change data
// together stay within the cap, the cache is 32 MiB at most, change data keeps at least half.
TEST(SqliteMemoryTest, PageCacheAndChangeDataShareTheCap) {
  EXPECT_EQ(SqlitePageCacheBytes(256u << 20), 32u << 20) << "default cap: the 32 MiB cache";
  EXPECT_EQ(SqliteChangeDataBytes(256u << 20), 224u << 20) << "default cap: change data gets the rest";
  EXPECT_EQ(SqlitePageCacheBytes(4u << 20), 512u << 10) << "4 MiB cap: an eighth of it";
  EXPECT_EQ(SqlitePageCacheBytes(0), 32u << 20) << "no cap";
  EXPECT_EQ(SqliteChangeDataBytes(0), 0u) << "no cap stays no cap";
  for (size_t cap : {size_t{1}, size_t{1000}, size_t{100} << 10, size_t{4} << 20, size_t{64} << 20,
                     size_t{256} << 20, size_t{1} << 30, size_t{1} << 40}) {
    const size_t cache = SqlitePageCacheBytes(cap), data = SqliteChangeDataBytes(cap);
    EXPECT_LE(cache, size_t{32} << 20) << "cap " << cap;
    EXPECT_GE(data, cap / 2) << "cap " << cap;
    EXPECT_GT(data, 0u) << "cap " << cap << ": 0 would mean no cap";
    if (cap >= (size_t{512} << 10)) {
      EXPECT_LE(cache + data, cap) << "cap " << cap;
    }
  }
}

TEST(SqliteNamesTest, NamesTypesAndQuoting) {
  EXPECT_EQ(SqliteTableName(*ItemsTable()), "shop.items");
  EXPECT_EQ(SqliteQuote("a\"b"), "\"a\"\"b\"");
  EXPECT_EQ(SqliteColumnType(Col("c", "tinyint", true)), "INTEGER");
  EXPECT_EQ(SqliteColumnType(Col("c", "int", true)), "INTEGER");
  EXPECT_EQ(SqliteColumnType(Col("c", "bigint")), "INTEGER");
  EXPECT_EQ(SqliteColumnType(Col("c", "bigint", true)), "");
  EXPECT_EQ(SqliteColumnType(Col("c", "year")), "INTEGER");
  ColumnDesc bit = Col("c", "bit");
  bit.numeric_precision = 8;
  EXPECT_EQ(SqliteColumnType(bit), "INTEGER");
  bit.numeric_precision = 64;
  EXPECT_EQ(SqliteColumnType(bit), "");
  EXPECT_EQ(SqliteColumnType(Col("c", "float")), "REAL");
  EXPECT_EQ(SqliteColumnType(Col("c", "double")), "REAL");
  for (const char* t : {"decimal", "datetime", "timestamp", "time", "date", "varchar", "enum",
                        "set", "json", "longtext"}) {
    EXPECT_EQ(SqliteColumnType(Col("c", t)), "TEXT") << t;
  }
  for (const char* t : {"varbinary", "blob", "binary", "geometry", "point"}) {
    EXPECT_EQ(SqliteColumnType(Col("c", t)), "BLOB") << t;
  }
  EXPECT_EQ(SqliteColumnType(Col("c", "vector")), "");
}

TEST_F(SqliteSinkTest, CreatesTableWithMappedTypes) {
  ASSERT_TRUE(sink_);
  ASSERT_TRUE(sink_->PrepareTable(*ItemsTable()).ok());
  ASSERT_TRUE(sink_->PrepareTable(*ItemsTable()).ok());  // idempotent
  EXPECT_EQ(Query("SELECT name, type, pk FROM pragma_table_info('shop.items') ORDER BY cid"),
            (Rows{{"t:id", "t:INTEGER", "i:1"},
                  {"t:name", "t:TEXT", "i:0"},
                  {"t:price", "t:TEXT", "i:0"},
                  {"t:qty", "t:INTEGER", "i:0"}}));
  EXPECT_EQ(Query("SELECT name, source_db, source_table FROM _sluice_tables"),
            (Rows{{"t:shop.items", "t:shop", "t:items"}}));
  EXPECT_EQ(Query("PRAGMA journal_mode"), (Rows{{"t:wal"}}));
  EXPECT_EQ(Checkpoint(), std::nullopt);
}

TEST_F(SqliteSinkTest, UpsertUpdateKeyChangeDelete) {
  ASSERT_TRUE(sink_);
  ApplyOk({Change(Op::kRead, ItemsTable(), {}, Item(1, "pen", "1.50", 10)),
           Change(Op::kRead, ItemsTable(), {}, Item(2, "ink", "0.99", 5))},
          "cp1");
  ApplyOk({Change(Op::kCreate, ItemsTable(), {}, Item(1, "pen", "1.75", 11))}, "cp2");  // upsert
  EXPECT_EQ(Query("SELECT * FROM \"shop.items\" ORDER BY id"),
            (Rows{{"i:1", "t:pen", "t:1.75", "i:11"}, {"i:2", "t:ink", "t:0.99", "i:5"}}));
  // Plain update, then a primary-key change, then a delete.
  ApplyOk({Change(Op::kUpdate, ItemsTable(), Item(2, "ink", "0.99", 5), Item(2, "ink", "1.09", 4))});
  ApplyOk({Change(Op::kUpdate, ItemsTable(), Item(1, "pen", "1.75", 11), Item(7, "pen", "1.75", 11))});
  EXPECT_EQ(Query("SELECT * FROM \"shop.items\" ORDER BY id"),
            (Rows{{"i:2", "t:ink", "t:1.09", "i:4"}, {"i:7", "t:pen", "t:1.75", "i:11"}}));
  ApplyOk({Change(Op::kDelete, ItemsTable(), Item(2, "ink", "1.09", 4), {})}, "cp3");
  EXPECT_EQ(Query("SELECT * FROM \"shop.items\" ORDER BY id"),
            (Rows{{"i:7", "t:pen", "t:1.75", "i:11"}}));
  EXPECT_EQ(Checkpoint(), "cp3");
  // Deleting a missing row is not an error; updating one inserts the after image.
  ApplyOk({Change(Op::kDelete, ItemsTable(), Item(2, "ink", "1.09", 4), {}),
           Change(Op::kUpdate, ItemsTable(), Item(9, "cap", "2", 1), Item(9, "cap", "3", 1))});
  EXPECT_EQ(Query("SELECT * FROM \"shop.items\" ORDER BY id"),
            (Rows{{"i:7", "t:pen", "t:1.75", "i:11"}, {"i:9", "t:cap", "t:3", "i:1"}}));
  // Swapping two keys inside one transaction.
  ApplyOk({Change(Op::kUpdate, ItemsTable(), Item(7, "pen", "1.75", 11), Item(100, "pen", "1.75", 11)),
           Change(Op::kUpdate, ItemsTable(), Item(9, "cap", "3", 1), Item(7, "cap", "3", 1)),
           Change(Op::kUpdate, ItemsTable(), Item(100, "pen", "1.75", 11), Item(9, "pen", "1.75", 11))});
  EXPECT_EQ(Query("SELECT id, name FROM \"shop.items\" ORDER BY id"),
            (Rows{{"i:7", "t:cap"}, {"i:9", "t:pen"}}));
}

TEST_F(SqliteSinkTest, AbsentColumnsAreUntouched) {
  ASSERT_TRUE(sink_);
  ApplyOk({Change(Op::kCreate, ItemsTable(), {}, Item(1, "pen", "1.50", 10))});
  // MINIMAL image: before has the key only, after only the changed column.
  Row before = {Value::Int(1), Value::Absent(), Value::Absent(), Value::Absent()};
  Row after = {Value::Absent(), Value::Absent(), Value::Absent(), Value::Int(3)};
  ApplyOk({Change(Op::kUpdate, ItemsTable(), before, after)});
  EXPECT_EQ(Query("SELECT * FROM \"shop.items\""), (Rows{{"i:1", "t:pen", "t:1.50", "i:3"}}));
  // Key change with a minimal after image keeps the other columns.
  after = {Value::Int(5), Value::Absent(), Value::Absent(), Value::Absent()};
  ApplyOk({Change(Op::kUpdate, ItemsTable(), before, after)});
  EXPECT_EQ(Query("SELECT * FROM \"shop.items\""), (Rows{{"i:5", "t:pen", "t:1.50", "i:3"}}));
  // Insert with absent columns: they get the source DEFAULT (none here: NULL).
  ApplyOk({Change(Op::kCreate, ItemsTable(), {},
                  {Value::Int(6), Value::Text("cup"), Value::Absent(), Value::Absent()})});
  EXPECT_EQ(Query("SELECT * FROM \"shop.items\" WHERE id = 6"),
            (Rows{{"i:6", "t:cup", "null", "null"}}));
  // Upsert over an existing row leaves its absent columns alone.
  ApplyOk({Change(Op::kCreate, ItemsTable(), {},
                  {Value::Int(5), Value::Text("pencil"), Value::Absent(), Value::Absent()})});
  EXPECT_EQ(Query("SELECT * FROM \"shop.items\" WHERE id = 5"),
            (Rows{{"i:5", "t:pencil", "t:1.50", "i:3"}}));
  // Delete by a key-only before image.
  ApplyOk({Change(Op::kDelete, ItemsTable(),
                  {Value::Int(5), Value::Absent(), Value::Absent(), Value::Absent()}, {})});
  EXPECT_EQ(Query("SELECT id FROM \"shop.items\""), (Rows{{"i:6"}}));
}

TEST_F(SqliteSinkTest, TableWithoutPrimaryKey) {
  ASSERT_TRUE(sink_);
  auto log = Table("shop", "log", {Col("msg", "varchar"), Col("n", "int")}, {});
  auto row = [](const char* m, std::optional<int64_t> n) {
    return Row{Value::Text(m), n ? Value::Int(*n) : Value::Null()};
  };
  ApplyOk({Change(Op::kRead, log, {}, row("a", 1)), Change(Op::kRead, log, {}, row("a", 1)),
           Change(Op::kCreate, log, {}, row("b", std::nullopt))});
  // Update touches only the first matching row; NULL matches NULL.
  ApplyOk({Change(Op::kUpdate, log, row("a", 1), row("a", 2)),
           Change(Op::kUpdate, log, row("b", std::nullopt), row("b", 3))});
  EXPECT_EQ(Query("SELECT msg, n FROM \"shop.log\" ORDER BY rowid"),
            (Rows{{"t:a", "i:2"}, {"t:a", "i:1"}, {"t:b", "i:3"}}));
  ApplyOk({Change(Op::kDelete, log, row("a", 1), {})});
  EXPECT_EQ(Query("SELECT msg, n FROM \"shop.log\" ORDER BY rowid"),
            (Rows{{"t:a", "i:2"}, {"t:b", "i:3"}}));
  // An update that matches nothing inserts the after image.
  ApplyOk({Change(Op::kUpdate, log, row("zz", 0), row("c", 4))});
  EXPECT_EQ(Query("SELECT count(*) FROM \"shop.log\""), (Rows{{"i:3"}}));
  EXPECT_EQ(Query("SELECT pk FROM pragma_table_info('shop.log')"), (Rows{{"i:0"}, {"i:0"}}));
}

TEST_F(SqliteSinkTest, ValuesAreStoredLosslessly) {
  ASSERT_TRUE(sink_);
  ColumnDesc bit64 = Col("bits", "bit");
  bit64.numeric_precision = 64;
  auto t =
      Table("db", "all\"types",
            {Col("id", "bigint", true), Col("i", "bigint"), Col("f", "float"), Col("d", "double"),
             Col("we\"ird", "varchar"), Col("b", "varbinary"), bit64, Col("nul", "int")},
            {0});
  const uint64_t umax = std::numeric_limits<uint64_t>::max();
  ApplyOk({Change(Op::kCreate, t, {},
                  {Value::UInt(umax), Value::Int(std::numeric_limits<int64_t>::min()),
                   Value::Float(0.1f), Value::Double(0.1 + 0.2), Value::Text("\xf0\x9f\x98\x80"),
                   Value::Bytes(std::string("\x00\xff", 2)), Value::UInt(1), Value::Null()}),
           Change(Op::kCreate, t, {},
                  {Value::UInt(9223372036854775807ull), Value::Int(0), Value::Float(-1.5f),
                   Value::Double(1e300), Value::Text(""), Value::Bytes(""), Value::UInt(umax),
                   Value::Int(1)})});
  EXPECT_EQ(Query("SELECT id, i, f = CAST(0.1 AS REAL), d, \"we\"\"ird\", b, bits, nul FROM "
                  "\"db.all\"\"types\" ORDER BY rowid"),
            (Rows{{"t:18446744073709551615", "i:-9223372036854775808", "i:0",
                   "r:0.30000000000000004", "t:\xf0\x9f\x98\x80", "b:00ff", "i:1", "null"},
                  {"i:9223372036854775807", "i:0", "i:0", "r:1e+300",
                   "t:", "b:", "t:18446744073709551615", "i:1"}}));
  // FLOAT keeps the float32 value exactly (widened to double).
  EXPECT_EQ(Query("SELECT f FROM \"db.all\"\"types\" WHERE i = 0"), (Rows{{"r:-1.5"}}));
  EXPECT_EQ(Query("SELECT f = " + fmt::format("{}", static_cast<double>(0.1f)) +
                  " FROM \"db.all\"\"types\" ORDER BY rowid LIMIT 1"),
            (Rows{{"i:1"}}));
  // The text form of UINT64_MAX still works as a key.
  ApplyOk({Change(Op::kDelete, t,
                  {Value::UInt(umax), Value::Absent(), Value::Absent(), Value::Absent(),
                   Value::Absent(), Value::Absent(), Value::Absent(), Value::Absent()},
                  {})});
  EXPECT_EQ(Query("SELECT count(*) FROM \"db.all\"\"types\""), (Rows{{"i:1"}}));
}

TEST_F(SqliteSinkTest, FailedApplyChangesNothing) {
  ASSERT_TRUE(sink_);
  ApplyOk({Change(Op::kCreate, ItemsTable(), {}, Item(1, "pen", "1.50", 10))}, "cp1");
  Row short_row = {Value::Int(3), Value::Text("x")};
  Status st = sink_->Apply(
      ItemTxn({Change(Op::kCreate, ItemsTable(), {}, Item(2, "ink", "1", 1)),
           Change(Op::kUpdate, ItemsTable(), Item(1, "pen", "1.50", 10), Item(1, "pen", "9", 9)),
           Change(Op::kCreate, ItemsTable(), {}, short_row)},
          "cp2"));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("shop.items"), std::string::npos) << st.ToString();
  EXPECT_EQ(Query("SELECT * FROM \"shop.items\""), (Rows{{"i:1", "t:pen", "t:1.50", "i:10"}}));
  EXPECT_EQ(Checkpoint(), "cp1");
  // An unsigned value too large for an INTEGER column fails the same way, naming the column.
  auto u = Table("shop", "u", {Col("id", "int", true)}, {0});
  st = sink_->Apply(
      ItemTxn({Change(Op::kCreate, ItemsTable(), {}, Item(2, "ink", "1", 1)),
           Change(Op::kCreate, u, {}, {Value::UInt(std::numeric_limits<uint64_t>::max())})},
          "cp2"));
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
  EXPECT_NE(st.message().find("column id"), std::string::npos) << st.ToString();
  EXPECT_EQ(Query("SELECT count(*) FROM \"shop.items\""), (Rows{{"i:1"}}));
  EXPECT_EQ(Checkpoint(), "cp1");
  // The sink is still usable.
  ApplyOk({Change(Op::kCreate, ItemsTable(), {}, Item(2, "ink", "1", 1))}, "cp3");
  EXPECT_EQ(Checkpoint(), "cp3");
}

TEST_F(SqliteSinkTest, CheckpointSurvivesReopen) {
  ASSERT_TRUE(sink_);
  ASSERT_TRUE(sink_->SaveCheckpoint("{\"version\":1}").ok());
  EXPECT_EQ(Checkpoint(), "{\"version\":1}");
  ApplyOk({Change(Op::kCreate, ItemsTable(), {}, Item(1, "pen", "1.50", 10))}, "cp-a");
  ApplyOk({Change(Op::kCreate, ItemsTable(), {}, Item(2, "ink", "1", 1))});  // no checkpoint: kept
  ASSERT_TRUE(sink_->Flush().ok());
  sink_ = OpenSink();
  ASSERT_TRUE(sink_);
  EXPECT_EQ(Checkpoint(), "cp-a");
  ApplyOk({Change(Op::kCreate, ItemsTable(), {}, Item(3, "cup", "2", 1))}, "cp-b");
  EXPECT_EQ(Query("SELECT count(*) FROM \"shop.items\""), (Rows{{"i:3"}}));
  EXPECT_EQ(Query("SELECT state FROM _sluice_checkpoint"), (Rows{{"t:cp-b"}}));
}

// SQLite holds at most 2000 columns: a wider table is refused naming the count, the limit and
// the ways past (it failed inside sqlite3_prepare, as a 34 KB "Internal" error).
TEST_F(SqliteSinkTest, ATableWiderThanSqliteAllowsIsRefusedSayingSo) {
  std::vector<ColumnDesc> cols;
  for (int i = 0; i < 2001; ++i) cols.push_back(Col("c" + std::to_string(i), "int"));
  Status st = sink_->PrepareTable(*Table("w", "wide", cols, {0}));
  ASSERT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("has 2001 columns; an SQLite table holds at most 2000"), std::string::npos)
      << st.ToString();
  EXPECT_LT(st.message().size(), 600u);
  cols.pop_back();
  EXPECT_TRUE(sink_->PrepareTable(*Table("w", "wide", cols, {0})).ok());
}

TEST_F(SqliteSinkTest, SchemaConflicts) {
  ASSERT_TRUE(sink_);
  // Two source tables, one SQLite name.
  ASSERT_TRUE(sink_->PrepareTable(*Table("a.b", "c", {Col("x", "int")}, {0})).ok());
  Status st = sink_->PrepareTable(*Table("a", "b.c", {Col("x", "int")}, {0}));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  // Same name in another case (SQLite names are case-insensitive).
  st = sink_->PrepareTable(*Table("A.B", "C", {Col("x", "int")}, {0}));
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  // The same table with other columns, after a restart.
  ASSERT_TRUE(sink_->PrepareTable(*ItemsTable()).ok());
  sink_ = OpenSink();
  auto changed = Table("shop", "items",
                       {Col("id", "int"), Col("name", "varchar"), Col("price", "decimal")}, {0});
  st = sink_->PrepareTable(*changed);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("shop.items"), std::string::npos) << st.ToString();
  auto retyped = Table(
      "shop", "items",
      {Col("id", "int"), Col("name", "varchar"), Col("price", "double"), Col("qty", "int")}, {0});
  st = sink_->PrepareTable(*retyped);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_NE(st.message().find("price"), std::string::npos) << st.ToString();
  EXPECT_TRUE(sink_->PrepareTable(*ItemsTable()).ok());
}

// A file that already holds a same-named table (another tool's, or an older replica):
// PrepareTable's refusal names the file, and CheckSqliteTables (`sluice check`) finds the
// same refusal, in the same words, without writing to the file.
TEST_F(SqliteSinkTest, ExistingTablesAreJudgedAlikeByTheCheckAndByPrepareTable) {
  ASSERT_TRUE(sink_);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE \"shop.items\" (a TEXT, b TEXT); "
                         "CREATE TABLE \"shop.short\" (id INTEGER PRIMARY KEY, name TEXT);"
                         "CREATE TABLE \"shop.same\" (id INTEGER PRIMARY KEY, name TEXT)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const TableSchemaPtr same = Table("shop", "same", {Col("id", "int"), Col("name", "varchar")}, {0});
  // Columns appended at the end of the source since: PrepareTable adds them.
  const TableSchemaPtr longer =
      Table("shop", "short", {Col("id", "int"), Col("name", "varchar"), Col("qty", "int")}, {0});
  const std::map<std::string, TableSchemaPtr> source = {
      {"shop.items", ItemsTable()}, {"shop.same", same}, {"shop.short", longer}};
  auto load = [&](const std::string& d, const std::string& t) -> Result<TableSchema> { return *source.at(d + "." + t); };

  auto ok = CheckSqliteTables(path_, {{"shop", "same"}, {"shop", "short"}, {"shop", "absent"}}, load);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, 2u) << "two of the three tables exist";

  auto refused = CheckSqliteTables(path_, {{"shop", "same"}, {"shop", "items"}}, load);
  ASSERT_FALSE(refused.ok());
  Status prepared = sink_->PrepareTable(*ItemsTable());
  ASSERT_FALSE(prepared.ok());
  EXPECT_EQ(prepared.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(prepared.message(),
            "sqlite " + path_ + ": table shop.items: existing sqlite column 1 (a TEXT, pk 0) does not match source "
            "column id (INTEGER, pk 1)")
      << "the run's error names the SQLite file";
  EXPECT_EQ(refused.status().code(), prepared.code());
  EXPECT_EQ(refused.status().message(), "preparing table shop.items: " + std::string(prepared.message()))
      << "the check says what the run says (its sink writer adds \"preparing table\")";
  EXPECT_TRUE(sink_->PrepareTable(*same).ok());
  EXPECT_TRUE(sink_->PrepareTable(*longer).ok());
}

TEST_F(SqliteSinkTest, AbsentColumnsOfANewRowTakeTheSourceDefault) {
  ASSERT_TRUE(sink_);
  ColumnDesc qty = Col("qty", "int");
  qty.default_value = "7";
  ColumnDesc name = Col("name", "varchar");
  name.default_value = "'n''a'";
  ColumnDesc ts = Col("ts", "timestamp");
  ts.default_value = "current_timestamp()";
  auto t = Table("shop", "defaults", {Col("id", "int"), name, qty, ts}, {0});
  ApplyOk({Change(Op::kCreate, t, {}, {Value::Int(1), Value::Absent(), Value::Absent(), Value::Absent()})});
  EXPECT_EQ(Query("SELECT * FROM \"shop.defaults\""), (Rows{{"i:1", "t:n'a", "i:7", "null"}}));
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

// Group commit: a group is one SQLite transaction carrying the last checkpoint; a failure
// anywhere in it leaves the replica and the checkpoint as they were (never half a group).
// The WAL is checkpointed into the database file by the sink's checkpointing connection while
// the sink stays open, with no call into it: SQLite's automatic checkpoint is off (the WAL
// hook replaces it), so a checkpointer that never ran would leave every row in the WAL.
TEST_F(SqliteSinkTest, WalIsCheckpointedInTheBackgroundWhileOpen) {
  const std::string big(2000, 'x');
  for (int t = 0; t < 6; ++t) {
    std::vector<RowChange> changes;
    for (int i = 0; i < 500; ++i) {
      const int id = t * 500 + i + 1;
      changes.push_back(Change(Op::kCreate, ItemsTable(), {}, Item(id, big, "1.00", id)));
    }
    ApplyOk(std::move(changes), "cp" + std::to_string(t));
  }
  // 3000 rows of 2 KB, 6 MB of WAL frames, past the 4 MB that wake the checkpointer. It copies
  // what the WAL holds when it runs: at least the ~4 MB of the commit that woke it, all 6 MB
  // if it ran after the last commit (which, once the WAL restarted, stays below the wake
  // size). Without a checkpoint the file would hold only the schema's pages.
  off_t size = 0;
  EXPECT_TRUE(DatabaseFileReaches(3'000'000, &size))
      << "after 3000 rows of 2 KB and 5 s the database file holds " << size << " bytes: the WAL was not checkpointed";
  EXPECT_EQ(Query("SELECT count(*) FROM \"shop.items\"")[0][0], "i:3000");
}

// A database the sink creates gets options.page_size; one that already holds pages keeps its
// own (SQLite fixes the size once WAL mode is on), and the sink still applies and checkpoints.
TEST_F(SqliteSinkTest, NewDatabaseTakesThePageSizeAnExistingOneKeepsItsOwn) {
  ApplyOk({Change(Op::kCreate, ItemsTable(), {}, Item(1, "a", "1.00", 1))}, "cp1");
  EXPECT_EQ(Query("PRAGMA page_size"), (std::vector<std::vector<std::string>>{{"i:16384"}}))
      << "a new database made by the sink with the default options";
  sink_.reset();

  const std::string old_path = dir_ + "/old.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(old_path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA page_size=4096; PRAGMA journal_mode=WAL; CREATE TABLE other (x)", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  path_ = old_path;
  sink_ = OpenSink();
  ASSERT_TRUE(sink_);
  const std::string big(2000, 'x');
  std::vector<RowChange> changes;
  for (int id = 1; id <= 3000; ++id) changes.push_back(Change(Op::kCreate, ItemsTable(), {}, Item(id, big, "1.00", id)));
  ApplyOk(std::move(changes), "cp2");
  EXPECT_EQ(Query("PRAGMA page_size"), (std::vector<std::vector<std::string>>{{"i:4096"}}))
      << "a database that existed with 4 KiB pages before the sink opened it";
  EXPECT_EQ(Query("SELECT count(*) FROM \"shop.items\"")[0][0], "i:3000");
  // 6 MB of rows at 4 KiB pages: the WAL passed the checkpointer's 4 MB, counted in bytes.
  off_t size = 0;
  EXPECT_TRUE(DatabaseFileReaches(5'000'000, &size))
      << "the 4 KiB-page database file holds " << size << " bytes after 5 s: not checkpointed";
}

TEST_F(SqliteSinkTest, GroupIsAppliedWholeWithTheLastCheckpointOrNotAtAll) {
  ApplyOk({Change(Op::kCreate, ItemsTable(), {}, Item(1, "a", "1.00", 1))}, "cp1");
  std::vector<Transaction> bad;
  bad.push_back(ItemTxn({Change(Op::kCreate, ItemsTable(), {}, Item(2, "b", "2.00", 2))}, "cp2"));
  bad.push_back(ItemTxn({Change(Op::kCreate, ItemsTable(), {}, {Value::Int(3)})}, "cp3"));  // too few values
  EXPECT_FALSE(sink_->ApplyGroup(bad).ok());
  EXPECT_EQ(Query("SELECT count(*) FROM \"shop.items\"")[0][0], "i:1");
  EXPECT_EQ(Checkpoint(), "cp1");

  std::vector<Transaction> good;
  good.push_back(ItemTxn({Change(Op::kCreate, ItemsTable(), {}, Item(2, "b", "2.00", 2))}, "cp2"));
  good.push_back(ItemTxn({}, "cp3"));  // a position-only advance
  good.push_back(ItemTxn({Change(Op::kUpdate, ItemsTable(), Item(2, "b", "2.00", 2), Item(2, "b", "2.50", 2)),
                      Change(Op::kCreate, ItemsTable(), {}, Item(4, "d", "4.00", 4))},
                     "cp4"));
  good.push_back(ItemTxn({Change(Op::kDelete, ItemsTable(), Item(1, "a", "1.00", 1), {})}, ""));
  Status st = sink_->ApplyGroup(good);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(Query("SELECT id, price FROM \"shop.items\" ORDER BY id"),
            (std::vector<std::vector<std::string>>{{"i:2", "t:2.50"}, {"i:4", "t:4.00"}}));
  EXPECT_EQ(Checkpoint(), "cp4");  // the last non-empty checkpoint of the group
}

// The applier's stream batching (multi-row upserts and deletes per table across a group; a
// delete then a whole row under one key sent as the upsert, an upsert then a delete as the
// delete, two upserts of one key as the second) leaves the same rows as one statement per
// change.
TEST_F(SqliteSinkTest, StreamBatchingLeavesTheSameRowsAsOneStatementPerChange) {
  ASSERT_TRUE(sink_);
  const Value kA = Value::Absent();
  std::vector<RowChange> initial;
  for (int64_t id = 1; id <= 6; ++id)
    initial.push_back(Change(Op::kCreate, ItemsTable(), {}, Item(id, "n" + std::to_string(id), "1.00", id)));
  std::vector<Transaction> group;
  // Delete then the whole row again (sysbench's pattern): one upsert.
  group.push_back(ItemTxn({Change(Op::kDelete, ItemsTable(), Item(2, "n2", "1.00", 2), {}),
                       Change(Op::kCreate, ItemsTable(), {}, Item(2, "b", "2.20", 22))}, "c1"));
  // Delete then a row with absent columns: those take the DEFAULT (NULL), not the old values.
  group.push_back(ItemTxn({Change(Op::kDelete, ItemsTable(), Item(3, "n3", "1.00", 3), {}),
                       Change(Op::kCreate, ItemsTable(), {}, {Value::Int(3), Value::Text("c"), kA, kA})}, "c2"));
  group.push_back(ItemTxn({Change(Op::kUpdate, ItemsTable(), Item(1, "n1", "1.00", 1), Item(1, "a", "1.10", 11))}, "c3"));
  // Delete, insert, delete: gone.
  group.push_back(ItemTxn({Change(Op::kDelete, ItemsTable(), Item(4, "n4", "1.00", 4), {}),
                       Change(Op::kCreate, ItemsTable(), {}, Item(4, "d", "4.40", 44)),
                       Change(Op::kDelete, ItemsTable(), Item(4, "d", "4.40", 44), {})}, "c4"));
  // The same key deleted and written again twice in one group.
  group.push_back(ItemTxn({Change(Op::kDelete, ItemsTable(), Item(2, "b", "2.20", 22), {}),
                       Change(Op::kCreate, ItemsTable(), {}, Item(2, "bb", "2.30", 23))}, "c5"));
  // A delete that stays, an update after a delete (inserts the after image), a key change.
  group.push_back(ItemTxn({Change(Op::kDelete, ItemsTable(), Item(6, "n6", "1.00", 6), {}),
                       Change(Op::kDelete, ItemsTable(), Item(5, "n5", "1.00", 5), {}),
                       Change(Op::kUpdate, ItemsTable(), Item(5, "n5", "1.00", 5), Item(5, "e", "5.50", 55)),
                       Change(Op::kUpdate, ItemsTable(), Item(1, "a", "1.10", 11), Item(7, "a", "1.10", 11))}, "c6"));
  // One key upserted three times: the last row stays.
  group.push_back(ItemTxn({Change(Op::kUpdate, ItemsTable(), Item(5, "e", "5.50", 55), Item(5, "f", "5.60", 56)),
                       Change(Op::kUpdate, ItemsTable(), Item(5, "f", "5.60", 56), Item(5, "g", "5.70", 57))}, "c7"));
  const Rows want{{"i:2", "t:bb", "t:2.30", "i:23"},
                  {"i:3", "t:c", "null", "null"},
                  {"i:5", "t:g", "t:5.70", "i:57"},
                  {"i:7", "t:a", "t:1.10", "i:11"}};
  for (size_t rows : {size_t{1}, size_t{4}, size_t{256}}) {
    sink_.reset();
    (void)std::system(("rm -f " + path_ + "*").c_str());
    sink_ = OpenSink(rows);
    ASSERT_TRUE(sink_);
    ApplyOk(initial, "c0");
    Status st = sink_->ApplyGroup(group);
    ASSERT_TRUE(st.ok()) << "rows per statement " << rows << ": " << st.ToString();
    EXPECT_EQ(Query("SELECT * FROM \"shop.items\" ORDER BY id"), want) << "rows per statement " << rows;
    EXPECT_EQ(Checkpoint(), "c7");
  }
}

}  // namespace
}  // namespace sluice

namespace sluice {
namespace {

std::shared_ptr<const SchemaHistory> ItemsHistoryWith(const std::string& column) {
  auto h = std::make_shared<SchemaHistory>();
  auto t = std::make_shared<TableSchema>(*ItemsTable());
  t->columns[1].name = column;
  EXPECT_TRUE(h->Add("shop", "items", {{"binlog.000001", 4}, t, ""}).ok());
  return h;
}

// Issue 8: the schema history is stored once per change in _sluice_schemas, in the same
// SQLite transaction as the first checkpoint that refers to it, not with every checkpoint.
TEST_F(SqliteSinkTest, SchemaHistoryIsStoredOncePerChangeBesideTheCheckpoint) {
  ::sluice::Checkpoint cp;
  cp.stream_start = {"binlog.000001", 100};
  cp.schemas = ItemsHistoryWith("name");
  auto h1 = SchemaHistoryTextOf(*cp.schemas);
  auto txn = [&](int id, uint64_t pos, const std::shared_ptr<const SchemaHistoryText>& h) {
    cp.stream_start.pos = pos;
    Transaction t = ItemTxn({Change(Op::kCreate, ItemsTable(), {}, Item(id, "x", "1.00", 1))}, cp.ToJsonWithRef(h.get()));
    t.schemas = h;
    return t;
  };
  std::vector<Transaction> group{txn(1, 200, h1), txn(2, 300, h1)};
  ASSERT_TRUE(sink_->ApplyGroup(group).ok());
  EXPECT_EQ(Query("SELECT count(*), min(ref) FROM _sluice_schemas"), (Rows{{"i:1", "t:" + h1->ref}}));
  const Rows rowid = Query("SELECT rowid FROM _sluice_schemas");
  auto state = Query("SELECT state FROM _sluice_checkpoint")[0][0];
  EXPECT_EQ(state.find("\"schemas\":"), std::string::npos) << "the history travels apart: " << state;
  EXPECT_EQ(Checkpoint(), cp.ToJson()) << "LoadCheckpoint gives the whole checkpoint back";

  // Same history: the checkpoint row moves, the history row is not written again.
  group = {txn(3, 400, h1)};
  ASSERT_TRUE(sink_->ApplyGroup(group).ok());
  EXPECT_EQ(Query("SELECT rowid FROM _sluice_schemas"), rowid) << "history rewritten for an unchanged history";
  EXPECT_EQ(Checkpoint(), cp.ToJson());

  // A failed group with a new history leaves the old one; the next good group writes it.
  cp.schemas = ItemsHistoryWith("label");
  auto h2 = SchemaHistoryTextOf(*cp.schemas);
  group = {txn(4, 500, h2), ItemTxn({Change(Op::kCreate, ItemsTable(), {}, {Value::Int(9)})}, "")};
  EXPECT_FALSE(sink_->ApplyGroup(group).ok());
  EXPECT_EQ(Query("SELECT ref FROM _sluice_schemas"), (Rows{{"t:" + h1->ref}}));
  group = {txn(4, 500, h2)};
  ASSERT_TRUE(sink_->ApplyGroup(group).ok());
  EXPECT_EQ(Query("SELECT ref FROM _sluice_schemas"), (Rows{{"t:" + h2->ref}})) << "the old history is dropped";
  const std::string whole = cp.ToJson();

  // A restart reads the whole checkpoint; a whole text saved directly is split likewise.
  sink_ = OpenSink();
  ASSERT_TRUE(sink_);
  EXPECT_EQ(Checkpoint(), whole);
  cp.schemas = ItemsHistoryWith("title");
  ASSERT_TRUE(sink_->SaveCheckpoint(cp.ToJson()).ok());
  EXPECT_EQ(Checkpoint(), cp.ToJson());
  EXPECT_EQ(Query("SELECT count(*) FROM _sluice_schemas"), (Rows{{"i:1"}}));
  EXPECT_EQ(Query("SELECT state FROM _sluice_checkpoint")[0][0].find("\"schemas\":"), std::string::npos);

  // The history lost: kCorruption naming the ref it needs, from the sink and from a reader.
  sink_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DELETE FROM _sluice_schemas", nullptr, nullptr, nullptr), SQLITE_OK);
  auto read = ReadSqliteCheckpoint(db);
  sqlite3_close(db);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), StatusCode::kCorruption);
  EXPECT_NE(read.status().message().find("_sluice_schemas"), std::string::npos) << read.status().ToString();
  sink_ = OpenSink();
  ASSERT_TRUE(sink_);
  EXPECT_EQ(sink_->LoadCheckpoint().status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace sluice

#include "schema/text_value.h"

namespace sluice {
namespace {

ColumnDesc EncCol(const std::string& name, const std::string& type, bool is_unsigned = false,
                 const std::string& charset = "", int precision = 0) {
  ColumnDesc c = Col(name, type, is_unsigned);
  c.charset = charset;
  c.numeric_precision = precision;
  return c;
}

// Snapshot chunks encoded on the read workers (NewSnapshotPreformatter) must leave the rows
// that the Rows path leaves (ValueFromText, then Bind), value and storage class, for every
// cell the encoder takes straight (text, canonical integers) and every one it converts, and
// refuse what the Rows path refuses with its error.
TEST_F(SqliteSinkTest, EncodedSnapshotReadsLeaveTheRowsOfTheRowsPath) {
  ASSERT_TRUE(sink_);
  const std::vector<ColumnDesc> cols = {
      EncCol("id", "bigint"),          EncCol("u", "bigint", true),     EncCol("tiny", "tinyint"),
      EncCol("c", "char", false, "utf8mb4"), EncCol("v", "varchar", false, "latin1"),
      EncCol("bin", "varbinary", false, "binary"), EncCol("cbin", "char", false, "binary"),
      EncCol("d", "decimal"),          EncCol("f", "float"),            EncCol("dbl", "double"),
      EncCol("dt", "datetime"),        EncCol("y", "year"),             EncCol("bits", "bit", false, "", 64),
      EncCol("b8", "bit", false, "", 8), EncCol("e", "enum"),           EncCol("j", "json"),
      EncCol("na\"me", "int"),         EncCol("uu", "int", true)};
  auto rows_table = Table("shop", "by_rows", cols, {0});
  auto encoded_table = Table("shop", "encoded", cols, {0});
  using Cells = std::vector<std::optional<std::string_view>>;
  const std::string nul("a\0b", 3);
  const std::vector<Cells> rows = {
      {"1", "18446744073709551615", "-128", "plain", "caf\xc3\xa9", "\x01\xff", "ab", "-1.50", "1.5", "0.1",
       "2024-01-02 03:04:05.123456", "2024", "5", "7", "red", "{\"a\":1}", "0", "4294967295"},
      // Not canonical integers (ZEROFILL, a sign, 19+ digits), NUL bytes, NULLs, empty text.
      {"-9223372036854775808", "007", "-05", "q\"uo\\te\n\x01", nul, std::nullopt, "", "0", "-0", "1e300",
       "0000-00-00 00:00:00", "0000", "0", "0", "", "[]", "-0", "00"},
      {"0", "0", "0", std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
       std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
       std::nullopt, std::nullopt},
      {"123456789012345678", "9223372036854775808", "00", "", "\t", "", "x", "3", "3.4028234663852886e38",
       "-2.5", "1970-01-01", "1901", "18446744073709551615", "255", "b", "null", "-2147483648", "0"},
  };
  Transaction by_rows;
  for (const Cells& cells : rows) {
    Row row;
    for (size_t i = 0; i < cells.size(); ++i) {
      Result<Value> v = ValueFromText(cols[i], cells[i]);
      ASSERT_TRUE(v.ok()) << "column " << cols[i].name << ": " << v.status().ToString();
      row.push_back(std::move(v).value());
    }
    by_rows.changes.push_back(Change(Op::kRead, rows_table, {}, std::move(row)));
  }
  by_rows.checkpoint = "c1";
  ASSERT_TRUE(sink_->Apply(by_rows).ok());

  std::unique_ptr<Preformatter> pre = sink_->NewSnapshotPreformatter();
  ASSERT_NE(pre, nullptr);
  std::unique_ptr<ReadTextFormatter> enc = pre->NewReadTextFormatter(encoded_table);
  ASSERT_NE(enc, nullptr);
  enc->Begin(SourceInfo{});
  // Two chunks in one group, as the snapshot applies them, the second with the checkpoint.
  std::vector<Transaction> group(2);
  for (size_t r = 0; r < rows.size(); ++r) {
    Transaction& t = group[r < 2 ? 0 : 1];
    if (!t.preformatted) t.preformatted.emplace();
    Status st = enc->Append(rows[r], &*t.preformatted);
    ASSERT_TRUE(st.ok()) << st.ToString();
    t.counted.Add(encoded_table, Op::kRead, 1, 0);
  }
  group[1].checkpoint = "c2";
  Status st = sink_->ApplyGroup(group);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(Checkpoint(), std::optional<std::string>("c2"));
  const Rows want = Query("SELECT * FROM \"shop.by_rows\" ORDER BY rowid");
  ASSERT_EQ(want.size(), rows.size());
  EXPECT_EQ(Query("SELECT * FROM \"shop.encoded\" ORDER BY rowid"), want);

  // The same chunk again (a copy resumed after a crash): the rows are replaced, not doubled.
  group[1].checkpoint = "c3";
  ASSERT_TRUE(sink_->ApplyGroup(group).ok());
  EXPECT_EQ(Query("SELECT * FROM \"shop.encoded\" ORDER BY rowid"), want);

  // The FormatReads way (chunks filtered as Rows) encodes the same.
  std::vector<Row> converted;
  for (const RowChange& c : by_rows.changes) converted.push_back(c.after);
  Transaction from_rows;
  auto third = Table("shop", "from_rows", cols, {0});
  ASSERT_TRUE(pre->FormatReads(third, converted, SourceInfo{}, from_rows).ok());
  from_rows.counted.Add(third, Op::kRead, converted.size(), 0);
  ASSERT_TRUE(sink_->Apply(from_rows).ok());
  EXPECT_EQ(Query("SELECT * FROM \"shop.from_rows\" ORDER BY rowid"), want);

  // A cell ValueFromText refuses: its error with the table as context, as ReadRange gives it;
  // the row's partial output is taken back.
  std::string out = "x";
  Cells bad = rows[0];
  bad[17] = "12x";
  Status parse = ValueFromText(cols[17], std::string_view("12x")).status().WithContext(encoded_table->QualifiedName());
  ASSERT_FALSE(parse.ok());
  st = enc->Append(bad, &out);
  EXPECT_EQ(st.ToString(), parse.ToString());
  EXPECT_EQ(out, "x");
  EXPECT_EQ(enc->Append(Cells{"1"}, &out).code(), StatusCode::kInternal) << "1 cell for 18 columns";
}

// A table that comes in a schema change onto the SQLite name another source table holds
// (`Item` beside `ITEM`: SQLite names ignore case) replaced it: the CREATE dropped "d.Item"
// with its rows (probe7 F3). Now the change is refused before anything of it is applied,
// naming both source tables and the SQLite table, whether created or renamed onto it, and
// the checkpoint stays. The same table renamed to another case of its name, a table
// re-created under its own name, and a name another table left (renamed away, or dropped
// with sink.drop_tables) in the same statement are followed as before.
TEST_F(SqliteSinkTest, ATableComingOntoAnotherTablesNameIsRefusedBeforeAnythingIsApplied) {
  ASSERT_TRUE(sink_);
  auto item = Table("d", "Item", {Col("id", "int"), Col("v", "varchar")}, {0});
  auto other = Table("d", "other", {Col("id", "int"), Col("v", "varchar")}, {0});
  ASSERT_TRUE(sink_->Apply(ItemTxn({Change(Op::kCreate, item, {}, {Value::Int(1), Value::Text("keep")}),
                                     Change(Op::kCreate, other, {}, {Value::Int(2), Value::Text("o")})},
                                    "c1"))
                  .ok());
  auto upper = Table("d", "ITEM", {Col("id", "int"), Col("v", "varchar")}, {0});
  SchemaChange create;
  create.kind = SchemaChange::Kind::kCreate;
  create.after = upper;
  create.ddl = "CREATE TABLE d.ITEM (id INT PRIMARY KEY, v VARCHAR(10))";
  SchemaChange rename;
  rename.kind = SchemaChange::Kind::kRename;
  rename.before = other;
  rename.after = upper;
  rename.ddl = "RENAME TABLE d.other TO d.ITEM";
  for (const SchemaChange& c : {create, rename}) {
    Status st = sink_->ApplySchemaChanges({c}, "c2");
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
    for (const std::string word : {"`d`.`Item`", "`d`.`ITEM`", "\"d.Item\"", "ignore case", "source.exclude"})
      EXPECT_NE(st.message().find(word), std::string::npos) << word << "\n" << st.message();
    EXPECT_EQ(Query("SELECT id, v FROM \"d.Item\""), (Rows{{"i:1", "t:keep"}}));
    EXPECT_EQ(Query("SELECT name FROM _sluice_tables ORDER BY name"), (Rows{{"t:d.Item"}, {"t:d.other"}}));
    EXPECT_EQ(Checkpoint(), std::optional<std::string>("c1"));
  }
  // Renamed away first in the same statement (a swap): the name is free for the next.
  SchemaChange away;
  away.kind = SchemaChange::Kind::kRename;
  away.before = item;
  away.after = Table("d", "old_item", {Col("id", "int"), Col("v", "varchar")}, {0});
  Status st = sink_->ApplySchemaChanges({away, rename}, "c3");
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(Query("SELECT id, v FROM \"d.ITEM\""), (Rows{{"i:2", "t:o"}}));
  EXPECT_EQ(Query("SELECT id, v FROM \"d.old_item\""), (Rows{{"i:1", "t:keep"}}));
  // A table renamed to another case of its own name, and one created again under its name.
  SchemaChange own;
  own.kind = SchemaChange::Kind::kRename;
  own.before = upper;
  own.after = Table("d", "Item", {Col("id", "int"), Col("v", "varchar")}, {0});
  ASSERT_TRUE(sink_->ApplySchemaChanges({own}, "c4").ok());
  EXPECT_EQ(Query("SELECT name FROM _sluice_tables ORDER BY name"), (Rows{{"t:d.Item"}, {"t:d.old_item"}}));
  SchemaChange again;
  again.kind = SchemaChange::Kind::kCreate;
  again.after = own.after;
  st = sink_->ApplySchemaChanges({again}, "c5");
  ASSERT_TRUE(st.ok()) << st.ToString();
  // Dropped: kept with its rows, so it still holds its name; with sink.drop_tables it goes.
  SchemaChange drop;
  drop.kind = SchemaChange::Kind::kDrop;
  drop.before = own.after;
  EXPECT_EQ(sink_->ApplySchemaChanges({drop, create}, "c6").code(), StatusCode::kFailedPrecondition);
  sink_->set_drop_tables(true);
  st = sink_->ApplySchemaChanges({drop, create}, "c6");
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(Query("SELECT name FROM _sluice_tables ORDER BY name"), (Rows{{"t:d.ITEM"}, {"t:d.old_item"}}));
}

}  // namespace
}  // namespace sluice
