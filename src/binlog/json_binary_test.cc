// MySQL binary JSON -> text, from hand-built documents (layout: MySQL
// sql-common/json_binary.cc header comment; printing: sql-common/json_dom.cc).
#include "binlog/json_binary.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace sluice::binlog {
namespace {

using Bytes = std::vector<uint8_t>;

std::string Text(const Bytes& b) {
  auto r = JsonBinaryToText(b);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : "<error>";
}

Bytes Scalar(uint8_t type, const Bytes& payload) {
  Bytes b = {type};
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

Bytes DoubleDoc(double d) {
  Bytes b(9);
  b[0] = 0x0B;
  std::memcpy(&b[1], &d, 8);
  return b;
}

TEST(JsonBinary, ObjectWithArray) {
  // SELECT CAST('{"a": 1, "b": [1, 2]}' AS JSON)
  Bytes doc = {0x00, 0x02, 0x00, 0x1E, 0x00,           // small object, 2 members, 30 bytes
               0x12, 0x00, 0x01, 0x00, 0x13, 0x00, 0x01, 0x00,  // keys at 18 and 19
               0x05, 0x01, 0x00,                        // "a": int16 1 inlined
               0x02, 0x14, 0x00,                        // "b": small array at 20
               'a',  'b',
               0x02, 0x00, 0x0A, 0x00, 0x05, 0x01, 0x00, 0x05, 0x02, 0x00};
  EXPECT_EQ(Text(doc), R"({"a": 1, "b": [1, 2]})");
}

TEST(JsonBinary, LiteralsAndEmptyContainers) {
  EXPECT_EQ(Text({0x02, 0x03, 0x00, 0x0D, 0x00, 0x04, 0x00, 0x00, 0x04, 0x01, 0x00, 0x04, 0x02, 0x00}),
            "[null, true, false]");
  EXPECT_EQ(Text({0x02, 0x00, 0x00, 0x04, 0x00}), "[]");
  EXPECT_EQ(Text({0x00, 0x00, 0x00, 0x04, 0x00}), "{}");
  EXPECT_EQ(Text({0x04, 0x00}), "null");
  EXPECT_EQ(Text({0x04, 0x01}), "true");
  EXPECT_EQ(Text({}), "null");  // empty JSON value
}

TEST(JsonBinary, Integers) {
  EXPECT_EQ(Text(Scalar(0x05, {0x00, 0x80})), "-32768");
  EXPECT_EQ(Text(Scalar(0x06, {0xFF, 0xFF})), "65535");
  EXPECT_EQ(Text(Scalar(0x07, {0x00, 0x00, 0x00, 0x80})), "-2147483648");
  EXPECT_EQ(Text(Scalar(0x08, {0xFF, 0xFF, 0xFF, 0xFF})), "4294967295");
  EXPECT_EQ(Text(Scalar(0x09, {0, 0, 0, 0, 0, 0, 0, 0x80})), "-9223372036854775808");
  EXPECT_EQ(Text(Scalar(0x0A, {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF})),
            "18446744073709551615");
}

TEST(JsonBinary, Doubles) {
  EXPECT_EQ(Text(DoubleDoc(2.5)), "2.5");
  EXPECT_EQ(Text(DoubleDoc(1.0)), "1.0");
  EXPECT_EQ(Text(DoubleDoc(0.1)), "0.1");
  EXPECT_EQ(Text(DoubleDoc(1e15)), "1e15");
  EXPECT_EQ(Text(DoubleDoc(1e14)), "100000000000000.0");
  EXPECT_EQ(Text(DoubleDoc(1e-7)), "0.0000001");
  EXPECT_EQ(Text(DoubleDoc(0.0001)), "0.0001");
  EXPECT_EQ(Text(DoubleDoc(1e-14)), "0.00000000000001");
  EXPECT_EQ(Text(DoubleDoc(1e-15)), "0.000000000000001");
  EXPECT_EQ(Text(DoubleDoc(1e-16)), "1e-16");
  EXPECT_EQ(Text(DoubleDoc(1.5e-20)), "1.5e-20");
  EXPECT_EQ(Text(DoubleDoc(-0.0)), "-0.0");
  EXPECT_EQ(Text(DoubleDoc(123456789012345678.0)), "1.2345678901234568e17");
  EXPECT_EQ(Text(DoubleDoc(-1.5e300)), "-1.5e300");
}

TEST(JsonBinary, StringsAreEscapedLikeMysql) {
  // "a\"<LF><0x01>\<TAB>é😀"
  Bytes doc = {0x0C, 0x0D, 'a', '"', '\n', 0x01, '\\', '\t', 0xC3, 0xA9, 0xF0, 0x9F, 0x98, 0x80, 0x1F};
  EXPECT_EQ(Text(doc), "\"a\\\"\\n\\u0001\\\\\\t\xC3\xA9\xF0\x9F\x98\x80\\u001f\"");
}

TEST(JsonBinary, LargeObjectInlinesInt32) {
  Bytes doc = {0x01, 0x01, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,  // 1 member, 20 bytes
               0x13, 0x00, 0x00, 0x00, 0x01, 0x00,                    // key at 19, len 1
               0x07, 0x70, 0x11, 0x01, 0x00,                          // int32 70000 inlined
               'k'};
  EXPECT_EQ(Text(doc), R"({"k": 70000})");
}

TEST(JsonBinary, Opaque) {
  // CAST(1234567890.1234 AS JSON) inside a document: DECIMAL(14,4).
  EXPECT_EQ(Text({0x0F, 0xF6, 0x09, 0x0E, 0x04, 0x81, 0x0D, 0xFB, 0x38, 0xD2, 0x04, 0xD2}),
            "1234567890.1234");
  // CAST(TIMESTAMP'2015-01-15 23:24:25.5' AS JSON): DATETIME packed.
  EXPECT_EQ(Text({0x0F, 0x0C, 0x08, 0x20, 0xA1, 0x07, 0x19, 0x76, 0x1F, 0x95, 0x19}),
            "\"2015-01-15 23:24:25.500000\"");
  EXPECT_EQ(Text({0x0F, 0x0A, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1E, 0x95, 0x19}),
            "\"2015-01-15\"");
  EXPECT_EQ(Text({0x0F, 0x0B, 0x08, 0x0C, 0xFE, 0xFF, 0x47, 0x37, 0xFF, 0xFF, 0xFF}),
            "\"-12:34:56.000500\"");
  EXPECT_EQ(Text({0x0F, 0xFC, 0x03, 0x01, 0x02, 0x03}), "\"base64:type252:AQID\"");
  EXPECT_EQ(Text({0x0F, 0xFD, 0x02, 'h', 'i'}), "\"hi\"");
  // 60 bytes -> 80 base64 characters, a newline after the 76th.
  Bytes big = {0x0F, 0x10, 60};
  big.insert(big.end(), 60, 0xFF);
  std::string want = "\"base64:type16:" + std::string(76, '/') + "\\n////\"";
  EXPECT_EQ(Text(big), want);
}

TEST(JsonBinary, CorruptInputIsAnError) {
  const Bytes bad[] = {
      {0x0C, 0x05, 'a'},                          // string shorter than its length
      {0x0D},                                     // unknown type
      {0x04, 0x07},                               // unknown literal
      {0x00, 0x02, 0x00, 0xFF, 0x00},             // size beyond the document
      {0x02, 0x01, 0x00, 0x07, 0x00, 0x0C, 0x50, 0x00},  // value offset out of bounds
      {0x0C, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},  // varlen longer than 5 bytes
      {0x05, 0x01},                               // truncated int16
  };
  for (const Bytes& b : bad) {
    auto r = JsonBinaryToText(b);
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << (r.ok() ? *r : "");
  }
  // 200 nested arrays: [[[...]]] exceeds the depth limit.
  Bytes deep = {0x02};
  const int n = 200;
  for (int i = 0; i < n - 1; ++i) {
    int size = 7 * (n - i);  // each level: count, size, one entry pointing at offset 7
    deep.insert(deep.end(), {0x01, 0x00, static_cast<uint8_t>(size & 0xFF),
                             static_cast<uint8_t>(size >> 8), 0x02, 0x07, 0x00});
  }
  deep.insert(deep.end(), {0x01, 0x00, 0x07, 0x00, 0x04, 0x00, 0x00});  // innermost: [null]
  EXPECT_EQ(JsonBinaryToText(deep).status().code(), StatusCode::kCorruption);
}

TEST(JsonBinary, Base64) {
  EXPECT_EQ(MysqlBase64(Bytes{}), "");
  EXPECT_EQ(MysqlBase64(Bytes{'a'}), "YQ==");
  EXPECT_EQ(MysqlBase64(Bytes{'a', 'b'}), "YWI=");
  EXPECT_EQ(MysqlBase64(Bytes{'a', 'b', 'c'}), "YWJj");
  EXPECT_EQ(MysqlBase64(Bytes(57, 0)), std::string(76, 'A'));  // exactly one line, no newline
}

}  // namespace
}  // namespace sluice::binlog
