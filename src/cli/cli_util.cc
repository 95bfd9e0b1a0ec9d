#include "cli/cli_util.h"

#include <cstdio>
#include <cstdlib>

#include "base/json_depth.h"

namespace xinfer {

int ReportError(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  return 1;
}

StatusOr<std::vector<int32_t>> ParseIdList(const std::string& text) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b == std::string::npos) return InvalidArgument("--prompt-ids: empty entry in '{}'", text);
    item = item.substr(b, e - b + 1);
    char* end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v > INT32_MAX)
      return InvalidArgument("--prompt-ids: '{}' is not a token id", item);
    ids.push_back(static_cast<int32_t>(v));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return ids;
}

StatusOr<nlohmann::ordered_json> ParseInputJson(std::string_view text) {
  using json = nlohmann::ordered_json;
  bool too_deep = false;
  json j = ParseJsonNoDeeperThan<json>(text, kMaxInputJsonDepth, &too_deep);
  if (too_deep) return InvalidArgument("nested more than {} levels deep", kMaxInputJsonDepth);
  if (j.is_discarded()) return InvalidArgument("not valid JSON");
  return j;
}

}  // namespace xinfer
