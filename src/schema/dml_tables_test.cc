// TablesChangedBy: the tables statement-logged data changes can change, for many statement
// shapes, and the shapes it must call unknown rather than guess.
#include "schema/dml_tables.h"

#include <gtest/gtest.h>

namespace sluice::ddl {
namespace {

// "db.t db.u" for the tables, "unknown" when not known, "-" when not a data change.
std::string Tables(std::string_view sql, std::string_view default_db = "p") {
  DmlTables d = TablesChangedBy(sql, default_db);
  if (d.kind == DmlKind::kNotDml) return "-";
  if (!d.known) {
    EXPECT_FALSE(d.unknown.empty()) << sql;
    return "unknown";
  }
  std::string out;
  for (const TableRef& t : d.tables) out += (out.empty() ? "" : " ") + t.ToString();
  return out;
}

TEST(DmlTables, InsertAndReplace) {
  EXPECT_EQ(Tables("INSERT INTO t VALUES (1)"), "p.t");
  EXPECT_EQ(Tables("insert t (a, b) values (1, 2)"), "p.t");
  EXPECT_EQ(Tables("INSERT LOW_PRIORITY IGNORE INTO q.t SET a = 1"), "q.t");
  EXPECT_EQ(Tables("INSERT INTO `my db`.`t``x` VALUES (1)"), "my db.t`x");
  EXPECT_EQ(Tables("INSERT INTO t SELECT * FROM t_comp JOIN q.u"), "p.t");
  EXPECT_EQ(
      Tables("INSERT INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE a = (SELECT 1 FROM t_comp)"),
      "p.t");
  EXPECT_EQ(Tables("INSERT DELAYED INTO t PARTITION (p0) VALUES (1)"), "p.t");
  EXPECT_EQ(Tables("/* app 7 */ INSERT /*!40000 IGNORE */ INTO t VALUES (1)"), "p.t");
  EXPECT_EQ(Tables("REPLACE INTO t VALUES (1)"), "p.t");
  EXPECT_EQ(Tables("REPLACE LOW_PRIORITY q.t SELECT * FROM t_comp"), "q.t");
  EXPECT_EQ(Tables("INSERT INTO q.t VALUES (1)", ""), "q.t");
}

TEST(DmlTables, Update) {
  EXPECT_EQ(Tables("UPDATE t_nopk SET n=n+1 WHERE a=3"), "p.t_nopk");
  EXPECT_EQ(Tables("UPDATE LOW_PRIORITY IGNORE q.t AS x SET x.a = 1"), "q.t");
  EXPECT_EQ(Tables("UPDATE t x SET a = (SELECT max(a) FROM t_comp)"), "p.t");
  EXPECT_EQ(Tables("UPDATE t, q.u SET t.a = u.a WHERE t.id = u.id"), "p.t q.u");
  EXPECT_EQ(Tables("UPDATE t JOIN u ON t.id = u.id AND LEFT(t.s, 2) = 'ab' SET t.a = 1"),
            "p.t p.u");
  EXPECT_EQ(Tables("UPDATE t a INNER JOIN u b USING (id) LEFT OUTER JOIN `q`.`v` c ON (c.id = "
                   "a.id) SET a.n = 1"),
            "p.t p.u q.v");
  EXPECT_EQ(Tables("UPDATE t STRAIGHT_JOIN u ON t.id = u.id CROSS JOIN w SET t.a = 1"),
            "p.t p.u p.w");
  EXPECT_EQ(Tables("UPDATE (t, u) SET t.a = u.a"), "p.t p.u");
  EXPECT_EQ(Tables("UPDATE t FORCE INDEX (PRIMARY) SET a = 1 ORDER BY id LIMIT 3"), "p.t");
  EXPECT_EQ(Tables("UPDATE t USE INDEX FOR JOIN (i) JOIN u ON t.id = u.id SET t.a = 1"), "p.t p.u");
  // A derived table is only read.
  EXPECT_EQ(Tables("UPDATE t JOIN (SELECT id FROM t_comp) AS d ON d.id = t.id SET t.a = 1"), "p.t");
  EXPECT_EQ(Tables("UPDATE t JOIN u ON u.id = t.id AND u.k IN (SELECT k FROM w) SET t.a = 1"),
            "p.t p.u");
}

TEST(DmlTables, Delete) {
  EXPECT_EQ(Tables("DELETE FROM t WHERE a = 3"), "p.t");
  EXPECT_EQ(Tables("DELETE LOW_PRIORITY QUICK IGNORE FROM q.t ORDER BY id LIMIT 5"), "q.t");
  EXPECT_EQ(Tables("DELETE FROM t PARTITION (p1) WHERE a IN (SELECT a FROM t_comp)"), "p.t");
  // Multi-table: the targets, through the aliases of the references.
  EXPECT_EQ(Tables("DELETE t FROM t JOIN t_comp ON t.id = t_comp.id"), "p.t");
  EXPECT_EQ(
      Tables("DELETE a, b FROM t AS a JOIN q.u b ON a.id = b.id JOIN t_comp c ON c.id = a.id"),
      "p.t q.u");
  EXPECT_EQ(Tables("DELETE t.* FROM t, t_comp WHERE t.id = t_comp.id"), "p.t");
  EXPECT_EQ(Tables("DELETE q.u FROM q.u JOIN t_comp USING (id)"), "q.u");
  EXPECT_EQ(Tables("DELETE FROM t1, t2.* USING t1 JOIN t2 JOIN t_comp WHERE t1.id = t2.id"),
            "p.t1 p.t2");
  EXPECT_EQ(Tables("DELETE FROM x USING t AS x, t_comp WHERE x.id = t_comp.id"), "p.t");
}

TEST(DmlTables, LoadData) {
  EXPECT_EQ(Tables("LOAD DATA INFILE '/tmp/t.txt' INTO TABLE t"), "p.t");
  EXPECT_EQ(Tables("LOAD DATA LOW_PRIORITY LOCAL INFILE 'x.csv' REPLACE INTO TABLE q.t FIELDS "
                   "TERMINATED BY ','"),
            "q.t");
  EXPECT_EQ(
      Tables("LOAD XML CONCURRENT INFILE 'x.xml' IGNORE INTO TABLE `t` ROWS IDENTIFIED BY '<r>'"),
      "p.t");
}

TEST(DmlTables, UnknownRatherThanAGuess) {
  EXPECT_EQ(Tables("UPDATE t SET a = 'unterminated"), "unknown");
  EXPECT_EQ(Tables("INSERT INTO t VALUES (1)", ""), "unknown");  // no default database
  EXPECT_EQ(Tables("DELETE t FROM t_comp JOIN t USING (id)", ""), "unknown");
  EXPECT_EQ(Tables("INSERT INTO"), "unknown");
  EXPECT_EQ(Tables("INSERT INTO (SELECT 1)"), "unknown");
  EXPECT_EQ(Tables("UPDATE t"), "unknown");
  EXPECT_EQ(Tables("UPDATE t JOIN u SET"), "p.t p.u");  // the names are read; SET ends them
  EXPECT_EQ(Tables("UPDATE t FOR PORTION OF p FROM '2020-01-01' TO '2021-01-01' SET a = 1"),
            "unknown");
  EXPECT_EQ(Tables("UPDATE t JOIN (u SET a = 1"), "unknown");
  EXPECT_EQ(Tables("DELETE FROM t1, t2 WHERE 1"), "unknown");  // several tables need USING
  EXPECT_EQ(Tables("DELETE t1 WHERE 1"), "unknown");
  EXPECT_EQ(Tables("LOAD DATA INFILE x INTO TABLE t"), "unknown");
  EXPECT_EQ(Tables("LOAD DATA INFILE 'x' INTO t"), "unknown");
}

// Names followed by "(": the stored functions a statement may call, for the caller to look up.
TEST(DmlTables, Calls) {
  auto calls = [](std::string_view sql, std::string_view db = "p") {
    std::string out;
    for (const TableRef& t : TablesChangedBy(sql, db).calls) out += (out.empty() ? "" : " ") + t.ToString();
    return out;
  };
  EXPECT_EQ(calls("UPDATE t SET a = f(1) + q.g(2), b = NOW() WHERE c IN (1)"), "p.f q.g p.NOW p.IN");
  EXPECT_EQ(calls("INSERT INTO t (a) VALUES (`my f`(1)), (f(2))"), "p.t p.VALUES p.my f p.f");
  EXPECT_EQ(calls("UPDATE q.t SET a = f(1) + q.g(2)", ""), "q.g");
  EXPECT_EQ(calls("DELETE FROM t WHERE a = 1"), "");
  EXPECT_EQ(calls("UPDATE t SET a = 'x"), "");  // unknown: no calls either
}

TEST(DmlTables, NotADataChange) {
  EXPECT_EQ(Tables("SELECT 1"), "-");
  EXPECT_EQ(Tables("CREATE TABLE t (a int)"), "-");
  EXPECT_EQ(Tables(""), "-");
  EXPECT_EQ(Tables("LOAD INDEX INTO CACHE t"), "-");
}

}  // namespace
}  // namespace sluice::ddl

namespace sluice::ddl {
namespace {

// A statement-logged change under ANSI_QUOTES names its tables with "..." (a new user's probe:
// `UPDATE "ras"."t" SET ...` was passed with no log line and the change lost).
TEST(DmlTables, AnsiQuotesNameTables) {
  auto tables = [](std::string_view sql, std::string_view db) {
    DmlTables d = TablesChangedBy(sql, db, sql::kAnyServerVersion, /*ansi_quotes=*/true);
    std::string out = d.known ? "" : "unknown";
    for (const TableRef& t : d.tables) out += (out.empty() ? "" : " ") + t.ToString();
    return out;
  };
  EXPECT_EQ(tables(R"(UPDATE "ras"."t" SET a = 100 WHERE id = 1)", ""), "ras.t");
  EXPECT_EQ(tables(R"(DELETE FROM "t" WHERE "id" = 5)", "ras"), "ras.t");
  EXPECT_EQ(tables(R"(INSERT INTO "ras"."t" ("id", "a") VALUES (1, 'x'))", ""), "ras.t");
  EXPECT_EQ(tables(R"(UPDATE "ras"."t" AS "x" JOIN "ras"."u" ON "x"."id" = "u"."id" SET "x"."a" = 1)", ""),
            "ras.t ras.u");
}

}  // namespace
}  // namespace sluice::ddl
