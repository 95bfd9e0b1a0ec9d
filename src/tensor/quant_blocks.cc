#include "tensor/quant_blocks.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "tensor/dtype.h"

namespace xinfer {
namespace {

uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);  // GGUF is little-endian, as is every host we build for
  return v;
}
void StoreU16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// --- Q8_0: f16 d | int8 q[32] ---------------------------------------------------------------
void DequantQ8_0(const uint8_t* b, float* y) {
  const float d = F16ToF32(LoadU16(b));
  const int8_t* q = reinterpret_cast<const int8_t*>(b + 2);
  for (int i = 0; i < 32; ++i) y[i] = d * static_cast<float>(q[i]);
}

void QuantQ8_0(const float* x, uint8_t* b) {
  float amax = 0.f;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.f;
  const float id = d != 0.f ? 1.f / d : 0.f;
  StoreU16(b, F32ToF16(d));
  int8_t* q = reinterpret_cast<int8_t*>(b + 2);
  for (int i = 0; i < 32; ++i) q[i] = static_cast<int8_t>(std::lround(x[i] * id));
}

// --- Q4_0: f16 d | u8 q[16]; element i < 16 in the low nibble of q[i], 16 + i in the high -----
void DequantQ4_0(const uint8_t* b, float* y) {
  const float d = F16ToF32(LoadU16(b));
  const uint8_t* q = b + 2;
  for (int i = 0; i < 16; ++i) {
    y[i] = d * static_cast<float>((q[i] & 0xF) - 8);
    y[i + 16] = d * static_cast<float>((q[i] >> 4) - 8);
  }
}

// The scale of a 32-element block of a symmetric format whose codes span [-levels, levels - 1]:
// the value of largest magnitude maps to -levels, so the full range is used on one side. Stores
// the scale as F16 at `b` and returns 1 / scale (0 for an all-zero block).
float StoreSymmetricScale32(const float* x, float levels, uint8_t* b) {
  float amax = 0.f, max = 0.f;
  for (int i = 0; i < 32; ++i)
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
  const float d = max / -levels;
  StoreU16(b, F32ToF16(d));
  return d != 0.f ? 1.f / d : 0.f;
}

void QuantQ4_0(const float* x, uint8_t* b) {
  const float id = StoreSymmetricScale32(x, 8.f, b);
  uint8_t* q = b + 2;
  for (int i = 0; i < 16; ++i) {
    const int lo = std::clamp(static_cast<int>(std::floor(x[i] * id + 8.5f)), 0, 15);
    const int hi = std::clamp(static_cast<int>(std::floor(x[i + 16] * id + 8.5f)), 0, 15);
    q[i] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

// --- Q5_0: f16 d | u8 qh[4] | u8 q[16]; the low 4 bits of elements i and 16 + i as in Q4_0, their
// 5th bits in bits i and 16 + i of the little-endian qh -----------------------------------------
void DequantQ5_0(const uint8_t* b, float* y) {
  const float d = F16ToF32(LoadU16(b));
  uint32_t qh;
  std::memcpy(&qh, b + 2, 4);
  const uint8_t* q = b + 6;
  for (int i = 0; i < 16; ++i) {
    const int lo = (q[i] & 0xF) | static_cast<int>(((qh >> i) & 1) << 4);
    const int hi = (q[i] >> 4) | static_cast<int>(((qh >> (i + 16)) & 1) << 4);
    y[i] = d * static_cast<float>(lo - 16);
    y[i + 16] = d * static_cast<float>(hi - 16);
  }
}

void QuantQ5_0(const float* x, uint8_t* b) {
  const float id = StoreSymmetricScale32(x, 16.f, b);
  uint32_t qh = 0;
  uint8_t* q = b + 6;
  for (int i = 0; i < 16; ++i) {
    const int lo = std::clamp(static_cast<int>(std::floor(x[i] * id + 16.5f)), 0, 31);
    const int hi = std::clamp(static_cast<int>(std::floor(x[i + 16] * id + 16.5f)), 0, 31);
    q[i] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
    qh |= static_cast<uint32_t>(lo >> 4) << i;
    qh |= static_cast<uint32_t>(hi >> 4) << (i + 16);
  }
  std::memcpy(b + 2, &qh, 4);
}

// --- Q4_1: f16 d | f16 m | u8 q[16]; nibbles as Q4_0, x = d * q + m (q 0..15) -------------------
void DequantQ4_1(const uint8_t* b, float* y) {
  const float d = F16ToF32(LoadU16(b)), m = F16ToF32(LoadU16(b + 2));
  const uint8_t* q = b + 4;
  for (int i = 0; i < 16; ++i) {
    y[i] = d * static_cast<float>(q[i] & 0xF) + m;
    y[i + 16] = d * static_cast<float>(q[i] >> 4) + m;
  }
}

// The codes of a 32-element block of an asymmetric format (Q4_1, Q5_1): m is the smallest value,
// d = (max - m) / levels, both stored as F16 at `b` (d first); q = round((x - m) / d) in
// [0, levels], computed with the stored (F16-rounded) d and m. An all-equal block gets d = 0.
void StoreMinScale32(const float* x, int levels, uint8_t* b, int* q) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < 32; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  const uint16_t d16 = F32ToF16((hi - lo) / static_cast<float>(levels)), m16 = F32ToF16(lo);
  StoreU16(b, d16);
  StoreU16(b + 2, m16);
  const float d = F16ToF32(d16), m = F16ToF32(m16);
  const float id = d != 0.f ? 1.f / d : 0.f;
  for (int i = 0; i < 32; ++i)
    q[i] = std::clamp(static_cast<int>(std::lround((x[i] - m) * id)), 0, levels);
}

void QuantQ4_1(const float* x, uint8_t* b) {
  int c[32];
  StoreMinScale32(x, 15, b, c);
  uint8_t* q = b + 4;
  for (int i = 0; i < 16; ++i) q[i] = static_cast<uint8_t>(c[i] | (c[i + 16] << 4));
}

// --- Q5_1: f16 d | f16 m | u8 qh[4] | u8 q[16]; 5-bit codes as Q5_0, x = d * q + m (q 0..31) ----
void DequantQ5_1(const uint8_t* b, float* y) {
  const float d = F16ToF32(LoadU16(b)), m = F16ToF32(LoadU16(b + 2));
  uint32_t qh;
  std::memcpy(&qh, b + 4, 4);
  const uint8_t* q = b + 8;
  for (int i = 0; i < 16; ++i) {
    const int lo = (q[i] & 0xF) | static_cast<int>(((qh >> i) & 1) << 4);
    const int hi = (q[i] >> 4) | static_cast<int>(((qh >> (i + 16)) & 1) << 4);
    y[i] = d * static_cast<float>(lo) + m;
    y[i + 16] = d * static_cast<float>(hi) + m;
  }
}

void QuantQ5_1(const float* x, uint8_t* b) {
  int c[32];
  StoreMinScale32(x, 31, b, c);
  uint32_t qh = 0;
  uint8_t* q = b + 8;
  for (int i = 0; i < 16; ++i) {
    q[i] = static_cast<uint8_t>((c[i] & 0xF) | ((c[i + 16] & 0xF) << 4));
    qh |= static_cast<uint32_t>(c[i] >> 4) << i;
    qh |= static_cast<uint32_t>(c[i + 16] >> 4) << (i + 16);
  }
  std::memcpy(b + 4, &qh, 4);
}

}  // namespace

// --- Q4_K: f16 d | f16 dmin | u8 scales[12] | u8 q[128] ----------------------------------------
// Eight sub-blocks of 32 with a 6-bit scale and 6-bit min each: x = d * sc * q - dmin * m.
// scales[0..3] hold sc 0..3 (low 6 bits), scales[4..7] m 0..3; sub-blocks 4..7 keep their low 4
// bits in scales[8..11] (sc low, m high) and their top 2 bits in the top bits of scales[0..7].
void ScaleMinK4(int j, const uint8_t* s, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

namespace {

// The 256 values come in four chunks of 64: chunk c's first 32 are the low nibbles of
// q[32c .. 32c+31], its last 32 the high nibbles. Q5_K (qh != nullptr) adds a 5th bit to each:
// bit 2c of qh[l] for element l of the chunk's first 32, bit 2c + 1 for its last 32.
void DequantScaleMinK(const uint8_t* b, const uint8_t* qh, const uint8_t* q, float* y) {
  const float d = F16ToF32(LoadU16(b));
  const float dmin = F16ToF32(LoadU16(b + 2));
  const uint8_t* s = b + 4;
  for (int c = 0; c < 4; ++c) {
    int sc0, m0, sc1, m1;
    ScaleMinK4(2 * c, s, &sc0, &m0);
    ScaleMinK4(2 * c + 1, s, &sc1, &m1);
    const float d0 = d * sc0, dm0 = dmin * m0, d1 = d * sc1, dm1 = dmin * m1;
    for (int l = 0; l < 32; ++l) {
      int lo = q[32 * c + l] & 0xF, hi = q[32 * c + l] >> 4;
      if (qh != nullptr) {
        lo |= ((qh[l] >> (2 * c)) & 1) << 4;
        hi |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
      }
      y[64 * c + l] = d0 * static_cast<float>(lo) - dm0;
      y[64 * c + 32 + l] = d1 * static_cast<float>(hi) - dm1;
    }
  }
}

void DequantQ4_K(const uint8_t* b, float* y) { DequantScaleMinK(b, nullptr, b + 16, y); }

// The 6-bit scales and mins of a Q4_K / Q5_K block: sub-block j (32 values) gets
// x ~ d * sc[j] * q - dmin * m[j] with q in [0, levels]. Writes d, dmin and the 12 packed scale
// bytes at `b` and the 256 codes, in element order, to `q`.
void StoreScaleMinK(const float* x, int levels, uint8_t* b, uint8_t* q) {
  float scale[8], min[8];  // per sub-block: x ~ scale * q - min, q in [0, levels]
  float max_scale = 0.f, max_min = 0.f;
  for (int j = 0; j < 8; ++j) {
    float lo = 0.f, hi = 0.f;  // the min is clamped to <= 0, as the format's mins are >= 0
    for (int l = 0; l < 32; ++l) lo = std::min(lo, x[32 * j + l]), hi = std::max(hi, x[32 * j + l]);
    scale[j] = (hi - lo) / static_cast<float>(levels);
    min[j] = -lo;
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, min[j]);
  }
  const uint16_t d16 = F32ToF16(max_scale / 63.f), dmin16 = F32ToF16(max_min / 63.f);
  const float d = F16ToF32(d16), dmin = F16ToF32(dmin16);
  StoreU16(b, d16);
  StoreU16(b + 2, dmin16);
  uint8_t* s = b + 4;
  std::memset(s, 0, 12);
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = d > 0.f ? std::clamp(static_cast<int>(std::lround(scale[j] / d)), 0, 63) : 0;
    m[j] = dmin > 0.f ? std::clamp(static_cast<int>(std::lround(min[j] / dmin)), 0, 63) : 0;
    if (j < 4) {
      s[j] |= static_cast<uint8_t>(sc[j]);
      s[j + 4] |= static_cast<uint8_t>(m[j]);
    } else {
      s[j + 4] = static_cast<uint8_t>((sc[j] & 0xF) | ((m[j] & 0xF) << 4));
      s[j - 4] |= static_cast<uint8_t>((sc[j] >> 4) << 6);
      s[j] |= static_cast<uint8_t>((m[j] >> 4) << 6);
    }
  }
  for (int j = 0; j < 8; ++j) {
    const float dj = d * sc[j], mj = dmin * m[j];
    for (int l = 0; l < 32; ++l) {
      const float v = dj > 0.f ? (x[32 * j + l] + mj) / dj : 0.f;
      q[32 * j + l] = static_cast<uint8_t>(std::clamp(static_cast<int>(std::lround(v)), 0, levels));
    }
  }
}

void QuantQ4_K(const float* x, uint8_t* b) {
  uint8_t nib[256];
  StoreScaleMinK(x, 15, b, nib);
  uint8_t* q = b + 16;
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l)
      q[32 * c + l] = static_cast<uint8_t>(nib[64 * c + l] | (nib[64 * c + 32 + l] << 4));
}

// --- Q5_K: f16 d | f16 dmin | u8 scales[12] | u8 qh[32] | u8 q[128] ------------------------------
// Q4_K with 5-bit codes: x = d * sc * q - dmin * m, q 0..31 (layout in DequantScaleMinK).
void DequantQ5_K(const uint8_t* b, float* y) { DequantScaleMinK(b, b + 16, b + 48, y); }

void QuantQ5_K(const float* x, uint8_t* b) {
  uint8_t q5[256];
  StoreScaleMinK(x, 31, b, q5);
  uint8_t* qh = b + 16;
  uint8_t* q = b + 48;
  std::memset(qh, 0, 32);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      const int lo = q5[64 * c + l], hi = q5[64 * c + 32 + l];
      q[32 * c + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
    }
}

// --- Q6_K: u8 ql[128] | u8 qh[64] | int8 scales[16] | f16 d -----------------------------------
// x = d * scales[sub-block of 16] * (q - 32), q 6 bits. Two halves of 128; within a half, element
// r (0..127) has its low 4 bits in ql[r % 64] (low nibble for r < 64, high for r >= 64) and its
// top 2 bits in qh[r % 32] at bit 2 * (r / 32).
void DequantQ6_K(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = F16ToF32(LoadU16(b + 208));
  for (int h = 0; h < 2; ++h) {
    for (int r = 0; r < 128; ++r) {
      const int lo = r < 64 ? (ql[r] & 0xF) : (ql[r - 64] >> 4);
      const int hi = (qh[r % 32] >> (2 * (r / 32))) & 3;
      y[r] = d * sc[r / 16] * static_cast<float>((lo | (hi << 4)) - 32);
    }
    y += 128, ql += 64, qh += 32, sc += 8;
  }
}

void QuantQ6_K(const float* x, uint8_t* b) {
  float scale[16];
  float max_abs_scale = 0.f;
  for (int j = 0; j < 16; ++j) {
    float amax = 0.f;
    for (int l = 0; l < 16; ++l) amax = std::max(amax, std::fabs(x[16 * j + l]));
    scale[j] = amax / 31.f;  // q - 32 in [-31, 31]
    max_abs_scale = std::max(max_abs_scale, scale[j]);
  }
  const uint16_t d16 = F32ToF16(max_abs_scale / 127.f);
  const float d = F16ToF32(d16);
  uint8_t* ql = b;
  uint8_t* qh = b + 128;
  int8_t* sc = reinterpret_cast<int8_t*>(b + 192);
  std::memset(b, 0, 208);
  StoreU16(b + 208, d16);
  uint8_t q[256];
  for (int j = 0; j < 16; ++j) {
    const int s = d > 0.f ? std::clamp(static_cast<int>(std::lround(scale[j] / d)), -128, 127) : 0;
    sc[j] = static_cast<int8_t>(s);
    const float dj = d * s;
    for (int l = 0; l < 16; ++l) {
      const float v = dj != 0.f ? x[16 * j + l] / dj : 0.f;
      q[16 * j + l] =
          static_cast<uint8_t>(std::clamp(static_cast<int>(std::lround(v)), -32, 31) + 32);
    }
  }
  for (int h = 0; h < 2; ++h) {
    const uint8_t* qq = q + 128 * h;
    for (int r = 0; r < 128; ++r) {
      ql[64 * h + r % 64] |= static_cast<uint8_t>((qq[r] & 0xF) << (r < 64 ? 0 : 4));
      qh[32 * h + r % 32] |= static_cast<uint8_t>((qq[r] >> 4) << (2 * (r / 32)));
    }
  }
}

}  // namespace

void DequantizeBlocks(QuantType type, const uint8_t* src, int64_t n, float* dst) {
  const int64_t be = QuantBlockElems(type), bb = QuantBlockBytes(type);
  XI_CHECK(n % be == 0);
  void (*fn)(const uint8_t*, float*) = nullptr;
  switch (type) {
    case QuantType::kQ8_0:
      fn = DequantQ8_0;
      break;
    case QuantType::kQ4_0:
      fn = DequantQ4_0;
      break;
    case QuantType::kQ5_0:
      fn = DequantQ5_0;
      break;
    case QuantType::kQ4_1:
      fn = DequantQ4_1;
      break;
    case QuantType::kQ5_1:
      fn = DequantQ5_1;
      break;
    case QuantType::kQ4_K:
      fn = DequantQ4_K;
      break;
    case QuantType::kQ5_K:
      fn = DequantQ5_K;
      break;
    case QuantType::kQ6_K:
      fn = DequantQ6_K;
      break;
    case QuantType::kAwq4:
      XI_CHECK_MSG(false, "AWQ4 is not a block format");
      return;
  }
  for (int64_t i = 0; i < n / be; ++i) fn(src + i * bb, dst + i * be);
}

void QuantizeBlocksRef(QuantType type, const float* src, int64_t n, uint8_t* dst) {
  const int64_t be = QuantBlockElems(type), bb = QuantBlockBytes(type);
  XI_CHECK(n % be == 0);
  void (*fn)(const float*, uint8_t*) = nullptr;
  switch (type) {
    case QuantType::kQ8_0:
      fn = QuantQ8_0;
      break;
    case QuantType::kQ4_0:
      fn = QuantQ4_0;
      break;
    case QuantType::kQ5_0:
      fn = QuantQ5_0;
      break;
    case QuantType::kQ4_1:
      fn = QuantQ4_1;
      break;
    case QuantType::kQ5_1:
      fn = QuantQ5_1;
      break;
    case QuantType::kQ4_K:
      fn = QuantQ4_K;
      break;
    case QuantType::kQ5_K:
      fn = QuantQ5_K;
      break;
    case QuantType::kQ6_K:
      fn = QuantQ6_K;
      break;
    case QuantType::kAwq4:
      XI_CHECK_MSG(false, "AWQ4 is not a block format");
      return;
  }
  for (int64_t i = 0; i < n / be; ++i) fn(src + i * be, dst + i * bb);
}

AwqGroup QuantizeAwqGroupRef(const float* x, int64_t n, uint8_t* q) {
  float lo = x[0], hi = x[0];
  for (int64_t i = 1; i < n; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  AwqGroup g;
  g.scale_f16 = F32ToF16(std::max(hi - lo, 1e-5f) / 15.f);
  const float scale = F16ToF32(g.scale_f16);
  g.zero = static_cast<uint8_t>(std::clamp(static_cast<int>(std::nearbyint(-lo / scale)), 0, 15));
  for (int64_t i = 0; i < n; ++i)
    q[i] = static_cast<uint8_t>(
        std::clamp(static_cast<int>(std::nearbyint(x[i] / scale)) + g.zero, 0, 15));
  return g;
}

}  // namespace xinfer
