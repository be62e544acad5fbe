#include "util/log.h"

#include <atomic>
#include <chrono>
#include <ctime>
#include <mutex>

#include "util/utf8.h"

namespace sluice {
namespace {
std::atomic<LogLevel> g_level{LogLevel::kInfo};
std::atomic<bool> g_json{false};
std::atomic<bool> g_timestamps{false};
std::mutex g_mu;
std::string g_display;  // guarded by g_mu: the block on screen, "" when none
std::atomic<bool> g_display_active{false};

// A JSON string's contents for `s`, whatever bytes it holds: a message may quote bytes from
// the source (a binary key, a name); a byte that is not part of a valid UTF-8 sequence becomes
// the text \xNN (as PrintableText writes it), so the line stays valid UTF-8 and valid JSON.
std::string JsonEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t n = Utf8SequenceAt(s, i);
      if (n == 0) {
        out += fmt::format("\\\\x{:02x}", c);
        ++i;
      } else {
        out.append(s, i, n);
        i += n;
      }
      continue;
    }
    ++i;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += static_cast<char>(c);
    }
  }
  return out;
}

std::string NowUtc() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

// The escape sequences that take the cursor from the end of the block on screen back to the
// start of its first line, erasing it.
std::string EraseDisplay(const std::string& block) {
  if (block.empty()) return "";
  std::string out = "\r\033[K";
  for (char c : block)
    if (c == '\n') out += "\033[A\033[K";
  return out;
}

void Write(const std::string& line) {
  std::lock_guard lock(g_mu);
  std::string out = EraseDisplay(g_display) + line + g_display;
  std::fputs(out.c_str(), stderr);
  if (!g_display.empty()) std::fflush(stderr);
}

}  // namespace

void SetLogLevel(LogLevel level) { g_level = level; }
void SetLogJson(bool json) { g_json = json; }
void SetLogTimestamps(bool on) { g_timestamps = on; }

void LogLine(LogLevel level, const std::string& text) {
  if (level < g_level.load()) return;
  const char* name = level == LogLevel::kDebug     ? "debug"
                     : level == LogLevel::kInfo    ? "info"
                     : level == LogLevel::kWarning ? "warning"
                                                   : "error";
  if (g_json.load()) {
    Write(fmt::format("{{\"time\":\"{}\",\"level\":\"{}\",\"msg\":\"{}\"}}\n", NowUtc(), name, JsonEscape(text)));
  } else {
    // One message, one line: a name or a server's error text in it cannot start a line that
    // poses as sluice's own, nor move the cursor (EscapeControls).
    // A run streams for weeks: each line says when (UTC, as the JSON form's "time").
    if (g_timestamps.load()) Write(fmt::format("{} sluice: {}: {}\n", NowUtc(), name, EscapeControls(text)));
    else Write(fmt::format("sluice: {}: {}\n", name, EscapeControls(text)));
  }
}

void LogStatusLine(const std::string& text) {
  if (g_display_active.load()) return;
  LogLine(LogLevel::kInfo, text);
}

void SetStatusDisplay(const std::string& lines) {
  // The block's own line breaks are kept; what each line quotes (table names) is escaped.
  std::string block;
  for (size_t at = 0; at <= lines.size();) {
    size_t nl = lines.find('\n', at);
    if (nl == std::string::npos) nl = lines.size();
    if (at > 0) block += '\n';
    block += EscapeControls(std::string_view(lines).substr(at, nl - at));
    at = nl + 1;
  }
  std::lock_guard lock(g_mu);
  std::string out = EraseDisplay(g_display) + block;
  g_display = block;
  g_display_active = !block.empty();
  std::fputs(out.c_str(), stderr);
  std::fflush(stderr);
}

bool StatusDisplayActive() { return g_display_active.load(); }

}  // namespace sluice
