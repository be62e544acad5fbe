#include "util/utf8.h"

#include <gtest/gtest.h>

namespace sluice {
namespace {

TEST(Utf8, ValidTextIsUnchanged) {
  for (std::string_view s : {"", "abc", "gr\xC3\xBC\xC3\x9F" "e", "\xE2\x82\xAC", "\xF0\x9F\x98\x80",
                             "\xF4\x8F\xBF\xBF"}) {
    EXPECT_TRUE(IsValidUtf8(s)) << s;
    EXPECT_EQ(EscapeInvalidUtf8(s), s);
  }
}

TEST(Utf8, InvalidBytesAreEscaped) {
  EXPECT_EQ(EscapeInvalidUtf8("a\xFF" "b"), "a\\xFFb");
  EXPECT_EQ(EscapeInvalidUtf8("\xC0\xAF"), "\\xC0\\xAF");               // overlong
  EXPECT_EQ(EscapeInvalidUtf8("\xED\xA0\x80"), "\\xED\\xA0\\x80");      // surrogate
  EXPECT_EQ(EscapeInvalidUtf8("\xF4\x90\x80\x80"), "\\xF4\\x90\\x80\\x80");  // > U+10FFFF
  EXPECT_EQ(EscapeInvalidUtf8("x\xE2\x82"), "x\\xE2\\x82");             // truncated
  EXPECT_EQ(EscapeInvalidUtf8("\x80\xC3\xA9"), "\\x80\xC3\xA9");
  EXPECT_FALSE(IsValidUtf8("\xFE"));
  EXPECT_TRUE(IsValidUtf8(EscapeInvalidUtf8("\xFE\xFF\xC3")));
}

}  // namespace
}  // namespace sluice
