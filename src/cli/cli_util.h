// Small helpers shared by the CLI commands.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace xinfer {

// Prints "error: <message>" to stderr and returns 1 (the exit code of a failed command).
int ReportError(const Status& status);

// Parses "1,2, 3" into ids; InvalidArgument on anything else.
StatusOr<std::vector<int32_t>> ParseIdList(const std::string& text);

}  // namespace xinfer
