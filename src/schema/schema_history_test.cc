#include "schema/schema_history.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TableSchemaPtr Table(std::string name, std::vector<std::pair<std::string, std::string>> cols) {
  auto t = std::make_shared<TableSchema>();
  t->db = "shop";
  t->table = std::move(name);
  t->engine = "InnoDB";
  for (auto& [n, ty] : cols) {
    ColumnDesc c;
    c.name = n;
    c.SetType(ty);
    c.column_type = ty;
    t->columns.push_back(std::move(c));
  }
  t->primary_key = {0};
  return t;
}

BinlogPosition Pos(uint64_t p, std::string file = "bin.000001") { return {std::move(file), p}; }

TEST(SchemaHistory, AtPicksTheVersionInEffect) {
  SchemaHistory h;
  auto v1 = Table("t", {{"id", "int"}, {"e", "enum"}});
  auto v2 = Table("t", {{"id", "bigint"}, {"e", "enum"}});
  ASSERT_TRUE(h.Add("shop", "t", {Pos(100), v1, ""}).ok());
  ASSERT_TRUE(h.Add("shop", "t", {Pos(500), v2, "ALTER TABLE t MODIFY id BIGINT"}).ok());
  ASSERT_TRUE(h.Add("shop", "t", {Pos(200, "bin.000002"), nullptr, "DROP TABLE t"}).ok());
  EXPECT_EQ(h.At("shop", "t", Pos(99)), nullptr);
  EXPECT_EQ(h.At("shop", "t", Pos(100))->schema, v1);
  EXPECT_EQ(h.At("shop", "t", Pos(499))->schema, v1);
  EXPECT_EQ(h.At("shop", "t", Pos(500))->schema, v2);
  EXPECT_EQ(h.At("shop", "t", Pos(4, "bin.000002"))->schema, v2);
  EXPECT_EQ(h.At("shop", "t", Pos(300, "bin.000002"))->schema, nullptr);
  EXPECT_EQ(h.At("shop", "u", Pos(300)), nullptr);
  EXPECT_EQ(h.Latest("shop", "t")->ddl, "DROP TABLE t");

  // Out of order is refused; the same position replaces.
  EXPECT_EQ(h.Add("shop", "t", {Pos(600), v1, ""}).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(h.Add("shop", "t", {Pos(200, "bin.000002"), v1, "RENAME TABLE x TO t"}).ok());
  EXPECT_EQ(h.Versions("shop", "t").size(), 3u);
  EXPECT_EQ(h.Latest("shop", "t")->schema, v1);
}

TEST(SchemaHistory, PruneKeepsWhatLaterEventsNeed) {
  SchemaHistory h;
  ASSERT_TRUE(h.Add("shop", "t", {Pos(100), Table("t", {{"id", "int"}}), ""}).ok());
  ASSERT_TRUE(h.Add("shop", "t", {Pos(200), Table("t", {{"id", "bigint"}}), "ALTER"}).ok());
  ASSERT_TRUE(h.Add("shop", "t", {Pos(300), Table("t", {{"id", "decimal"}}), "ALTER"}).ok());
  ASSERT_TRUE(h.Add("shop", "gone", {Pos(10), Table("gone", {{"id", "int"}}), ""}).ok());
  ASSERT_TRUE(h.Add("shop", "gone", {Pos(20), nullptr, "DROP TABLE gone"}).ok());
  h.Prune(Pos(250));
  ASSERT_EQ(h.Versions("shop", "t").size(), 2u);
  EXPECT_EQ(h.Versions("shop", "t")[0].since, Pos(200));
  EXPECT_EQ(h.Versions("shop", "gone").size(), 0u);
  EXPECT_EQ(h.Tables(), std::vector<std::string>{"shop.t"});
}

TEST(SchemaHistory, JsonRoundTripKeepsEveryField) {
  auto t = std::make_shared<TableSchema>(*Table("t", {{"id", "int"}}));
  t->collation = "utf8mb4_general_ci";
  t->system_versioned = true;
  ColumnDesc c;
  c.name = "s\"x";
  c.SetType("set");
  c.column_type = "set('a','b''c')";
  c.is_unsigned = false;
  c.nullable = false;
  c.charset = "latin1";
  c.collation = "latin1_bin";
  c.char_max_length = 5;
  c.octet_length = 5;
  c.labels = {"a", "b'c"};
  c.generated = GeneratedKind::kStored;
  c.is_generated = true;
  c.generation_expression = "`a` * 2";
  c.is_invisible = true;
  c.versioning = VersioningRole::kRowEnd;
  c.auto_increment = true;
  c.default_kind = DefaultKind::kExpression;
  c.default_value = "uuid()";
  t->columns.push_back(c);
  ColumnDesc d;
  d.name = "d";
  d.SetType("decimal");
  d.numeric_precision = 8;
  d.numeric_scale = 4;
  d.fsp = 0;
  d.default_kind = DefaultKind::kLiteral;
  d.default_value = "1.5000";
  t->columns.push_back(d);

  SchemaHistory h;
  ASSERT_TRUE(h.Add("shop", "t", {Pos(4), t, ""}).ok());
  ASSERT_TRUE(h.Add("shop", "t", {Pos(9), nullptr, "DROP TABLE `t` /* x */"}).ok());
  ASSERT_TRUE(h.Add("o.ther", "t", {Pos(9), Table("t", {{"id", "uuid"}}), "CREATE"}).ok());
  auto back = SchemaHistory::FromJson(h.ToJson());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(*back == h);
  EXPECT_EQ(back->ToJson(), h.ToJson());
  EXPECT_EQ(back->At("shop", "t", Pos(5))->schema->columns[1].type, SqlType::kSet);

  auto one = TableSchemaFromJson(TableSchemaToJson(*t));
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_TRUE(*one == *t);
}

TEST(SchemaHistory, FromJsonNamesTheBadField) {
  auto bad = SchemaHistory::FromJson(R"({"tables":[{"db":"a","table":"b","versions":[{"since":{"file":"f","pos":-1}}]}]})");
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruption);
  EXPECT_NE(bad.status().message().find("schemas.tables[0].versions[0].since.pos"), std::string::npos)
      << bad.status().ToString();
  EXPECT_EQ(SchemaHistory::FromJson("{").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(SchemaHistory::FromJson("[]").status().code(), StatusCode::kCorruption);
  auto order = SchemaHistory::FromJson(
      R"({"tables":[{"db":"a","table":"b","versions":[{"since":{"file":"f.1","pos":9},"ddl":"","schema":null},)"
      R"({"since":{"file":"f.1","pos":4},"ddl":"","schema":null}]}]})");
  EXPECT_EQ(order.status().code(), StatusCode::kCorruption);
  auto pk = TableSchemaFromJson(R"({"db":"a","table":"b","engine":"","collation":"","system_versioned":false,"columns":[],"primary_key":[0]})");
  EXPECT_EQ(pk.status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace sluice
