#include "stream/schema_check.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

using binlog::ColumnType;

TableSchema Schema(std::vector<std::pair<std::string, std::string>> cols) {
  TableSchema t;
  t.db = "shop";
  t.table = "t";
  for (auto& [n, ty] : cols) {
    ColumnDesc c;
    c.name = n;
    c.SetType(ty);
    c.column_type = ty;
    t.columns.push_back(c);
  }
  return t;
}

binlog::TableMap Map(std::vector<ColumnType> types, std::vector<std::string> names = {}) {
  binlog::TableMap m;
  m.db = "shop";
  m.table = "t";
  m.column_types = std::move(types);
  m.column_names = std::move(names);
  return m;
}

TEST(CheckRowLayoutTest, AcceptsMatchingLayouts) {
  auto s = Schema({{"id", "int"}, {"v", "varchar"}, {"j", "json"}, {"d", "datetime"}});
  EXPECT_TRUE(CheckRowLayout(Map({ColumnType::MYSQL_TYPE_LONG, ColumnType::MYSQL_TYPE_VARCHAR,
                                  ColumnType::MYSQL_TYPE_BLOB, ColumnType::MYSQL_TYPE_DATETIME2},
                                 {"id", "v", "j", "d"}),
                             s)
                  .ok());
  EXPECT_TRUE(CheckRowLayout(Map({ColumnType::MYSQL_TYPE_LONG, ColumnType::MYSQL_TYPE_STRING,
                                  ColumnType::MYSQL_TYPE_JSON, ColumnType::MYSQL_TYPE_DATETIME2}),
                             s)
                  .ok());
}

// The case a new user found: a row written before
// `ALTER TABLE ddl3 DROP COLUMN x, ADD COLUMN z VARCHAR(10)` has the same column count.
TEST(CheckRowLayoutTest, RejectsAColumnSwapWithTheSameCount) {
  auto now = Schema({{"id", "int"}, {"y", "varchar"}, {"z", "varchar"}});
  auto by_name = CheckRowLayout(Map({ColumnType::MYSQL_TYPE_LONG, ColumnType::MYSQL_TYPE_LONG,
                                     ColumnType::MYSQL_TYPE_VARCHAR},
                                    {"id", "x", "y"}),
                                now);
  ASSERT_EQ(by_name.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(by_name.message().find("column 2 is `x` in the binlog row but `y`"), std::string::npos)
      << by_name.message();
  auto by_type = CheckRowLayout(
      Map({ColumnType::MYSQL_TYPE_LONG, ColumnType::MYSQL_TYPE_LONG, ColumnType::MYSQL_TYPE_VARCHAR}), now);
  ASSERT_EQ(by_type.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(by_type.message().find("holds an integer value"), std::string::npos) << by_type.message();
  auto count = CheckRowLayout(Map({ColumnType::MYSQL_TYPE_LONG}), now);
  EXPECT_NE(count.message().find("has 1 columns but the table now has 3"), std::string::npos);
}

TEST(CheckRowLayoutTest, AppendedColumnsOnlyWhenAllowed) {
  auto now = Schema({{"id", "int"}, {"v", "varchar"}, {"note", "varchar"}});
  auto old_row = Map({ColumnType::MYSQL_TYPE_LONG, ColumnType::MYSQL_TYPE_VARCHAR}, {"id", "v"});
  EXPECT_FALSE(CheckRowLayout(old_row, now).ok());
  EXPECT_TRUE(CheckRowLayout(old_row, now, /*allow_appended_columns=*/true).ok());
  auto renamed = Map({ColumnType::MYSQL_TYPE_LONG, ColumnType::MYSQL_TYPE_VARCHAR}, {"id", "w"});
  EXPECT_FALSE(CheckRowLayout(renamed, now, true).ok());
}

TEST(ParseTruncateTest, FindsTheTable) {
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(ParseTruncate("shop", "TRUNCATE TABLE items"), P("shop", "items"));
  EXPECT_EQ(ParseTruncate("shop", "truncate `other`.`we``ird`"), P("other", "we`ird"));
  EXPECT_EQ(ParseTruncate("", "/* c */ TRUNCATE  x . y"), P("x", "y"));
  EXPECT_EQ(ParseTruncate("shop", "TRUNCATE"), std::nullopt);
  EXPECT_EQ(ParseTruncate("shop", "TRUNCATED_IS_NOT_A_STATEMENT t"), std::nullopt);
  EXPECT_EQ(ParseTruncate("shop", "DELETE FROM t"), std::nullopt);
}

// The recorded version must fit the TABLE_MAP exactly: an INT made BIGINT, a DECIMAL's
// scale, fractional seconds, signedness (FULL) and the count are all told apart.
TEST(CheckTableMapTest, NamesTableColumnAndPosition) {
  auto s = Schema({{"id", "int"}, {"a", "int"}, {"p", "decimal"}, {"t", "datetime"}});
  s.columns[2].numeric_precision = 6;
  s.columns[2].numeric_scale = 2;
  s.columns[3].fsp = 3;
  auto map = Map({ColumnType::MYSQL_TYPE_LONG, ColumnType::MYSQL_TYPE_LONG, ColumnType::MYSQL_TYPE_NEWDECIMAL,
                  ColumnType::MYSQL_TYPE_DATETIME2});
  map.column_meta = {0, 0, (6 << 8) | 2, 3};
  EXPECT_TRUE(CheckTableMap(map, s, "binlog b.000001 offset 4").ok());

  auto wider = map;
  wider.column_types[1] = ColumnType::MYSQL_TYPE_LONGLONG;
  Status st = CheckTableMap(wider, s, "binlog b.000001 offset 4");
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(st.message().find("shop.t at binlog b.000001 offset 4"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("column 2 (`a`)"), std::string::npos) << st.message();

  auto scale = map;
  scale.column_meta[2] = (6 << 8) | 0;
  EXPECT_NE(CheckTableMap(scale, s, "x").message().find("DECIMAL(6,0)"), std::string::npos);
  auto fsp = map;
  fsp.column_meta[3] = 0;
  EXPECT_FALSE(CheckTableMap(fsp, s, "x").ok());
  auto sign = map;
  sign.has_signedness = true;
  sign.is_unsigned = {false, true, false, false};
  EXPECT_NE(CheckTableMap(sign, s, "x").message().find("unsigned"), std::string::npos);
  auto shorter = map;
  shorter.column_types.pop_back();
  shorter.column_meta.pop_back();
  EXPECT_NE(CheckTableMap(shorter, s, "x").message().find("3 columns"), std::string::npos);
  auto renamed = map;
  renamed.column_names = {"id", "b", "p", "t"};
  EXPECT_NE(CheckTableMap(renamed, s, "x").message().find("`b`"), std::string::npos);
  EXPECT_NE(CheckTableMap(renamed, s, "x").message().find("sql_log_bin"), std::string::npos);

  // A version made from a statement sluice read: the stop names that statement and where it
  // is, not only an unlogged change (a new user's probe: a misapplied ALTER was blamed on one).
  Status from_ddl = CheckTableMap(renamed, s, "binlog b.000001 offset 900", "ALTER TABLE shop.t CHANGE a b INT",
                                  "binlog b.000001 (the event ending at offset 700)");
  EXPECT_NE(from_ddl.message().find("what sluice made of the statement \"ALTER TABLE shop.t CHANGE a b INT\" it read "
                                    "at binlog b.000001 (the event ending at offset 700)"),
            std::string::npos)
      << from_ddl.message();
  EXPECT_EQ(from_ddl.message().find("changed without a DDL statement sluice read"), std::string::npos)
      << from_ddl.message();
}

// MariaDB's long unique index: a hidden BIGINT DB_ROW_HASH_1 after the table's columns in every
// row. The stop names it and what helps (a resnapshot, which it advised, does not).
TEST(CheckTableMapTest, AHiddenLongUniqueHashColumnIsNamed) {
  auto s = Schema({{"id", "int"}, {"c8", "text"}});
  auto named = CheckTableMap(Map({ColumnType::MYSQL_TYPE_LONG, ColumnType::MYSQL_TYPE_BLOB, ColumnType::MYSQL_TYPE_LONGLONG},
                                 {"id", "c8", "DB_ROW_HASH_1"}),
                             s, "binlog b.1 at offset 4");
  ASSERT_EQ(named.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(named.message().find("the rest is the hidden hash column of a MariaDB long unique index"), std::string::npos)
      << named.message();
  EXPECT_NE(named.message().find("mode = \"full\""), std::string::npos) << named.message();
  auto unnamed = CheckTableMap(Map({ColumnType::MYSQL_TYPE_LONG, ColumnType::MYSQL_TYPE_BLOB, ColumnType::MYSQL_TYPE_LONGLONG}),
                               s, "binlog b.1 at offset 4");
  EXPECT_NE(unnamed.message().find("most likely the hidden hash column"), std::string::npos) << unnamed.message();
  // Another trailing column is not taken for one.
  auto other = CheckTableMap(Map({ColumnType::MYSQL_TYPE_LONG, ColumnType::MYSQL_TYPE_BLOB, ColumnType::MYSQL_TYPE_LONG}),
                             s, "binlog b.1 at offset 4");
  EXPECT_NE(other.message().find("the binlog row has 3 columns but the recorded definition has 2"), std::string::npos)
      << other.message();
}

}  // namespace
}  // namespace sluice
