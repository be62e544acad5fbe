// ValueFromText / SnapshotSelectExpr: the snapshot side gives the Values the binlog
// decoder gives (see binlog/rows_test.cc for the same rows decoded from the binlog; the
// cells below are what MariaDB 10.11 returned for SnapshotSelectExpr of those columns).
#include "schema/text_value.h"

#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace sluice {
namespace {

ColumnDesc Col(std::string name, std::string data_type, bool is_unsigned = false,
               std::string charset = "") {
  ColumnDesc c;
  c.name = std::move(name);
  c.SetType(data_type);
  c.is_unsigned = is_unsigned;
  c.charset = std::move(charset);
  return c;
}

TEST(TextValue, SelectExpressions) {
  EXPECT_EQ(QuoteIdentifier("a`b"), "`a``b`");
  EXPECT_EQ(SnapshotSelectExpr(Col("f", "float")), "CAST(`f` AS DOUBLE)");
  EXPECT_EQ(SnapshotSelectExpr(Col("b", "bit")), "`b`+0");
  EXPECT_EQ(SnapshotSelectExpr(Col("d", "double")), "CAST(`d` AS DOUBLE)");
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

// COLUMN_DEFAULT as MariaDB 10.11 prints it (information_schema.COLUMNS).
TEST(TextValue, DefaultValues) {
  auto def = [](ColumnDesc c, std::optional<std::string> d) {
    c.default_value = std::move(d);
    auto v = DefaultValue(c);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : Value::Absent();
  };
  EXPECT_EQ(def(Col("a", "int"), std::nullopt), Value::Null());
  EXPECT_EQ(def(Col("a", "int"), "NULL"), Value::Null());
  EXPECT_EQ(def(Col("a", "int"), "-7"), Value::Int(-7));
  EXPECT_EQ(def(Col("a", "bigint", true), "18446744073709551615"), Value::UInt(18446744073709551615u));
  EXPECT_EQ(def(Col("a", "decimal"), "-94747824.8204"), Value::Text("-94747824.8204"));
  EXPECT_EQ(def(Col("a", "varchar", false, "utf8mb4"), "'q''x\\\\y'"), Value::Text("q'x\\y"));
  EXPECT_EQ(def(Col("a", "char", false, "latin1"), "'ab  '"), Value::Text("ab"));
  EXPECT_EQ(def(Col("a", "bit"), "b'101'"), Value::UInt(5));
  EXPECT_EQ(def(Col("a", "uuid"), "'aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee'"),
            Value::Text("aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"));
  EXPECT_EQ(def(Col("a", "timestamp"), "current_timestamp()"), Value::Null());
  EXPECT_EQ(def(Col("a", "datetime"), "'2020-05-06 07:08:09.500'"), Value::Text("2020-05-06 07:08:09.500"));
  ColumnDesc bin = Col("a", "binary", false, "binary");
  bin.octet_length = 4;
  EXPECT_EQ(def(bin, "'ab'"), Value::Bytes(std::string("ab\0\0", 4)));
  ColumnDesc bad = Col("a", "int");
  bad.default_value = "'x'";
  EXPECT_EQ(DefaultValue(bad).status().code(), StatusCode::kCorruption);
}

TEST(TextValue, RescaleDecimal) {
  EXPECT_EQ(*RescaleDecimal("1.5", 4), "1.5000");
  EXPECT_EQ(*RescaleDecimal("3.75", 0), "4");
  EXPECT_EQ(*RescaleDecimal("3.74", 1), "3.7");
  EXPECT_EQ(*RescaleDecimal("-3.75", 1), "-3.8");
  EXPECT_EQ(*RescaleDecimal("99.995", 2), "100.00");
  EXPECT_EQ(*RescaleDecimal(".25", 2), "0.25");
  EXPECT_EQ(*RescaleDecimal("-0.004", 2), "0.00");
  EXPECT_EQ(*RescaleDecimal("+007", 1), "7.0");
  EXPECT_EQ(RescaleDecimal("1e3", 0).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(RescaleDecimal("-", 0).status().code(), StatusCode::kCorruption);
  ColumnDesc d = Col("d", "decimal");
  d.numeric_precision = 8;
  d.numeric_scale = 4;
  d.default_value = "'1.5'";
  EXPECT_EQ(*DefaultValue(d), Value::Text("1.5000"));
}

TEST(TextValue, VectorBytes) {
  // float32 LE: 1.5, -2, 0.1f
  auto v = VectorBytesToText(std::string("\x00\x00\xc0\x3f\x00\x00\x00\xc0\xcd\xcc\xcc\x3d", 12));
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, "[1.5,-2,0.1]");
  EXPECT_EQ(*VectorBytesToText(""), "[]");
  EXPECT_EQ(VectorBytesToText("abc").status().code(), StatusCode::kCorruption);
}

// TextCellFormOf's shortcuts must be exactly what ValueFromText gives, for every column type
// and charset: kText is the cell as it is; kInteger/kUnsigned a canonical cell's own value.
TEST(TextValue, CellFormsAgreeWithValueFromText) {
  const std::vector<std::string_view> texts = {"abc", "a\"b\\c\n", "", "12", "-7", "007", "2024-01-02 03:04:05"};
  size_t forms[4] = {0, 0, 0, 0};
  for (int t = static_cast<int>(SqlType::kUnknown); t <= static_cast<int>(SqlType::kVector); ++t) {
    for (const char* charset : {"", "utf8mb4", "latin1", "binary"}) {
      for (bool is_unsigned : {false, true}) {
        ColumnDesc col{"x"};
        col.SetType(SqlTypeName(static_cast<SqlType>(t)));
        col.charset = charset;
        col.is_unsigned = is_unsigned;
        const TextCellForm form = TextCellFormOf(col);
        ++forms[static_cast<int>(form)];
        const std::string what = std::string(SqlTypeName(col.type)) + " charset '" + charset + "'" +
                                 (is_unsigned ? " unsigned" : "");
        for (std::string_view text : texts) {
          Result<Value> v = ValueFromText(col, text);
          if (form == TextCellForm::kText) {
            ASSERT_TRUE(v.ok()) << what << ": " << v.status().ToString();
            EXPECT_EQ(v->kind, Value::Kind::kText) << what;
            EXPECT_EQ(v->s, text) << what << ": a kText cell must be the Value's text as it is";
          } else if (form != TextCellForm::kOther && CanonicalInteger(text, form == TextCellForm::kInteger)) {
            ASSERT_TRUE(v.ok()) << what << " '" << text << "': " << v.status().ToString();
            EXPECT_EQ(v->kind, form == TextCellForm::kInteger ? Value::Kind::kInt : Value::Kind::kUInt) << what;
            EXPECT_EQ(v->ToText(), text) << what << ": a canonical integer cell must be its value's text";
          }
        }
      }
    }
  }
  EXPECT_GT(forms[0], 0u);
  EXPECT_GT(forms[1], 0u);
  EXPECT_GT(forms[2], 0u);
  EXPECT_GT(forms[3], 0u);
  EXPECT_TRUE(CanonicalInteger("0", true));
  EXPECT_TRUE(CanonicalInteger("-9", true));
  EXPECT_FALSE(CanonicalInteger("-9", false));
  EXPECT_FALSE(CanonicalInteger("-0", true));
  EXPECT_FALSE(CanonicalInteger("01", true));
  EXPECT_FALSE(CanonicalInteger("+1", true));
  EXPECT_FALSE(CanonicalInteger("", true));
  EXPECT_FALSE(CanonicalInteger("-", true));
  EXPECT_FALSE(CanonicalInteger("1234567890123456789", false)) << "19 digits: through ValueFromText";
  EXPECT_TRUE(CanonicalInteger("123456789012345678", false));
}

}  // namespace
}  // namespace sluice
