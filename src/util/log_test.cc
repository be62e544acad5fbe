#include "util/log.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "util/utf8.h"

namespace sluice {
namespace {

// What `write` writes to stderr, captured through a temporary file.
template <typename F>
std::string Captured(F write) {
  std::fflush(stderr);
  const int saved = dup(2);
  std::FILE* tmp = std::tmpfile();
  dup2(fileno(tmp), 2);
  write();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::string out;
  std::rewind(tmp);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, tmp)) > 0;) out.append(buf, n);
  std::fclose(tmp);
  return out;
}

// What LogLine writes to stderr for `text`.
std::string Logged(LogLevel level, const std::string& text) {
  return Captured([&] { LogLine(level, text); });
}

// A JSON log line stays valid UTF-8 and valid JSON whatever bytes the message holds (a binary
// key quoted raw, a name from the source): control characters as \u00NN, bytes that are not
// UTF-8 as the text \xNN (its backslash escaped), valid UTF-8 unchanged.
TEST(Log, JsonLinesAreValidWhateverTheMessageHolds) {
  SetLogJson(true);
  static const char kMessage[] = "key (\0\xff\xc3\xa9\"\\\n\x7f)";
  const std::string line = Logged(LogLevel::kWarning, std::string(kMessage, sizeof kMessage - 1));
  SetLogJson(false);
  EXPECT_TRUE(IsValidUtf8(line)) << line;
  const size_t msg = line.find("\"msg\":\"");
  ASSERT_NE(msg, std::string::npos) << line;
  EXPECT_EQ(line.substr(msg), "\"msg\":\"key (\\u0000\\\\xff\xc3\xa9\\\"\\\\\\n\x7f)\"}\n") << line;
  EXPECT_NE(line.find("\"level\":\"warning\""), std::string::npos) << line;
}

TEST(Log, TextLinesKeepTheMessage) {
  EXPECT_EQ(Logged(LogLevel::kInfo, "hello"), "sluice: info: hello\n");
}

// A run's text line begins with the UTC time, as the JSON form's "time" (an operator reading a
// week's log could not tell when anything happened; a new user's probe).
TEST(Log, TextLinesBeginWithTheTimeWhenAsked) {
  SetLogTimestamps(true);
  const std::string line = Logged(LogLevel::kWarning, "hello");
  SetLogTimestamps(false);
  ASSERT_EQ(line.size(), 24 + std::string(" sluice: warning: hello\n").size()) << line;
  EXPECT_EQ(line.substr(24), " sluice: warning: hello\n") << line;
  EXPECT_EQ(line[4], '-');
  EXPECT_EQ(line[10], 'T');
  EXPECT_EQ(line[23], 'Z');
}

// A message quotes what others wrote: a server's error text (sent before any login), a table
// name anyone with CREATE in a captured database chose. Its newline, CR and ESC sequences once
// reached the log raw, so a name forged a whole "sluice: error: FAKE" line, in red, and
// "\e[2J" cleared the screen (probe7 F7). No message is meant to span lines: each is one line,
// its control characters as \xNN, valid UTF-8 and backslashes as they are.
TEST(Log, TextLinesCannotForgeALineOrMoveTheCursor) {
  EXPECT_EQ(Logged(LogLevel::kInfo, "snapshot: x\nsluice: error: FAKE \x1b[31mRED\x1b[0m\r counted 1 rows"),
            "sluice: info: snapshot: x\\x0asluice: error: FAKE \\x1b[31mRED\\x1b[0m\\x0d counted 1 rows\n");
  EXPECT_EQ(Logged(LogLevel::kWarning, "path C:\\dir caf\xC3\xA9 \xFF\t."),
            "sluice: warning: path C:\\dir caf\xC3\xA9 \\xff\\x09.\n");
}

// The live display is several lines by design (one per table being copied), but a table name
// in it is not: its control characters are escaped line by line, and the display's own line
// breaks kept.
TEST(Log, StatusDisplayEscapesEachOfItsLines) {
  const std::string shown = Captured([] { SetStatusDisplay("snapshot: 1 of 2\n  a\x1b[2J\rb 1 of 1"); });
  EXPECT_EQ(shown, "snapshot: 1 of 2\n  a\\x1b[2J\\x0db 1 of 1");
  Captured([] { SetStatusDisplay(""); });
  EXPECT_FALSE(StatusDisplayActive());
}

}  // namespace
}  // namespace sluice
