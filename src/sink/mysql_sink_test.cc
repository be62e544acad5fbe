// The MySQL/MariaDB destination's pure parts: column definitions one to one, literals that
// the server reads back exactly, and which errors are retried. The live behaviour is in
// tests/integration/mysql_sink_test.cc.
#include "sink/mysql_sink.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

ColumnDesc Col(std::string name, std::string type, std::string column_type) {
  ColumnDesc c;
  c.name = std::move(name);
  c.SetType(type);
  c.column_type = std::move(column_type);
  return c;
}

std::string Lit(const ColumnDesc& c, const Value& v) {
  Result<std::string> r = MysqlLiteral(c, v);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : "";
}

TEST(MysqlSinkDdl, ColumnDefinitionKeepsTypeCharsetCollationNullabilityAndLiteralDefault) {
  ColumnDesc c = Col("name", "varchar", "varchar(20)");
  c.charset = "latin1";
  c.collation = "latin1_swedish_ci";
  c.nullable = false;
  c.default_kind = DefaultKind::kLiteral;
  c.default_value = "'it''s'";
  auto d = MysqlColumnDefinition(c);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(*d, "varchar(20) CHARACTER SET latin1 COLLATE latin1_swedish_ci NOT NULL DEFAULT 'it\\'s'");

  ColumnDesc u = Col("n", "bigint", "bigint(20) unsigned");
  u.is_unsigned = true;
  u.default_kind = DefaultKind::kNull;
  EXPECT_EQ(*MysqlColumnDefinition(u), "bigint(20) unsigned NULL DEFAULT NULL");

  // An expression default has no value outside the server: no DEFAULT clause (the binlog
  // logs such columns in every image).
  ColumnDesc ts = Col("ts", "timestamp", "timestamp(6)");
  ts.nullable = false;
  ts.default_kind = DefaultKind::kExpression;
  ts.default_value = "current_timestamp(6)";
  EXPECT_EQ(*MysqlColumnDefinition(ts), "timestamp(6) NOT NULL");

  ColumnDesc none = Col("x", "mystery", "");
  EXPECT_EQ(MysqlColumnDefinition(none).status().code(), StatusCode::kNotSupported);
}

TEST(MysqlSinkDdl, DestinationDatabaseFollowsTheMapping) {
  MysqlSinkOptions o;
  o.databases["sakila"] = "copy";
  EXPECT_EQ(MysqlDestinationDatabase(o, "sakila"), "copy");
  EXPECT_EQ(MysqlDestinationDatabase(o, "other"), "other");
}

TEST(MysqlSinkLiteral, ValuesBecomeExactLiterals) {
  EXPECT_EQ(Lit(Col("i", "int", "int"), Value::Int(-5)), "-5");
  EXPECT_EQ(Lit(Col("u", "bigint", "bigint unsigned"), Value::UInt(18446744073709551615ull)), "18446744073709551615");
  // A FLOAT goes as its exact double: the server rounds that back to the same float.
  EXPECT_EQ(Lit(Col("f", "float", "float"), Value::Float(0.1f)), "0.10000000149011612");
  EXPECT_EQ(Lit(Col("d", "double", "double"), Value::Double(1e300)), "1e+300");
  EXPECT_EQ(Lit(Col("d", "double", "double"), Value::Double(-0.0)), "-0e0");
  EXPECT_EQ(Lit(Col("m", "decimal", "decimal(65,30)"), Value::Text("-0.000001")), "-0.000001");
  // Not a decimal number: quoted, never spliced into the statement.
  EXPECT_EQ(Lit(Col("m", "decimal", "decimal(5,2)"), Value::Text("1); DROP")), "'1); DROP'");
  EXPECT_EQ(Lit(Col("s", "varchar", "varchar(5)"), Value::Text("it's")), "'it\\'s'");
  EXPECT_EQ(Lit(Col("b", "blob", "blob"), Value::Bytes(std::string("\0\xff", 2))), "X'00FF'");
  EXPECT_EQ(Lit(Col("b", "blob", "blob"), Value::Bytes("")), "X''");
  EXPECT_EQ(Lit(Col("n", "int", "int"), Value::Null()), "NULL");
  auto absent = MysqlLiteral(Col("a", "int", "int"), Value::Absent());
  EXPECT_EQ(absent.status().code(), StatusCode::kInvalidArgument);
  auto nan = MysqlLiteral(Col("d", "double", "double"), Value::Double(std::nan("")));
  EXPECT_EQ(nan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(nan.status().message().find("column d"), std::string::npos);
}

TEST(MysqlSinkErrors, LostConnectionsDeadlocksAndShutdownAreTransientTheRestDefinite) {
  for (unsigned e : {2006u, 2013u, 2002u, 2003u, 1053u, 1205u, 1213u, 1927u, 1040u})
    EXPECT_TRUE(MysqlErrorIsTransient(e)) << e;
  // duplicate key, access denied, table full / disk full, bad value, unknown table, TLS
  for (unsigned e : {1062u, 1045u, 1142u, 1114u, 1021u, 1366u, 1146u, 2026u, 1064u})
    EXPECT_FALSE(MysqlErrorIsTransient(e)) << e;
}

}  // namespace
}  // namespace sluice
