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

// Text for a report or log line: printable UTF-8 kept, control characters, DEL, invalid
// bytes as \xNN, backslashes doubled; the result is valid UTF-8 with no control character.
TEST(Utf8, PrintableText) {
  EXPECT_EQ(PrintableText("plain €ü"), "plain €ü");
  EXPECT_EQ(PrintableText(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(PrintableText("line\nnext\t\x7f"), "line\\x0anext\\x09\\x7f");
  EXPECT_EQ(PrintableText("back\\slash"), "back\\\\slash");
  EXPECT_EQ(PrintableText("\xff\xfe" "ok"), "\\xff\\xfeok");
  EXPECT_EQ(PrintableText("\xC0\xAF"), "\\xc0\\xaf");  // overlong: not UTF-8
  EXPECT_EQ(PrintableText("\xE2\x82"), "\\xe2\\x82");  // truncated
  const std::string all = [] {
    std::string s;
    for (int b = 0; b < 256; ++b) s.push_back(static_cast<char>(b));
    return s;
  }();
  const std::string p = PrintableText(all);
  EXPECT_TRUE(IsValidUtf8(p));
  for (unsigned char c : p) EXPECT_FALSE(c < 0x20 || c == 0x7f) << static_cast<int>(c);
}

// Text for one line of a log or a report: every control character (C0 with tab, newline and
// CR, DEL, and the C1 range U+0080..U+009F, which some terminals obey as ESC sequences) and
// every invalid byte as \xNN; backslashes and valid printable UTF-8 as they are, so a message
// that only quotes paths or names reads unchanged.
TEST(Utf8, EscapeControlsLeavesNoControlCharacter) {
  EXPECT_EQ(EscapeControls("plain \xE2\x82\xAC a\\b"), "plain \xE2\x82\xAC a\\b");
  EXPECT_EQ(EscapeControls(std::string_view("x\ny\rz\x1b[2J\t\x7f\0e", 13)), "x\\x0ay\\x0dz\\x1b[2J\\x09\\x7f\\x00e");
  EXPECT_EQ(EscapeControls("\xC2\x9B" "31m"), "\\xc2\\x9b31m");  // C1 CSI
  EXPECT_EQ(EscapeControls("\xC2\xA0"), "\xC2\xA0");                 // U+00A0 is printable
  EXPECT_EQ(EscapeControls("a\xFF"), "a\\xff");
}

}  // namespace
}  // namespace sluice
