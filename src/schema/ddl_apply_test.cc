#include "schema/ddl_apply.h"

#include <gtest/gtest.h>

namespace sluice::ddl {
namespace {

TableSchema Base() {
  auto st = Parse("CREATE TABLE d.t (id INT PRIMARY KEY, a INT UNSIGNED, e ENUM('x','y'), s VARCHAR(10), "
                  "p DECIMAL(6,2)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
                  "d");
  EXPECT_TRUE(st.ok() && st->understood);
  TableSchema t = *st->definition;
  t.db = "d";
  t.table = "t";
  t.collation = "utf8mb4_bin";
  return t;
}

Result<Applied> Alter(const TableSchema& t, const std::string& sql) {
  auto st = Parse(sql, "d");
  if (!st.ok()) return st.status();
  EXPECT_TRUE(st->understood) << st->not_understood;
  return ApplyAlter(t, *st);
}

std::vector<std::string> Names(const TableSchema& t) {
  std::vector<std::string> v;
  for (const auto& c : t.columns) v.push_back(c.name);
  return v;
}

TEST(DdlApply, ColumnsMoveAndTheMappingFollows) {
  auto a = Alter(Base(), "ALTER TABLE t ADD COLUMN n INT DEFAULT 7 FIRST, DROP COLUMN s, "
                         "CHANGE a big BIGINT AFTER p, RENAME COLUMN e TO label");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_TRUE(a->exact) << a->why_not_exact;
  EXPECT_EQ(Names(a->after), (std::vector<std::string>{"n", "id", "label", "p", "big"}));
  EXPECT_EQ(a->source_of, (std::vector<int>{-1, 0, 2, 4, 1}));
  EXPECT_EQ(a->after.primary_key, (std::vector<size_t>{1}));
  EXPECT_FALSE(a->after.columns[4].is_unsigned);
}

TEST(DdlApply, NewCharacterColumnsTakeTheTableCharset) {
  auto a = Alter(Base(), "ALTER TABLE t ADD COLUMN c VARCHAR(3), MODIFY e ENUM('x','y','z')");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->exact) << a->why_not_exact;
  EXPECT_EQ(a->after.columns.back().charset, "utf8mb4");
  EXPECT_EQ(a->after.columns[2].labels.size(), 3u);
}

TEST(DdlApply, ChangesTheReplicaCannotReproduceAreNotExact) {
  struct Case {
    const char* sql;
    const char* why;
  };
  for (const Case& c : {Case{"ALTER TABLE t ADD COLUMN z INT NOT NULL", "implicit default"},
                        Case{"ALTER TABLE t ADD COLUMN z INT AUTO_INCREMENT UNIQUE", "AUTO_INCREMENT"},
                        Case{"ALTER TABLE t ADD COLUMN z INT AS (id * 2) STORED", "generated"},
                        Case{"ALTER TABLE t ADD COLUMN z VARCHAR(36) DEFAULT (uuid())", "DEFAULT"},
                        Case{"ALTER TABLE t MODIFY a TINYINT UNSIGNED", "not a widening"},
                        Case{"ALTER TABLE t MODIFY a INT", "not a widening"},
                        Case{"ALTER TABLE t MODIFY p DECIMAL(8,4)", "scale"},
                        Case{"ALTER TABLE t MODIFY s VARCHAR(3)", "truncated"},
                        Case{"ALTER TABLE t MODIFY e ENUM('y','x')", "reordered"},
                        Case{"ALTER TABLE t MODIFY s VARCHAR(10) CHARACTER SET latin1", "character set"},
                        Case{"ALTER TABLE t MODIFY s VARCHAR(10) NOT NULL", "NOT NULL"},
                        Case{"ALTER TABLE t CONVERT TO CHARACTER SET latin1", "converts"},
                        Case{"ALTER TABLE t ADD SYSTEM VERSIONING", "versioning"}}) {
    SCOPED_TRACE(c.sql);
    auto a = Alter(Base(), c.sql);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_FALSE(a->exact);
    EXPECT_NE(a->why_not_exact.find(c.why), std::string::npos) << a->why_not_exact;
  }
}

// The columns a clause names are those of the table before the statement (then the ones it
// adds), and names need be unique only in the result, as MariaDB applies an ALTER (checked
// against MariaDB 10.11 by hand: the expected column lists are what the server gave).
TEST(DdlApply, ClausesNameTheColumnsOfTheTableBeforeTheStatement) {
  struct Case {
    const char* sql;
    std::vector<std::string> names;
    std::vector<int> source_of;
  };
  for (const Case& c : {
           Case{"ALTER TABLE t CHANGE a s INT UNSIGNED, CHANGE s a VARCHAR(10)", {"id", "s", "e", "a", "p"},
                {0, 1, 2, 3, 4}},
           Case{"ALTER TABLE t RENAME COLUMN a TO s, RENAME COLUMN s TO a", {"id", "s", "e", "a", "p"}, {0, 1, 2, 3, 4}},
           Case{"ALTER TABLE t ADD COLUMN s INT, CHANGE s w VARCHAR(10)", {"id", "a", "e", "w", "p", "s"},
                {0, 1, 2, 3, 4, -1}},
           Case{"ALTER TABLE t DROP COLUMN a, CHANGE s a VARCHAR(10)", {"id", "e", "a", "p"}, {0, 2, 3, 4}},
           Case{"ALTER TABLE t CHANGE a x INT UNSIGNED, ADD COLUMN y INT AFTER x", {"id", "x", "y", "e", "s", "p"},
                {0, 1, -1, 2, 3, 4}},
           Case{"ALTER TABLE t ADD COLUMN z INT, MODIFY z BIGINT", {"id", "a", "e", "s", "p", "z"}, {0, 1, 2, 3, 4, -1}},
       }) {
    SCOPED_TRACE(c.sql);
    auto a = Alter(Base(), c.sql);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(Names(a->after), c.names);
    EXPECT_EQ(a->source_of, c.source_of);
  }
  // What the server refuses is refused: a clause naming a column another clause renamed, and
  // a result with one name twice.
  auto renamed = Alter(Base(), "ALTER TABLE t CHANGE a x INT UNSIGNED, MODIFY x BIGINT");
  EXPECT_FALSE(renamed.ok());
  EXPECT_NE(renamed.status().message().find("no such column"), std::string::npos) << renamed.status().ToString();
  auto twice = Alter(Base(), "ALTER TABLE t CHANGE a s INT UNSIGNED");
  EXPECT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("two columns named `s`"), std::string::npos) << twice.status().ToString();
}

// Partition clauses that remove or move rows have no row events for them (a new user's probe:
// the replica kept every row of a dropped partition); the other partition clauses keep every
// row. EXCHANGE and CONVERT name the other table, whose rows change too.
TEST(DdlApply, PartitionClausesThatRemoveOrMoveRowsAreNotExact) {
  for (const char* sql : {"ALTER TABLE t DROP PARTITION p0", "ALTER TABLE t DROP PARTITION IF EXISTS p0, p1",
                          "ALTER TABLE t TRUNCATE PARTITION p2", "ALTER TABLE t TRUNCATE PARTITION ALL",
                          "ALTER TABLE t EXCHANGE PARTITION p1 WITH TABLE stage",
                          "ALTER TABLE t CONVERT PARTITION p0 TO TABLE arch",
                          "ALTER TABLE t CONVERT TABLE arch TO PARTITION p0 VALUES LESS THAN (100)"}) {
    SCOPED_TRACE(sql);
    auto a = Alter(Base(), sql);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_FALSE(a->exact);
    EXPECT_NE(a->why_not_exact.find("PARTITION removes or moves rows"), std::string::npos) << a->why_not_exact;
  }
  for (const char* sql : {"ALTER TABLE t ADD PARTITION (PARTITION p9 VALUES LESS THAN (900))",
                          "ALTER TABLE t REORGANIZE PARTITION p0, p1 INTO (PARTITION p01 VALUES LESS THAN (200))",
                          "ALTER TABLE t COALESCE PARTITION 2", "ALTER TABLE t REMOVE PARTITIONING",
                          "ALTER TABLE t PARTITION BY HASH (id) PARTITIONS 4", "ALTER TABLE t OPTIMIZE PARTITION p0"}) {
    SCOPED_TRACE(sql);
    auto a = Alter(Base(), sql);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_TRUE(a->exact) << a->why_not_exact;
  }
  auto other = [](const char* sql) {
    auto st = Parse(sql, "d");
    EXPECT_TRUE(st.ok());
    for (const AlterOp& op : st->ops)
      if (op.kind == OpKind::kPartition) return op.new_table.ToString();
    return std::string();
  };
  EXPECT_EQ(other("ALTER TABLE t EXCHANGE PARTITION p1 WITH TABLE stage WITHOUT VALIDATION"), "d.stage");
  EXPECT_EQ(other("ALTER TABLE t CONVERT PARTITION p0 TO TABLE x.arch"), "x.arch");
  EXPECT_EQ(other("ALTER TABLE t CONVERT TABLE arch TO PARTITION p0 VALUES LESS THAN (100)"), "d.arch");
  EXPECT_EQ(other("ALTER TABLE t DROP PARTITION p0"), ".");
}

// A change of fractional digits is a re-read both ways: fewer round the stored values
// (DATETIME(6) to DATETIME); more pad them, and the replica's old rows would keep the shorter
// text (as a DECIMAL scale widening would).
TEST(DdlApply, FractionalSecondsChangedAreNotExact) {
  auto with_dt = Alter(Base(), "ALTER TABLE t ADD COLUMN dt DATETIME(6) NULL, ADD COLUMN d3 DATETIME(3) NULL");
  ASSERT_TRUE(with_dt.ok()) << with_dt.status().ToString();
  auto narrowed = Alter(with_dt->after, "ALTER TABLE t MODIFY dt DATETIME");
  ASSERT_TRUE(narrowed.ok()) << narrowed.status().ToString();
  EXPECT_FALSE(narrowed->exact);
  EXPECT_NE(narrowed->why_not_exact.find("`dt`"), std::string::npos) << narrowed->why_not_exact;
  auto widened = Alter(with_dt->after, "ALTER TABLE t MODIFY d3 DATETIME(6)");
  ASSERT_TRUE(widened.ok()) << widened.status().ToString();
  EXPECT_FALSE(widened->exact);
  EXPECT_NE(widened->why_not_exact.find("`d3`"), std::string::npos) << widened->why_not_exact;
}

TEST(DdlApply, NotNullIsExactUnderAStrictSqlMode) {
  auto st = Parse("ALTER TABLE t MODIFY s VARCHAR(10) NOT NULL", "d");
  ASSERT_TRUE(st.ok());
  auto lax = ApplyAlter(Base(), *st);
  auto strict = ApplyAlter(Base(), *st, {.strict = true});
  ASSERT_TRUE(lax.ok() && strict.ok());
  EXPECT_FALSE(lax->exact);
  EXPECT_TRUE(strict->exact) << strict->why_not_exact;
  EXPECT_FALSE(strict->after.columns[3].nullable);
}

TEST(DdlApply, WideningsAndNoOpsAreExact) {
  for (const char* sql : {"ALTER TABLE t MODIFY a BIGINT", "ALTER TABLE t MODIFY a INT UNSIGNED DEFAULT 3",
                          "ALTER TABLE t MODIFY s TEXT", "ALTER TABLE t MODIFY p DECIMAL(9,2)",
                          "ALTER TABLE t ADD INDEX (s), ENGINE=InnoDB, COMMENT 'x'", "ALTER TABLE t FORCE",
                          "ALTER TABLE t ALTER COLUMN s SET DEFAULT 'q'", "ALTER TABLE t DROP PRIMARY KEY"}) {
    SCOPED_TRACE(sql);
    auto a = Alter(Base(), sql);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_TRUE(a->exact) << a->why_not_exact;
  }
}

TEST(DdlApply, ClausesThatContradictTheRecordedDefinitionFail) {
  for (const char* sql : {"ALTER TABLE t DROP COLUMN nope", "ALTER TABLE t ADD COLUMN a INT",
                          "ALTER TABLE t RENAME COLUMN a TO s", "ALTER TABLE t ADD COLUMN z INT AFTER nope",
                          "ALTER TABLE t CHANGE nope x INT"}) {
    SCOPED_TRACE(sql);
    auto a = Alter(Base(), sql);
    EXPECT_FALSE(a.ok());
  }
  auto a = Alter(Base(), "ALTER TABLE t DROP COLUMN IF EXISTS nope, ADD COLUMN IF NOT EXISTS a INT");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->after.columns.size(), 5u);
}

TEST(DdlApply, RenameToMovesTheTable) {
  auto a = Alter(Base(), "ALTER TABLE t RENAME TO e.u");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->renamed);
  EXPECT_EQ(a->after.QualifiedName(), "e.u");
}

}  // namespace
}  // namespace sluice::ddl
