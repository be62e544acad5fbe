// MariaDB UUID/INET4/INET6 row-image bytes -> SELECT text. Expected strings follow MariaDB
// plugin/type_inet/sql_type_inet.cc (Inet6::to_string) and plugin/type_uuid/sql_type_uuid.h
// (UUID::pack writes the in-memory order), checked against MariaDB 10.11 by
// tests/integration/differential_test.cc.
#include "binlog/fixed_binary_text.h"

#include <gtest/gtest.h>

#include "binlog/value_decoder.h"

namespace sluice::binlog {
namespace {

std::string Hex(std::string_view h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
  return out;
}

std::string Text(FixedBinaryType t, std::string_view hex) {
  auto r = FixedBinaryToText(t, Hex(hex));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : "";
}

TEST(FixedBinaryText, Uuid) {
  EXPECT_EQ(Text(FixedBinaryType::kUuid, "aaaaaaaabbbbccccddddeeeeeeeeeeee"), "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
  // Trailing zero bytes are stripped in the binlog.
  EXPECT_EQ(Text(FixedBinaryType::kUuid, "74ecfc63451157b3a1ece2d46a"), "74ecfc63-4511-57b3-a1ec-e2d46a000000");
  EXPECT_EQ(Text(FixedBinaryType::kUuid, ""), "00000000-0000-0000-0000-000000000000");
}

TEST(FixedBinaryText, Inet4) {
  EXPECT_EQ(Text(FixedBinaryType::kInet4, "01020304"), "1.2.3.4");
  EXPECT_EQ(Text(FixedBinaryType::kInet4, "0a"), "10.0.0.0");
  EXPECT_EQ(Text(FixedBinaryType::kInet4, ""), "0.0.0.0");
}

TEST(FixedBinaryText, Inet6) {
  EXPECT_EQ(Text(FixedBinaryType::kInet6, ""), "::");
  EXPECT_EQ(Text(FixedBinaryType::kInet6, "00000000000000000000000000000001"), "::1");
  EXPECT_EQ(Text(FixedBinaryType::kInet6, "00000000000000000000ffff01020304"), "::ffff:1.2.3.4");
  EXPECT_EQ(Text(FixedBinaryType::kInet6, "00000000000000000000000001020304"), "::1.2.3.4");
  EXPECT_EQ(Text(FixedBinaryType::kInet6, "0001"), "1::");
  EXPECT_EQ(Text(FixedBinaryType::kInet6, "20010db8000000010000000000000001"), "2001:db8:0:1::1");
  // The first of two equally long zero runs is compressed; a single zero word too.
  EXPECT_EQ(Text(FixedBinaryType::kInet6, "00010000000000020000000000000003"), "1:0:0:2::3");
  EXPECT_EQ(Text(FixedBinaryType::kInet6, "00010000000000020000000000030004"), "1::2:0:0:3:4");
  EXPECT_EQ(Text(FixedBinaryType::kInet6, "00010000000200030004000500060007"), "1::2:3:4:5:6:7");
}

TEST(FixedBinaryText, TooLongIsCorruption) {
  EXPECT_EQ(FixedBinaryToText(FixedBinaryType::kInet4, Hex("0102030405")).status().code(), StatusCode::kCorruption);
}

TEST(FixedBinaryText, DecodedFromAStringColumnWhenTheSchemaSaysSo) {
  // MariaDB writes INET6 as STRING, binary charset, length 16 (meta 0xFE10).
  const std::string image = "\x0a" + Hex("20010db8000000000000000000");
  ByteReader r(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(image.data()), image.size()), 0, "test");
  ColumnContext c;
  c.type = ColumnType::MYSQL_TYPE_STRING;
  c.meta = 0xFE10;
  c.charset = "binary";
  c.fixed_binary = FixedBinaryType::kInet6;
  auto v = DecodeColumnValue(r, c);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, Value::Text("2001:db8::"));
}

}  // namespace
}  // namespace sluice::binlog
