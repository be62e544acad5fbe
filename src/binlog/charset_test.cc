// Collation table and conversion to UTF-8 (glibc iconv for the non-trivial charsets).
#include "binlog/charset.h"

#include <gtest/gtest.h>

namespace sluice::binlog {
namespace {

TEST(Charset, CollationIds) {
  EXPECT_EQ(CharsetForCollation(63), "binary");
  EXPECT_EQ(CharsetForCollation(8), "latin1");       // latin1_swedish_ci
  EXPECT_EQ(CharsetForCollation(33), "utf8mb3");     // utf8mb3_general_ci
  EXPECT_EQ(CharsetForCollation(45), "utf8mb4");     // utf8mb4_general_ci
  EXPECT_EQ(CharsetForCollation(46), "utf8mb4");     // utf8mb4_bin (MariaDB JSON)
  EXPECT_EQ(CharsetForCollation(224), "utf8mb4");    // utf8mb4_unicode_ci
  EXPECT_EQ(CharsetForCollation(255), "utf8mb4");    // MySQL utf8mb4_0900_ai_ci
  EXPECT_EQ(CharsetForCollation(323), "utf8mb4");    // MySQL utf8mb4_0900 last
  EXPECT_EQ(CharsetForCollation(76), "utf8mb3");     // MySQL utf8mb3_tolower_ci
  EXPECT_EQ(CharsetForCollation(248), "gb18030");    // MySQL gb18030_chinese_ci
  EXPECT_EQ(CharsetForCollation(1057), "utf8mb3");   // MariaDB utf8mb3_general_nopad_ci
  EXPECT_EQ(CharsetForCollation(2048), "");
  EXPECT_EQ(CharsetForCollation(0), "");
}

TEST(Charset, Utf8ValidatedOnly) {
  EXPECT_EQ(*ToUtf8("utf8mb4", "a\xF0\x9F\x98\x80"), "a\xF0\x9F\x98\x80");
  EXPECT_EQ(ToUtf8("utf8mb4", "\xC3").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ToUtf8("utf8mb3", "\xED\xA0\x80").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ToUtf8("utf8mb4", "\xC0\x80").status().code(), StatusCode::kCorruption);
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));
  EXPECT_TRUE(IsValidUtf8(""));
}

TEST(Charset, BinaryIsUnchanged) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  EXPECT_EQ(*ToUtf8("binary", all), all);
}

TEST(Charset, Latin1IsMysqlCp1252) {
  EXPECT_EQ(*ToUtf8("latin1", "\x80\x81\x8D\x9F\xA0\xE9\xFF"),
            "\xE2\x82\xAC\xC2\x81\xC2\x8D\xC5\xB8\xC2\xA0\xC3\xA9\xC3\xBF");
  std::string high;
  for (int i = 0x80; i < 0x100; ++i) high.push_back(static_cast<char>(i));
  auto u = ToUtf8("latin1", high);
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(IsValidUtf8(*u));
}

TEST(Charset, IconvCharsets) {
  EXPECT_EQ(*ToUtf8("utf16", std::string("\x00\x41\xD8\x3D\xDE\x00", 6)), "A\xF0\x9F\x98\x80");
  EXPECT_EQ(*ToUtf8("utf16le", std::string("\x41\x00", 2)), "A");
  EXPECT_EQ(*ToUtf8("utf32", std::string("\x00\x01\xF6\x00", 4)), "\xF0\x9F\x98\x80");
  EXPECT_EQ(*ToUtf8("ucs2", std::string("\x00\xE9", 2)), "\xC3\xA9");
  EXPECT_EQ(*ToUtf8("cp1251", "\xC0"), "\xD0\x90");       // CYRILLIC CAPITAL A
  EXPECT_EQ(*ToUtf8("gbk", "\xC4\xE3"), "\xE4\xBD\xA0");  // 你
  EXPECT_EQ(*ToUtf8("sjis", "\x82\xA0"), "\xE3\x81\x82");  // あ
  EXPECT_EQ(*ToUtf8("latin2", "\xA1"), "\xC4\x84");        // Ą
  EXPECT_EQ(ToUtf8("utf16", std::string("\xD8\x3D", 2)).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ToUtf8("nosuchcs", "a").status().code(), StatusCode::kNotSupported);
}

// MariaDB's sjis (strings/ctype-sjis.c) keeps ASCII below 0x80 and maps 0x815F to '\\',
// where glibc's SHIFT_JIS gives U+00A5, U+203E and U+FF3C. The server wrote these bytes for
// '\\~' (found by tests/integration/differential_test.cc).
TEST(Charset, Keybcs2FromTable) {
  EXPECT_EQ(*ToUtf8("keybcs2", "a\x80\xFF"), "a\xC4\x8C\xC2\xA0");  // a Č NBSP
}

TEST(Charset, SjisIsMariadbSjis) {
  EXPECT_EQ(*ToUtf8("sjis", "\x5C\x7E"), "\\~");
  EXPECT_EQ(*ToUtf8("sjis", "\x81\x5F\x82\xA0\xB1\x81\x60"), "\\\xE3\x81\x82\xEF\xBD\xB1\xE3\x80\x9C");
  EXPECT_EQ(ToUtf8("sjis", "\x82").status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace sluice::binlog
