// Logging to stderr: one line per message, "sluice: <level>: <text>" (after
// SetLogTimestamps(true), preceded by the UTC time: "2026-12-01T10:00:00.123Z sluice: ..."), or with
// SetLogJson(true) one JSON object per line: {"time":"2026-12-01T10:00:00.123Z",
// "level":"info","msg":"..."}. A text line holds no control character: newline, CR, ESC and
// the others in a message (a server's error text, a table name) are written as \xNN
// (EscapeControls, util/utf8.h), so no message can forge a line or move the cursor; the JSON
// form escapes them as JSON does. Messages must never contain passwords
// (ConnectOptions::Describe and Status messages are password-free).
// Status lines (LogStatus: periodic progress) are info lines that are left out while a live
// status display is shown (SetStatusDisplay): the display shows the same, updated in place.
// The display is a block of lines kept below the log on a terminal; a log line is printed
// above it (the block is erased and drawn again).
// Thread safety: every function; each line is written with one fputs under a mutex, so
// lines do not interleave.
#pragma once

#include <cstdio>
#include <string>

#include <fmt/format.h>

namespace sluice {

enum class LogLevel { kDebug, kInfo, kWarning, kError };
void SetLogLevel(LogLevel level);
void SetLogJson(bool json);
void SetLogTimestamps(bool on);  // text lines only; off until set (`sluice run` sets log.timestamps)
void LogLine(LogLevel level, const std::string& text);
// An info line that a live display replaces.
void LogStatusLine(const std::string& text);
// Shows `block` (lines separated by '\n', no trailing newline; other control characters in
// a line are escaped as in a log line) below the log, replacing the previous block; "" removes it. Only for a terminal on stderr (the caller decides).
void SetStatusDisplay(const std::string& block);
bool StatusDisplayActive();

template <typename... Args>
void LogInfo(fmt::format_string<Args...> f, Args&&... args) {
  LogLine(LogLevel::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void LogStatus(fmt::format_string<Args...> f, Args&&... args) {
  LogStatusLine(fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void LogWarning(fmt::format_string<Args...> f, Args&&... args) {
  LogLine(LogLevel::kWarning, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void LogError(fmt::format_string<Args...> f, Args&&... args) {
  LogLine(LogLevel::kError, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace sluice
