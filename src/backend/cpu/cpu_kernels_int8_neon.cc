// GGUF weights meeting int8 activations on ARM64 CPUs with the dot-product extension (ARMv8.2
// DotProd: Kunpeng 920, Neoverse N1 and later) — sdot, as llama.cpp's ARM path does. The same
// scheme and x layout as the AVX2 kernel (cpu_kernels_int8_avx2.cc): x quantized per block of 32
// (d = max|x| / 127, round to nearest even) in element order with d and d x (the block's int8
// sum) per block; per block and weight row the 32 codes as signed bytes (Q4_0: q - 8, Q5_0: q - 16,
// Q6_K: q - 32, Q8_0 as stored; Q4_K / Q5_K's unsigned codes, whose mins are summed apart), two
// sdot into 4 int32 lanes, acc = fma(float(lanes), d_w * d_x, acc). The integer sums are exact and
// the F32 sequence per output element depends on K only (batch invariance).
//
// Elsewhere (x86) this file holds the entry points' stubs: DetectCpuFeatures() reports no
// neon_dotprod there, so FastCpuOps never calls them.
#include "backend/cpu/cpu_kernels.h"
#include "base/check.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include <cstring>

#include "tensor/quant_blocks.h"

#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")

#include "backend/cpu/int8_block_dispatch.h"

namespace xinfer::cpu::neon {
namespace {

inline float F16(const uint8_t* p) {
  __fp16 h;
  std::memcpy(&h, p, 2);
  return static_cast<float>(h);
}

// Block b (32 elements) of a weight row: its codes as two vectors of signed bytes (elements 0..15,
// 16..31), the scale of each half (equal but for Q6_K) and, for Q4_K / Q5_K, dmin * m.
struct WeightBlock {
  int8x16_t w0, w1;
  float s0, s1;
  float min = 0.f;
};

// 16 bits of `bits` (from bit `first`) as 16 bytes of 0x10 (bit set) or 0.
inline uint8x16_t HighBits16(uint32_t bits, int first) {
  const uint8x16_t spread = vcombine_u8(vdup_n_u8(static_cast<uint8_t>(bits >> first)),
                                        vdup_n_u8(static_cast<uint8_t>(bits >> (first + 8))));
  static const uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  return vandq_u8(vtstq_u8(spread, vld1q_u8(kBit)), vdupq_n_u8(0x10));
}

template <QuantType QT>
inline WeightBlock Load(const uint8_t* row, int64_t b) {
  const uint8x16_t low4 = vdupq_n_u8(0x0F);
  if constexpr (QT == QuantType::kQ4_0 || QT == QuantType::kQ5_0) {
    constexpr bool kQ5 = QT == QuantType::kQ5_0;
    const uint8_t* p = row + b * (kQ5 ? 22 : 18);
    const uint8x16_t v = vld1q_u8(p + (kQ5 ? 6 : 2));
    uint8x16_t lo = vandq_u8(v, low4), hi = vshrq_n_u8(v, 4);
    if constexpr (kQ5) {
      uint32_t qh;
      std::memcpy(&qh, p + 2, 4);
      lo = vorrq_u8(lo, HighBits16(qh, 0));
      hi = vorrq_u8(hi, HighBits16(qh, 16));
    }
    const uint8x16_t offset = vdupq_n_u8(kQ5 ? 16 : 8);
    const float d = F16(p);
    return {vreinterpretq_s8_u8(vsubq_u8(lo, offset)), vreinterpretq_s8_u8(vsubq_u8(hi, offset)), d,
            d};
  } else if constexpr (QT == QuantType::kQ4_1 || QT == QuantType::kQ5_1) {
    // value d * q + m, q unsigned: the min enters as -m (the tile subtracts the mins).
    constexpr bool kQ5 = QT == QuantType::kQ5_1;
    const uint8_t* p = row + b * (kQ5 ? 24 : 20);
    const uint8x16_t v = vld1q_u8(p + (kQ5 ? 8 : 4));
    uint8x16_t lo = vandq_u8(v, low4), hi = vshrq_n_u8(v, 4);
    if constexpr (kQ5) {
      uint32_t qh;
      std::memcpy(&qh, p + 4, 4);
      lo = vorrq_u8(lo, HighBits16(qh, 0));
      hi = vorrq_u8(hi, HighBits16(qh, 16));
    }
    const float d = F16(p);
    return {vreinterpretq_s8_u8(lo), vreinterpretq_s8_u8(hi), d, d, -F16(p + 2)};
  } else if constexpr (QT == QuantType::kQ8_0) {
    const uint8_t* p = row + b * 34;
    const float d = F16(p);
    return {vld1q_s8(reinterpret_cast<const int8_t*>(p + 2)),
            vld1q_s8(reinterpret_cast<const int8_t*>(p + 18)), d, d};
  } else if constexpr (QT == QuantType::kQ4_K || QT == QuantType::kQ5_K) {
    // Sub-block j = b % 8: chunk j / 2's 32 bytes, low (even j) or high (odd j) nibbles; Q5_K's
    // 5th bit is bit j of qh[l].
    constexpr bool kQ5 = QT == QuantType::kQ5_K;
    const uint8_t* p = row + (b / 8) * (kQ5 ? 176 : 144);
    const int j = static_cast<int>(b % 8);
    const uint8_t* q = p + (kQ5 ? 48 : 16) + 32 * (j / 2);
    uint8x16_t v0 = vld1q_u8(q), v1 = vld1q_u8(q + 16);
    if (j % 2 == 0) {
      v0 = vandq_u8(v0, low4);
      v1 = vandq_u8(v1, low4);
    } else {
      v0 = vshrq_n_u8(v0, 4);
      v1 = vshrq_n_u8(v1, 4);
    }
    if constexpr (kQ5) {
      const int8x16_t shift = vdupq_n_s8(static_cast<int8_t>(4 - j));  // bit j to bit 4
      const uint8x16_t bit4 = vdupq_n_u8(0x10);
      const uint8x16_t h0 = vld1q_u8(p + 16), h1 = vld1q_u8(p + 32);
      // Bit j of each byte to bit 4: a left shift by 4 - j (a right shift where negative).
      v0 = vorrq_u8(
          v0,
          vandq_u8(vshlq_u8(vandq_u8(h0, vdupq_n_u8(static_cast<uint8_t>(1 << j))), shift), bit4));
      v1 = vorrq_u8(
          v1,
          vandq_u8(vshlq_u8(vandq_u8(h1, vdupq_n_u8(static_cast<uint8_t>(1 << j))), shift), bit4));
    }
    int sc, m;
    ScaleMinK4(j, p + 4, &sc, &m);
    const float s = F16(p) * static_cast<float>(sc);
    return {vreinterpretq_s8_u8(v0), vreinterpretq_s8_u8(v1), s, s,
            F16(p + 2) * static_cast<float>(m)};
  } else {  // Q6_K: elements 32c.. of half h: ql 32 (c % 2).., high nibbles for c >= 2;
            // qh bits 2c; two int8 scales of 16 elements
    const uint8_t* p = row + (b / 8) * 210;
    const int half = static_cast<int>(b % 8) / 4, c = static_cast<int>(b % 4);
    const uint8_t* ql = p + 64 * half + 32 * (c % 2);
    const uint8_t* qh = p + 128 + 32 * half;
    uint8x16_t l0 = vld1q_u8(ql), l1 = vld1q_u8(ql + 16);
    if (c < 2) {
      l0 = vandq_u8(l0, low4);
      l1 = vandq_u8(l1, low4);
    } else {
      l0 = vshrq_n_u8(l0, 4);
      l1 = vshrq_n_u8(l1, 4);
    }
    const int8x16_t down = vdupq_n_s8(static_cast<int8_t>(-2 * c));
    const uint8x16_t three = vdupq_n_u8(3), offset = vdupq_n_u8(32);
    const uint8x16_t h0 = vshlq_n_u8(vandq_u8(vshlq_u8(vld1q_u8(qh), down), three), 4);
    const uint8x16_t h1 = vshlq_n_u8(vandq_u8(vshlq_u8(vld1q_u8(qh + 16), down), three), 4);
    const int8_t* scales = reinterpret_cast<const int8_t*>(p + 192 + 8 * half + 2 * c);
    const float d = F16(p + 208);
    return {vreinterpretq_s8_u8(vsubq_u8(vorrq_u8(l0, h0), offset)),
            vreinterpretq_s8_u8(vsubq_u8(vorrq_u8(l1, h1), offset)), d * scales[0], d * scales[1]};
  }
}

constexpr int64_t kPrefetchBytes = 8192;

template <QuantType QT, int MR, int NR>
void TileInt8Neon(const QuantLinearTask& t, const uint8_t* q, int64_t row_bytes, int64_t r0,
                  int64_t n) {
  constexpr bool kHasMin = QT == QuantType::kQ4_K || QT == QuantType::kQ5_K ||
                           QT == QuantType::kQ4_1 || QT == QuantType::kQ5_1;
  const int64_t blocks = t.w->cols / 32;
  float32x4_t acc[MR][NR];
  float min_acc[MR][NR] = {};
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = vdupq_n_f32(0.f);
  const uint8_t* rows = q + n * row_bytes;
  const int64_t block_bytes = row_bytes / blocks;
  const int32x4_t zero = vdupq_n_s32(0);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* ahead = rows + kPrefetchBytes + b * NR * block_bytes;
    for (int64_t o = 0; o < NR * block_bytes; o += 64) __builtin_prefetch(ahead + o, 0, 2);
    for (int j = 0; j < NR; ++j) {
      const WeightBlock wb = Load<QT>(rows + j * row_bytes, b);
      for (int i = 0; i < MR; ++i) {
        const int64_t r = r0 + i;
        const int8_t* x = t.xq + r * t.ldxq + 32 * b;
        const float* aux = t.xaux + r * t.ldxaux + 2 * b;  // d_x, d_x x the block's x sum
        const int32x4_t d0 = vdotq_s32(zero, wb.w0, vld1q_s8(x));
        const int32x4_t d1 = vdotq_s32(zero, wb.w1, vld1q_s8(x + 16));
        if (wb.s0 == wb.s1) {
          acc[i][j] = vfmaq_n_f32(acc[i][j], vcvtq_f32_s32(vaddq_s32(d0, d1)), wb.s0 * aux[0]);
        } else {
          acc[i][j] = vfmaq_n_f32(acc[i][j], vcvtq_f32_s32(d0), wb.s0 * aux[0]);
          acc[i][j] = vfmaq_n_f32(acc[i][j], vcvtq_f32_s32(d1), wb.s1 * aux[0]);
        }
        if constexpr (kHasMin) min_acc[i][j] += wb.min * aux[1];
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j)
      t.out[(r0 + i) * t.ldo + n + j] =
          vaddvq_f32(acc[i][j]) - min_acc[i][j] + (t.bias != nullptr ? t.bias[n + j] : 0.f);
}

template <QuantType QT>
struct NeonTiles {
  template <int MR, int NR>
  static void Run(const QuantLinearTask& t, const uint8_t* q, int64_t row_bytes, int64_t r0,
                  int64_t n) {
    TileInt8Neon<QT, MR, NR>(t, q, row_bytes, r0, n);
  }
};

}  // namespace

bool Int8DotSupports(const QuantTensor& w, const CpuFeatures& f) {
  return f.neon_dotprod && int8_block::Supports(w);
}

void Int8PrepareX(const float* x, int64_t rows, int64_t ldx, int64_t k, int8_t* xq, int64_t ldxq,
                  float* xd, int64_t ldxd) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < k / 32; ++b) {
      const float* xs = x + r * ldx + 32 * b;
      float32x4_t v[8];
      float32x4_t amax = vdupq_n_f32(0.f);
      for (int c = 0; c < 8; ++c) {
        v[c] = vld1q_f32(xs + 4 * c);
        amax = vmaxq_f32(amax, vabsq_f32(v[c]));
      }
      const float d = vmaxvq_f32(amax) / 127.f;
      const float id = d != 0.f ? 1.f / d : 0.f;
      int8_t* out = xq + r * ldxq + 32 * b;
      int32_t sum = 0;
      for (int h = 0; h < 2; ++h) {
        // fcvtns: round to nearest, ties to even; the narrowing moves saturate.
        int16x8_t s16[2];
        for (int c = 0; c < 2; ++c) {
          const int32x4_t a = vcvtnq_s32_f32(vmulq_n_f32(v[4 * h + 2 * c], id));
          const int32x4_t e = vcvtnq_s32_f32(vmulq_n_f32(v[4 * h + 2 * c + 1], id));
          s16[c] = vcombine_s16(vqmovn_s32(a), vqmovn_s32(e));
        }
        const int8x16_t bytes = vcombine_s8(vqmovn_s16(s16[0]), vqmovn_s16(s16[1]));
        vst1q_s8(out + 16 * h, bytes);
        sum += vaddlvq_s8(bytes);
      }
      xd[r * ldxd + 2 * b] = d;
      xd[r * ldxd + 2 * b + 1] = d * static_cast<float>(sum);
    }
  }
}

void QuantLinearInt8(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  int8_block::Linear<NeonTiles>(t, t0, t1, n0, n1);
}

}  // namespace xinfer::cpu::neon

#pragma GCC pop_options

#else  // !defined(__aarch64__)

namespace xinfer::cpu::neon {
bool Int8DotSupports(const QuantTensor&, const CpuFeatures&) { return false; }
void Int8PrepareX(const float*, int64_t, int64_t, int64_t, int8_t*, int64_t, float*, int64_t) {
  XI_CHECK_MSG(false, "an ARM64 kernel was called on another CPU");
}
void QuantLinearInt8(const QuantLinearTask&, int64_t, int64_t, int64_t, int64_t) {
  XI_CHECK_MSG(false, "an ARM64 kernel was called on another CPU");
}
}  // namespace xinfer::cpu::neon

#endif  // defined(__aarch64__)
