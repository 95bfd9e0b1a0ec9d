// Range-checked reading of a 32-bit integer from a parsed JSON value, for request fields (sampling
// parameters, token ids, priority) that clients may send as any JSON integer.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace xinfer {

// An integer JSON value (nlohmann::json or ordered_json) as int32; nullopt when it is not an
// integer or does not fit. get<int64_t>() alone wraps integers above 2^63
// (18446744073709551615 reads as -1), and get<int32_t>() anything above 2^31.
template <class Json>
std::optional<int32_t> JsonInt32(const Json& v) {
  if (!v.is_number_integer()) return std::nullopt;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.template get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) return std::nullopt;
    return static_cast<int32_t>(u);
  }
  const int64_t i = v.template get<int64_t>();
  if (i < std::numeric_limits<int32_t>::min() || i > std::numeric_limits<int32_t>::max())
    return std::nullopt;
  return static_cast<int32_t>(i);
}

}  // namespace xinfer
