// Logging to stderr: one line per message, "sluice: <level>: <text>". Messages must never
// contain passwords (ConnectOptions::Describe and Status messages are password-free).
// Thread safety: each line is written with one fputs, so lines do not interleave.
#pragma once

#include <cstdio>
#include <string>

#include <fmt/format.h>

namespace sluice {

enum class LogLevel { kDebug, kInfo, kWarning, kError };
void SetLogLevel(LogLevel level);
void LogLine(LogLevel level, const std::string& text);

template <typename... Args>
void LogInfo(fmt::format_string<Args...> f, Args&&... args) {
  LogLine(LogLevel::kInfo, fmt::format(f, std::forward<Args>(args)...));
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
