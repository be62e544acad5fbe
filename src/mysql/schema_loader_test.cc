#include "mysql/schema_loader.h"

#include "schema/ddl.h"
#include "schema/text_value.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mysql/testing_env.h"

namespace sluice {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(GlobTest, Wildcards) {
  EXPECT_TRUE(GlobMatch("*", ""));
  EXPECT_TRUE(GlobMatch("*", "abc"));
  EXPECT_TRUE(GlobMatch("a?c", "abc"));
  EXPECT_FALSE(GlobMatch("a?c", "ac"));
  EXPECT_TRUE(GlobMatch("a*c", "ac"));
  EXPECT_TRUE(GlobMatch("a*c", "abbbc"));
  EXPECT_FALSE(GlobMatch("a*c", "abbbd"));
  EXPECT_TRUE(GlobMatch("*_log", "film_log"));
  EXPECT_TRUE(GlobMatch("a*b*c", "axxbyyc"));
  EXPECT_FALSE(GlobMatch("abc", "ABC"));  // case-sensitive
}

TEST(GlobTest, TablePatternsAndSystemSchemas) {
  EXPECT_TRUE(PatternMatchesTable("sakila.*", "sakila", "film"));
  EXPECT_FALSE(PatternMatchesTable("sakila.*", "sakila2", "film"));
  EXPECT_TRUE(PatternMatchesTable("*.*", "shop", "orders"));
  EXPECT_FALSE(PatternMatchesTable("*.*", "mysql", "user"));
  EXPECT_FALSE(PatternMatchesTable("*.*", "information_schema", "TABLES"));
  EXPECT_FALSE(PatternMatchesTable("*.*", "performance_schema", "threads"));
  EXPECT_FALSE(PatternMatchesTable("*.*", "sys", "x"));
  EXPECT_FALSE(PatternMatchesTable("mysq?.*", "mysql", "user"));
  EXPECT_TRUE(PatternMatchesTable("mysql.user", "mysql", "user"));
  EXPECT_TRUE(PatternMatchesTable("mysql.*", "mysql", "user"));
  EXPECT_FALSE(PatternMatchesTable("nodot", "nodot", "x"));

  TableFilter f{{"shop.*"}, {"shop.tmp_*"}};
  EXPECT_TRUE(TableSelected(f, "shop", "orders"));
  EXPECT_FALSE(TableSelected(f, "shop", "tmp_x"));
  EXPECT_FALSE(TableSelected(f, "other", "orders"));
}

TEST(EnumLabelsTest, ParsesEscapes) {
  auto l = ParseEnumSetLabels("enum('a','b''c','d\\\\e','f,g','')");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_THAT(*l, ElementsAre("a", "b'c", "d\\e", "f,g", ""));
  auto s = ParseEnumSetLabels("set('x','y')");
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(*s, ElementsAre("x", "y"));
  EXPECT_EQ(ParseEnumSetLabels("enum('a'").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ParseEnumSetLabels("int(11)").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ParseEnumSetLabels("enum('a' 'b')").status().code(), StatusCode::kCorruption);
}

class SchemaLoaderLiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    c_ = testing::ConnectTestServer();
    ASSERT_NE(c_, nullptr);
    for (const char* sql : {
             "DROP DATABASE IF EXISTS sl_test",
             "DROP DATABASE IF EXISTS sl_test2",
             "CREATE DATABASE sl_test",
             "CREATE DATABASE sl_test2",
             "CREATE TABLE sl_test.wide ("
             "  k2 VARCHAR(10) CHARACTER SET latin1 COLLATE latin1_swedish_ci NOT NULL,"
             "  id INT UNSIGNED NOT NULL,"
             "  e ENUM('a','b''c','d\\\\e','f,g') DEFAULT 'a',"
             "  s SET('x','y'),"
             "  d DECIMAL(12,3),"
             "  t DATETIME(4),"
             "  bits BIT(5),"
             "  b VARBINARY(16),"
             "  bl BLOB,"
             "  g INT AS (id + 1) VIRTUAL,"
             "  h INT INVISIBLE DEFAULT 5,"
             "  PRIMARY KEY (id, k2))",
             "CREATE TABLE sl_test.nopk (a INT, b TEXT)",
             "CREATE TABLE sl_test.tmp_x (a INT PRIMARY KEY)",
             "CREATE VIEW sl_test.v AS SELECT a FROM sl_test.nopk",
             "CREATE TABLE sl_test2.other (a INT PRIMARY KEY)",
         }) {
      Status st = c_->Execute(sql);
      ASSERT_TRUE(st.ok()) << st.ToString();
    }
  }
  std::unique_ptr<Connection> c_;
};

TEST_F(SchemaLoaderLiveTest, ListsSelectedBaseTables) {
  auto t = ListTables(*c_, TableFilter{{"sl_test.*"}, {"sl_test.tmp_*"}});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_THAT(*t, ElementsAre(TableName{"sl_test", "nopk"}, TableName{"sl_test", "wide"}));

  auto both = ListTables(*c_, TableFilter{{"sl_test?.*", "sl_test.nopk"}, {}});
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  EXPECT_THAT(*both, ElementsAre(TableName{"sl_test", "nopk"}, TableName{"sl_test2", "other"}));

  auto all = ListTables(*c_, TableFilter{{"*.*"}, {}});
  ASSERT_TRUE(all.ok());
  for (const TableName& n : *all) EXPECT_NE(n.db, "mysql");

  auto missing = ListTables(*c_, TableFilter{{"sl_test.nope"}, {}});
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("sl_test.nope"));
  EXPECT_EQ(ListTables(*c_, TableFilter{{"sl_test"}, {}}).status().code(),
            StatusCode::kInvalidArgument);
}

// Patterns with a literal database read only those databases (SchemaScope); the patterns
// still decide, byte for byte, though the scope compares case-insensitively.
TEST_F(SchemaLoaderLiveTest, LiteralDatabasesScopeTheListingWithoutChangingIt) {
  EXPECT_EQ(SchemaScope(*c_, {"sl_test.*", "sl_test2.other", "sl_test.nopk"}),
            " AND TABLE_SCHEMA IN ('sl_test', 'sl_test2')");
  EXPECT_EQ(SchemaScope(*c_, {"sl_test.*", "sl_*.x"}), "");  // a wildcard database: every table
  EXPECT_EQ(SchemaScope(*c_, {"it's.t"}), " AND TABLE_SCHEMA IN ('it\\'s')");

  auto two = ListTables(*c_, TableFilter{{"sl_test2.other", "sl_test.nopk"}, {}});
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_THAT(*two, ElementsAre(TableName{"sl_test", "nopk"}, TableName{"sl_test2", "other"}));

  auto upper = ListTables(*c_, TableFilter{{"SL_TEST.*"}, {}});
  EXPECT_EQ(upper.status().code(), StatusCode::kNotFound) << upper.status().ToString();
  auto quoted = ListTables(*c_, TableFilter{{"it's.t"}, {}});
  EXPECT_EQ(quoted.status().code(), StatusCode::kNotFound) << quoted.status().ToString();
}

TEST_F(SchemaLoaderLiveTest, LoadsEveryColumnField) {
  auto s = LoadTableSchema(*c_, "sl_test", "wide");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->QualifiedName(), "sl_test.wide");
  ASSERT_EQ(s->columns.size(), 11u);
  // PK is (id, k2): key order, not column order.
  EXPECT_THAT(s->primary_key, ElementsAre(1u, 0u));

  const ColumnDesc& k2 = s->columns[0];
  EXPECT_EQ(k2.name, "k2");
  EXPECT_EQ(k2.data_type, "varchar");
  EXPECT_EQ(k2.charset, "latin1");
  EXPECT_EQ(k2.collation, "latin1_swedish_ci");
  EXPECT_EQ(k2.char_max_length, 10u);
  EXPECT_EQ(k2.octet_length, 10u);
  EXPECT_FALSE(k2.nullable);

  const ColumnDesc& id = s->columns[1];
  EXPECT_EQ(id.data_type, "int");
  EXPECT_TRUE(id.is_unsigned);
  EXPECT_TRUE(id.charset.empty());

  const ColumnDesc& e = s->columns[2];
  EXPECT_EQ(e.data_type, "enum");
  EXPECT_THAT(e.labels, ElementsAre("a", "b'c", "d\\e", "f,g"));
  EXPECT_TRUE(e.nullable);
  ASSERT_TRUE(e.default_value.has_value());
  EXPECT_THAT(*e.default_value, HasSubstr("a"));

  EXPECT_THAT(s->columns[3].labels, ElementsAre("x", "y"));
  EXPECT_EQ(s->columns[4].numeric_precision, 12u);
  EXPECT_EQ(s->columns[4].numeric_scale, 3u);
  EXPECT_EQ(s->columns[5].fsp, 4u);
  EXPECT_EQ(s->columns[6].numeric_precision, 5u);  // BIT width
  EXPECT_EQ(s->columns[7].charset, "binary");
  EXPECT_TRUE(s->columns[7].IsBinaryString());
  EXPECT_EQ(s->columns[8].charset, "binary");
  EXPECT_TRUE(s->columns[9].is_generated);
  EXPECT_FALSE(s->columns[9].is_invisible);
  EXPECT_TRUE(s->columns[10].is_invisible);
  EXPECT_FALSE(s->columns[10].is_generated);
  EXPECT_FALSE(s->columns[1].is_generated);

  auto nopk = LoadTableSchema(*c_, "sl_test", "nopk");
  ASSERT_TRUE(nopk.ok());
  EXPECT_FALSE(nopk->has_primary_key());

  auto missing = LoadTableSchema(*c_, "sl_test", "nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("sl_test.nope"));
  // A table the user may not see looks missing: the message says so and names the GRANT (a
  // stream that met such a table's events stopped with "not found" alone: new-user test).
  EXPECT_THAT(missing.status().message(), HasSubstr("GRANT SELECT ON `sl_test`.`nope`"));
}

// The typed model built from a CREATE TABLE statement (schema/ddl.h) and the one read back
// from information_schema for the table it made agree, field by field: one model, two sources.
TEST_F(SchemaLoaderLiveTest, DdlParserAgreesWithTheServer) {
  const std::string create =
      "CREATE TABLE sl_test.agree ("
      "  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,"
      "  p DECIMAL(6,2) DEFAULT 3.75,"
      "  q DECIMAL(8,4) NOT NULL DEFAULT '1.5',"
      "  e ENUM('x','y''z','') CHARACTER SET latin1 DEFAULT 'y''z',"
      "  st SET('a','b') NOT NULL,"
      "  v VARCHAR(10) COLLATE utf8mb4_bin DEFAULT 'q',"
      "  c CHAR(3) CHARACTER SET latin1,"
      "  b VARBINARY(4),"
      "  bn BINARY(3) DEFAULT 'ab',"
      "  ts TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),"
      "  dt DATETIME(6) NULL,"
      "  tm TIME,"
      "  y YEAR,"
      "  g INT AS (nn * 2) STORED,"
      "  gv INT AS (nn + 1) VIRTUAL,"
      "  u VARCHAR(36) DEFAULT (uuid()),"
      "  n INT DEFAULT NULL,"
      "  nn INT NOT NULL,"
      "  bt BIT(3) DEFAULT b'101',"
      "  f FLOAT, d DOUBLE, r REAL, ti TINYINT(1) DEFAULT -1, j JSON,"
      "  hid INT INVISIBLE DEFAULT 5,"
      "  uu UUID, i6 INET6, gm POINT,"
      "  lt LONGTEXT, mb MEDIUMBLOB,"
      "  PRIMARY KEY (id)"
      ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4";
  Status made = c_->Execute(create);
  ASSERT_TRUE(made.ok()) << made.ToString();
  auto server = LoadTableSchema(*c_, "sl_test", "agree");
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  auto parsed = ddl::Parse(create, "ignored", {.mariadb = true});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_TRUE(parsed->understood) << parsed->not_understood;
  ASSERT_TRUE(parsed->definition.has_value());
  const TableSchema& a = *server;
  const TableSchema& b = *parsed->definition;
  EXPECT_EQ(a.engine, b.engine);
  EXPECT_EQ(a.primary_key, b.primary_key);
  ASSERT_EQ(a.columns.size(), b.columns.size());
  for (size_t i = 0; i < a.columns.size(); ++i) {
    const ColumnDesc& x = a.columns[i];
    const ColumnDesc& y = b.columns[i];
    SCOPED_TRACE(x.name + " (" + x.column_type + ")");
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.is_unsigned, y.is_unsigned);
    EXPECT_EQ(x.nullable, y.nullable);
    EXPECT_EQ(x.charset, y.charset);
    if ((IsCharacterType(x.type) || IsBinaryType(x.type) || x.type == SqlType::kVarChar) &&
        x.type != SqlType::kLongText && x.type != SqlType::kMediumBlob) {
      EXPECT_EQ(x.char_max_length, y.char_max_length);
    }
    if (x.type == SqlType::kDecimal || x.type == SqlType::kBit) {
      EXPECT_EQ(x.numeric_precision, y.numeric_precision);
      EXPECT_EQ(x.numeric_scale, y.numeric_scale);
    }
    if (IsTemporalType(x.type)) {
      EXPECT_EQ(x.fsp, y.fsp);
    }
    EXPECT_EQ(x.labels, y.labels);
    EXPECT_EQ(x.generated, y.generated);
    EXPECT_EQ(x.is_invisible, y.is_invisible);
    EXPECT_EQ(x.auto_increment, y.auto_increment);
    // A column without DEFAULT that is nullable reads back as DEFAULT NULL.
    DefaultKind want = y.default_kind == DefaultKind::kNone && y.nullable && !y.is_generated &&
                               !y.auto_increment
                           ? DefaultKind::kNull
                           : y.default_kind;
    EXPECT_EQ(x.default_kind, want);
    if (x.default_kind == DefaultKind::kLiteral) {
      auto vx = DefaultValue(x);
      auto vy = DefaultValue(y);
      ASSERT_TRUE(vx.ok() && vy.ok()) << vx.status().ToString() << vy.status().ToString();
      EXPECT_EQ(*vx, *vy);
    }
  }
}

}  // namespace
}  // namespace sluice
