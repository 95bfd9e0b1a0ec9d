#include "base/logging.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace xinfer {
namespace {
// XINFER_LOG_LEVEL=debug|info|warning|error|off sets the initial level (tests quiet the log).
int InitialLevel() {
  const char* env = std::getenv("XINFER_LOG_LEVEL");
  if (env == nullptr) return static_cast<int>(LogLevel::kInfo);
  const std::string v = env;
  if (v == "debug") return static_cast<int>(LogLevel::kDebug);
  if (v == "warning") return static_cast<int>(LogLevel::kWarning);
  if (v == "error") return static_cast<int>(LogLevel::kError);
  if (v == "off") return static_cast<int>(LogLevel::kOff);
  return static_cast<int>(LogLevel::kInfo);
}

std::atomic<int> g_level{InitialLevel()};

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
