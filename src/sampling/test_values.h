// Float values the sampling tests feed into logits: one definition, so the test files can share a
// (unity-build) translation unit.
#pragma once

#include <limits>

namespace xinfer::testing {

inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

}  // namespace xinfer::testing
