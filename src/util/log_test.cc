#include "util/log.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "util/utf8.h"

namespace sluice {
namespace {

// What LogLine writes to stderr for `text`, captured through a temporary file.
std::string Logged(LogLevel level, const std::string& text) {
  std::fflush(stderr);
  const int saved = dup(2);
  std::FILE* tmp = std::tmpfile();
  dup2(fileno(tmp), 2);
  LogLine(level, text);
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

}  // namespace
}  // namespace sluice
