// Read-only scans over vocab-sized float arrays, written with GCC/Clang vector extensions: plain
// C++ that compiles to SSE2 on x86-64's baseline and to NEON on ARM64, so a sampling step over a
// 152K vocabulary costs microseconds without a SIMD library or run-time dispatch here. (The
// scalar loops they replace took ~50-100 us each per sequence and step: a one-branch-per-logit
// loop does not vectorize.) Header-only, pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstring>
#include <limits>
#include <span>

namespace xinfer::scan {

using F32x4 = float __attribute__((vector_size(16)));
using I32x4 = int __attribute__((vector_size(16)));

inline F32x4 Load4(const float* p) {
  F32x4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

inline bool AnyLane(I32x4 mask) { return (mask[0] | mask[1] | mask[2] | mask[3]) != 0; }

// The largest value, ignoring NaN (x > m is false for it); -inf for an empty or all-NaN span.
inline float Max(std::span<const float> v) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  F32x4 m[4];
  for (F32x4& a : m) a = F32x4{kNegInf, kNegInf, kNegInf, kNegInf};
  size_t i = 0;
  for (; i + 16 <= v.size(); i += 16) {
    for (int j = 0; j < 4; ++j) {
      const F32x4 x = Load4(v.data() + i + 4 * j);
      m[j] = x > m[j] ? x : m[j];
    }
  }
  float best = kNegInf;
  for (const F32x4& a : m)
    for (int q = 0; q < 4; ++q) best = a[q] > best ? a[q] : best;
  for (; i < v.size(); ++i) best = v[i] > best ? v[i] : best;
  return best;
}

// Whether any value is NaN.
inline bool AnyNaN(std::span<const float> v) {
  I32x4 any = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 16 <= v.size(); i += 16) {
    for (int j = 0; j < 4; ++j) {
      const F32x4 x = Load4(v.data() + i + 4 * j);
      any |= x != x;
    }
  }
  bool found = AnyLane(any);
  for (; i < v.size(); ++i) found |= v[i] != v[i];
  return found;
}

// The first index at or after `from` whose value is > threshold (never NaN), or v.size().
inline size_t FirstAbove(std::span<const float> v, size_t from, float threshold) {
  const F32x4 t = {threshold, threshold, threshold, threshold};
  size_t i = from;
  for (; i + 16 <= v.size(); i += 16) {
    I32x4 hit = Load4(v.data() + i) > t;
    for (int j = 1; j < 4; ++j) hit |= Load4(v.data() + i + 4 * j) > t;
    if (AnyLane(hit)) break;
  }
  for (; i < v.size(); ++i)
    if (v[i] > threshold) return i;
  return v.size();
}

}  // namespace xinfer::scan
