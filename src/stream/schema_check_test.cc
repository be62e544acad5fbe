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

}  // namespace
}  // namespace sluice
