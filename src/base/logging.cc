#include "base/logging.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>

namespace xinfer {
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};

const char* LevelTag(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "D";
    case LogLevel::kInfo: return "I";
    case LogLevel::kWarning: return "W";
    case LogLevel::kError: return "E";
    case LogLevel::kOff: return "-";
  }
  return "?";
}
}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

void LogLine(LogLevel level, std::string_view message) {
  using Clock = std::chrono::system_clock;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                Clock::now().time_since_epoch()).count();
  std::string line = fmt::format("[xinfer {} {}.{:03d}] {}\n", LevelTag(level), ms / 1000,
                                 static_cast<int>(ms % 1000), message);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace xinfer
