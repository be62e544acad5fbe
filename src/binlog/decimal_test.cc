// DECIMAL binary form -> text. Vectors: MySQL strings/decimal.cc (decimal2bin comment:
// 1234567890.1234 as DECIMAL(14,4) is 81 0D FB 38 D2 04 D2) and values derived from the
// grammar in decimal.h; DECIMAL(65,30) extremes are checked against the live server's
// binlog in rows_test.cc.
#include "binlog/decimal.h"

#include <gtest/gtest.h>

#include <vector>

namespace sluice::binlog {
namespace {

struct Case {
  std::vector<uint8_t> bytes;
  int precision, scale;
  const char* want;
  const char* sql;
};

TEST(Decimal, Vectors) {
  const Case cases[] = {
      {{0x81, 0x0D, 0xFB, 0x38, 0xD2, 0x04, 0xD2}, 14, 4, "1234567890.1234", "DECIMAL(14,4) 1234567890.1234"},
      {{0x7E, 0xF2, 0x04, 0xC7, 0x2D, 0xFB, 0x2D}, 14, 4, "-1234567890.1234", "DECIMAL(14,4) -1234567890.1234"},
      {{0x80, 0x00, 0x01}, 5, 2, "0.01", "DECIMAL(5,2) 0.01"},
      {{0x7F, 0xFF, 0xFE}, 5, 2, "-0.01", "DECIMAL(5,2) -0.01"},
      {{0x83, 0xE7, 0x63}, 5, 2, "999.99", "DECIMAL(5,2) 999.99"},
      {{0x80, 0x00, 0x00, 0x00, 0x00}, 10, 0, "0", "DECIMAL(10,0) 0"},
      {{0x89, 0x3B, 0x9A, 0xC9, 0xFF}, 10, 0, "9999999999", "DECIMAL(10,0) 9999999999"},
      {{0x76, 0xC4, 0x65, 0x36, 0x00}, 10, 0, "-9999999999", "DECIMAL(10,0) -9999999999"},
      {{0x80, 0x00, 0x00}, 5, 5, "0.00000", "DECIMAL(5,5) 0"},
      {{0x81}, 1, 0, "1", "DECIMAL(1,0) 1"},
  };
  for (const Case& c : cases) {
    ASSERT_EQ(DecimalBinarySize(c.precision, c.scale), c.bytes.size()) << c.sql;
    auto got = DecimalToString(c.bytes, c.precision, c.scale);
    ASSERT_TRUE(got.ok()) << c.sql << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.want) << c.sql;
  }
}

TEST(Decimal, Sizes) {
  EXPECT_EQ(DecimalBinarySize(65, 30), 30u);  // 35 int digits: 3+4+4+4+4 ... = 16; 30 frac: 14
  EXPECT_EQ(DecimalBinarySize(10, 0), 5u);
  EXPECT_EQ(DecimalBinarySize(9, 9), 4u);
  EXPECT_EQ(DecimalBinarySize(0, 0), 0u);
  EXPECT_EQ(DecimalBinarySize(66, 0), 0u);
  EXPECT_EQ(DecimalBinarySize(5, 6), 0u);
}

TEST(Decimal, TinyNegativeFractionDecimal65_30) {
  // -0.000000000000000000000000000001: all int groups 0, last frac group (3 digits,
  // 2 bytes) = 1; negative inverts every byte.
  std::vector<uint8_t> pos(30, 0);
  pos[0] = 0x80;
  pos[29] = 0x01;
  std::vector<uint8_t> neg = pos;
  for (auto& b : neg) b = static_cast<uint8_t>(~b);
  EXPECT_EQ(*DecimalToString(pos, 65, 30), "0.000000000000000000000000000001");
  EXPECT_EQ(*DecimalToString(neg, 65, 30), "-0.000000000000000000000000000001");
}

TEST(Decimal, Errors) {
  std::vector<uint8_t> ten = {0x8A};  // DECIMAL(1,0) group value 10 > 9
  EXPECT_EQ(DecimalToString(ten, 1, 0).status().code(), StatusCode::kCorruption);
  std::vector<uint8_t> short_buf = {0x80, 0x00};
  EXPECT_EQ(DecimalToString(short_buf, 10, 0).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecimalToString(short_buf, 70, 0).status().code(), StatusCode::kCorruption);
  ByteReader r(short_buf, 500, "row image");
  auto st = ReadDecimal(r, 10, 0).status();
  EXPECT_EQ(st.code(), StatusCode::kCorruption);
  EXPECT_NE(st.message().find("offset 500"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace sluice::binlog
