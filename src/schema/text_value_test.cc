// ValueFromText / SnapshotSelectExpr: the snapshot side gives the Values the binlog
// decoder gives (see binlog/rows_test.cc for the same rows decoded from the binlog; the
// cells below are what MariaDB 10.11 returned for SnapshotSelectExpr of those columns).
#include "schema/text_value.h"

#include <limits>

#include <gtest/gtest.h>

namespace sluice {
namespace {

ColumnDesc Col(std::string name, std::string data_type, bool is_unsigned = false,
               std::string charset = "") {
  ColumnDesc c;
  c.name = std::move(name);
  c.data_type = std::move(data_type);
  c.is_unsigned = is_unsigned;
  c.charset = std::move(charset);
  return c;
}

TEST(TextValue, SelectExpressions) {
  EXPECT_EQ(QuoteIdentifier("a`b"), "`a``b`");
  EXPECT_EQ(SnapshotSelectExpr(Col("f", "float")), "CAST(`f` AS DOUBLE)");
  EXPECT_EQ(SnapshotSelectExpr(Col("b", "bit")), "`b`+0");
  EXPECT_EQ(SnapshotSelectExpr(Col("d", "double")), "`d`");
  EXPECT_EQ(SnapshotSelectExpr(Col("x`y", "varchar", false, "utf8mb4")), "`x``y`");
}

TEST(TextValue, Cells) {
  struct Case {
    ColumnDesc col;
    std::optional<std::string_view> text;
    Value want;
  };
  const Case cases[] = {
      {Col("ti", "tinyint"), "-128", Value::Int(-128)},
      {Col("tiu", "tinyint", true), "255", Value::UInt(255)},
      {Col("bi", "bigint"), "-9223372036854775808", Value::Int(std::numeric_limits<int64_t>::min())},
      {Col("biu", "bigint", true), "18446744073709551615", Value::UInt(std::numeric_limits<uint64_t>::max())},
      {Col("y", "year"), "0000", Value::Int(0)},
      {Col("y", "year"), "2155", Value::Int(2155)},
      {Col("b64", "bit"), "18446744073709551615", Value::UInt(std::numeric_limits<uint64_t>::max())},
      {Col("f", "float"), "0.10000000149011612", Value::Float(0.1f)},
      {Col("f", "float"), "-3.4028234663852886e38", Value::Float(-3.4028235e38f)},
      {Col("d", "double"), "1.7976931348623157e308", Value::Double(1.7976931348623157e308)},
      {Col("d", "double"), "5e-324", Value::Double(5e-324)},
      {Col("d65", "decimal"), "-0.000000000000000000000000000001", Value::Text("-0.000000000000000000000000000001")},
      {Col("tm", "time"), "-838:59:59.000001", Value::Text("-838:59:59.000001")},
      {Col("ts", "timestamp"), "0000-00-00 00:00:00", Value::Text("0000-00-00 00:00:00")},
      {Col("c", "char", false, "utf8mb4"), "ab\xF0\x9F\x98\x80", Value::Text("ab\xF0\x9F\x98\x80")},
      {Col("bn", "binary", false, "binary"), std::string_view("\x01\x02\0\0\0", 5), Value::Bytes(std::string("\x01\x02\0\0\0", 5))},
      {Col("cb", "char", false, "binary"), "ab", Value::Bytes("ab")},
      {Col("mb", "mediumblob", false, "binary"), "", Value::Bytes("")},
      {Col("g", "geometry"), "\x01", Value::Bytes("\x01")},
      {Col("js", "json"), "{\"a\": 1}", Value::Text("{\"a\": 1}")},
      {Col("e", "enum", false, "utf8mb4"), "", Value::Text("")},
      {Col("s", "set", false, "utf8mb4"), "x,z", Value::Text("x,z")},
      {Col("i", "int"), std::nullopt, Value::Null()},
  };
  for (const Case& c : cases) {
    auto v = ValueFromText(c.col, c.text);
    ASSERT_TRUE(v.ok()) << c.col.name << ": " << v.status().ToString();
    EXPECT_EQ(*v, c.want) << c.col.name << ": got " << v->DebugString() << ", want "
                          << c.want.DebugString();
  }
}

TEST(TextValue, Errors) {
  EXPECT_EQ(ValueFromText(Col("i", "int"), "12x").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ValueFromText(Col("i", "int"), "").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ValueFromText(Col("u", "int", true), "-1").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ValueFromText(Col("t", "tinyint"), "99999999999999999999").status().code(),
            StatusCode::kCorruption);
  EXPECT_EQ(ValueFromText(Col("f", "float"), "1e300").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ValueFromText(Col("d", "double"), "abc").status().code(), StatusCode::kCorruption);
  auto st = ValueFromText(Col("z", "frobnicate"), "1").status();
  EXPECT_EQ(st.code(), StatusCode::kNotSupported);
  EXPECT_NE(st.message().find("z"), std::string::npos);
}

}  // namespace
}  // namespace sluice
