// For the streaming parsers that look for tags (<think>, <tool_call>) in text arriving in pieces.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace xinfer::server {

// Length of the longest suffix of `s` that is a proper prefix of `tag`: a tag that may be split
// across deltas, held back until the next one tells.
inline size_t PartialTagSuffix(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

}  // namespace xinfer::server
