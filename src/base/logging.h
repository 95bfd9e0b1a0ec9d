// Minimal leveled logging to stderr. The level is a process-wide setting chosen once at startup
// by the CLI (the one deliberate global: logging has no owner further down the stack).
// Thread-safe: each line is written with a single fwrite.
#pragma once

#include <string_view>

#include <fmt/core.h>

namespace xinfer {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3, kOff = 4 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
void LogLine(LogLevel level, std::string_view message);

template <typename... Args>
void Log(LogLevel level, fmt::format_string<Args...> f, Args&&... args) {
  if (level < GetLogLevel()) return;
  LogLine(level, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace xinfer

#define XI_LOG_INFO(...) ::xinfer::Log(::xinfer::LogLevel::kInfo, __VA_ARGS__)
#define XI_LOG_WARN(...) ::xinfer::Log(::xinfer::LogLevel::kWarning, __VA_ARGS__)
#define XI_LOG_ERROR(...) ::xinfer::Log(::xinfer::LogLevel::kError, __VA_ARGS__)
#define XI_LOG_DEBUG(...) ::xinfer::Log(::xinfer::LogLevel::kDebug, __VA_ARGS__)
