// Small helpers shared by the CLI commands.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace xinfer {

// Prints "error: <message>" to stderr and returns 1 (the exit code of a failed command).
int ReportError(const Status& status);

// Parses "1,2, 3" into ids; InvalidArgument on anything else.
StatusOr<std::vector<int32_t>> ParseIdList(const std::string& text);

// The nesting a JSON input (a --input case or JSONL line) may have, as the server's request
// bodies: copying a json value (the chat template context does) recurses once per level, and an
// input nested 200,000 deep overflowed the stack.
constexpr int kMaxInputJsonDepth = 512;

// `text` as JSON (key order kept); InvalidArgument when it is not valid JSON or nests deeper than
// kMaxInputJsonDepth.
StatusOr<nlohmann::ordered_json> ParseInputJson(std::string_view text);

}  // namespace xinfer
