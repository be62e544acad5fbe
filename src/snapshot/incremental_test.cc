// The pure parts of incremental reads: the compound-watermark page query (quoted identifiers,
// row-value comparison, literals as given by the server's quoting), the lookback floor, the
// cursor choice and its refusal naming the candidates.
#include "snapshot/incremental.h"

#include <gtest/gtest.h>

#include "schema/text_value.h"

namespace sluice {
namespace {

ColumnDesc Col(std::string name, std::string type, bool nullable = false) {
  ColumnDesc c;
  c.name = std::move(name);
  c.SetType(type);
  c.column_type = type;
  c.nullable = nullable;
  return c;
}

TableSchema Orders() {
  TableSchema s;
  s.db = "shop";
  s.table = "or`ders";
  s.columns = {Col("id", "int"), Col("region", "varchar"), Col("created_at", "datetime"),
               Col("touched", "timestamp", true), Col("Updated_At", "timestamp"), Col("note", "text", true)};
  s.primary_key = {1, 0};  // (region, id)
  return s;
}

TEST(IncrementalSql, CompoundWatermarkPageIsARowValueComparisonInWatermarkOrder) {
  TableSchema s = Orders();
  std::vector<size_t> wm = WatermarkColumns(s, 4);
  ASSERT_EQ(wm, (std::vector<size_t>{4, 1, 0}));
  PageQuery q;
  q.table = QuoteIdentifier(s.db) + "." + QuoteIdentifier(s.table);
  q.select_list = "`id`, `region`";
  for (size_t i : wm) q.order.push_back(QuoteIdentifier(s.columns[i].name));
  q.after = "('2026-01-01 00:00:00', 'e''u', 7)";
  q.upper = "('2026-01-02 00:00:00', 'us', 9)";
  q.limit = 500;
  EXPECT_EQ(BuildPageSql(q),
            "SELECT `id`, `region` FROM `shop`.`or``ders` WHERE (`Updated_At`, `region`, `id`) > "
            "('2026-01-01 00:00:00', 'e''u', 7) AND (`Updated_At`, `region`, `id`) <= "
            "('2026-01-02 00:00:00', 'us', 9) ORDER BY `Updated_At`, `region`, `id` LIMIT 500");
}

// A key of several columns: the row-value bounds come with plain bounds on the first column,
// which MariaDB can plan as an index range (a row-value comparison alone is a full scan and
// a filesort on every page).
TEST(IncrementalSql, RowValueBoundsComeWithARangeOnTheFirstColumn) {
  PageQuery q;
  q.table = "`d`.`t`";
  q.select_list = "*";
  q.order = {"`u`", "`id`"};
  q.after = "('2026-01-01 00:00:00', 7)";
  q.after_first = "'2026-01-01 00:00:00'";
  q.upper = "('2026-01-02 00:00:00', 9)";
  q.upper_first = "'2026-01-02 00:00:00'";
  q.limit = 5;
  EXPECT_EQ(BuildPageSql(q),
            "SELECT * FROM `d`.`t` WHERE (`u`, `id`) > ('2026-01-01 00:00:00', 7) AND (`u`, `id`) <= "
            "('2026-01-02 00:00:00', 9) AND `u` >= '2026-01-01 00:00:00' AND `u` <= '2026-01-02 00:00:00' "
            "ORDER BY `u`, `id` LIMIT 5");
  q.order = {"`id`"};  // one column: its comparison is a range already
  q.after = "7";
  q.after_first = "7";
  q.upper.clear();
  EXPECT_EQ(BuildPageSql(q), "SELECT * FROM `d`.`t` WHERE `id` > 7 ORDER BY `id` LIMIT 5");
}

TEST(IncrementalSql, FirstPageHasNoLowerBoundAndSingleColumnKeysNoParentheses) {
  PageQuery q;
  q.table = "`d`.`t`";
  q.select_list = "`id`";
  q.order = {"`id`"};
  q.limit = 10;
  EXPECT_EQ(BuildPageSql(q), "SELECT `id` FROM `d`.`t` ORDER BY `id` LIMIT 10");
  q.after = "41";
  EXPECT_EQ(BuildPageSql(q), "SELECT `id` FROM `d`.`t` WHERE `id` > 41 ORDER BY `id` LIMIT 10");
}

TEST(IncrementalSql, LookbackWindowIsAFloorOnTheCursorBelowTheWatermark) {
  PageQuery q;
  q.table = "`d`.`t`";
  q.select_list = "*";
  q.order = {"`u`", "`id`"};
  q.upper = "('2026-01-01 10:00:00.000000', 5)";
  q.cursor_floor = LookbackFloor("'2026-01-01 10:00:00.000000'", 600);
  q.limit = 100;
  EXPECT_EQ(BuildPageSql(q),
            "SELECT * FROM `d`.`t` WHERE (`u`, `id`) <= ('2026-01-01 10:00:00.000000', 5) AND `u` >= "
            "CAST('2026-01-01 10:00:00.000000' AS DATETIME(6)) - INTERVAL 600 SECOND ORDER BY `u`, `id` "
            "LIMIT 100");
}

// The rows sharing the run's newest cursor value are left for the next run; after a backfill
// the watermark is a cursor value alone (any key at it is read).
TEST(IncrementalSql, HeldBackNewestCursorValueAndCursorOnlyWatermark) {
  PageQuery q;
  q.table = "`d`.`t`";
  q.select_list = "*";
  q.order = {"`u`", "`id`"};
  q.cursor_floor = "'2026-01-01 00:00:00'";
  q.cursor_below = "'2026-01-01 00:00:09'";
  q.limit = 7;
  EXPECT_EQ(BuildPageSql(q),
            "SELECT * FROM `d`.`t` WHERE `u` >= '2026-01-01 00:00:00' AND `u` < '2026-01-01 00:00:09' ORDER BY "
            "`u`, `id` LIMIT 7");
}

TEST(IncrementalSql, CursorInThePrimaryKeyIsNotRepeated) {
  TableSchema s = Orders();
  s.primary_key = {4, 0};
  EXPECT_EQ(WatermarkColumns(s, 4), (std::vector<size_t>{4, 0}));
}

TEST(IncrementalCursor, UsualNameChosenCaseInsensitively) {
  auto c = ChooseCursor(Orders(), "", "table.\"shop.orders\"");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(*c, 4u);
}

TEST(IncrementalCursor, ConfiguredColumnMustBeNotNullDatetimeOrTimestamp) {
  auto ok = ChooseCursor(Orders(), "created_at", "k");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, 2u);
  auto nullable = ChooseCursor(Orders(), "touched", "table.\"shop.orders\"");
  ASSERT_FALSE(nullable.ok());
  EXPECT_EQ(nullable.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(nullable.status().message().find("table.\"shop.orders\".cursor: column `touched`"), std::string::npos)
      << nullable.status().message();
  auto text = ChooseCursor(Orders(), "note", "k");
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("must be a NOT NULL DATETIME or TIMESTAMP"), std::string::npos);
  // Column names are case-insensitive in MySQL and MariaDB: so is the configured cursor.
  auto cased = ChooseCursor(Orders(), "Created_AT", "k");
  ASSERT_TRUE(cased.ok()) << cased.status().ToString();
  EXPECT_EQ(*cased, 2u);
  auto missing = ChooseCursor(Orders(), "nope", "k");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("has no column `nope`"), std::string::npos);
}

TEST(IncrementalCursor, RefusalNamesEveryCandidate) {
  TableSchema s = Orders();
  s.columns[4].name = "stamp";
  auto c = ChooseCursor(s, "", "table.\"shop.orders\"");
  ASSERT_FALSE(c.ok());
  const std::string& m = c.status().message();
  EXPECT_NE(m.find("candidates: `created_at` (datetime NOT NULL), `touched` (timestamp NULL: not usable"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("`stamp` (timestamp NOT NULL)"), std::string::npos) << m;
  EXPECT_NE(m.find("table.\"shop.orders\".cursor"), std::string::npos) << m;
  s.columns.resize(2);
  auto none = ChooseCursor(s, "", "k");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("candidates: none"), std::string::npos) << none.status().message();
}

}  // namespace
}  // namespace sluice
