#include "util/log.h"

#include <atomic>

namespace sluice {
namespace {
std::atomic<LogLevel> g_level{LogLevel::kInfo};
}

void SetLogLevel(LogLevel level) { g_level = level; }

void LogLine(LogLevel level, const std::string& text) {
  if (level < g_level.load()) return;
  const char* name = level == LogLevel::kDebug     ? "debug"
                     : level == LogLevel::kInfo    ? "info"
                     : level == LogLevel::kWarning ? "warning"
                                                   : "error";
  std::string line = fmt::format("sluice: {}: {}\n", name, text);
  std::fputs(line.c_str(), stderr);
}

}  // namespace sluice
