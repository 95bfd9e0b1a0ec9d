// Element types of tensors and the scalar conversions between them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "base/status.h"

namespace xinfer {

enum class DType : uint8_t { kF32, kF16, kBF16, kI32, kI64, kI8, kU8 };

size_t DTypeSize(DType dtype);
const char* DTypeName(DType dtype);  // "F32", "BF16", ... (safetensors spelling)
StatusOr<DType> ParseDType(std::string_view name);

inline float Bf16ToF32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Round-to-nearest-even, as PyTorch does; NaN stays NaN.
inline uint16_t F32ToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float F16ToF32(uint16_t h);
uint16_t F32ToF16(float f);

}  // namespace xinfer
