// GGUF Q4_0 and Q8_0 weights meeting int8 activations on AVX2 CPUs without AVX512-VNNI — Hygon
// C86 and other Zen 1/2 servers, Intel before Ice Lake — with vpmaddubsw, as llama.cpp's AVX2
// path does. The AVX-512 kernels (cpu_kernels_int8_avx512.cc) take the same files where the CPU
// has AVX512-VNNI; without an int8 kernel these formats run Highway's dequantize-to-a-panel path
// with F32 activations, ~3x slower.
//
// Activations (Int8PrepareX): each block of 32 x values becomes d = max|x| / 127 (F32) and
// q = round-to-nearest-even(x * (1 / d)) — the AVX-512 kernels' quantization — kept in natural
// order, one F32 d per block.
//
// Per block of 32 and weight row: the 32 weights come into one register as signed bytes w
// (Q4_0: the nibbles, low ones in the lower half, minus 8; Q8_0: as stored); vpmaddubsw takes an
// unsigned operand, so it multiplies |w| with x carrying w's sign (vpsignb: |w| <= 128 and
// |x| <= 127 keep each pair sum below the 16-bit saturation), vpmaddwd with ones gives 8 int32
// lane sums, and acc = fma(float(sums), d_w * d_x, acc). The integer sums are exact and the F32
// sequence per output element depends on K only (batch invariance), like every kernel here.
#if defined(__x86_64__)  // x86 only; cpu_kernels_avx512_absent.cc elsewhere

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/int8_panels_layout.h"
#include "tensor/quant_blocks.h"

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi2")

#include "backend/cpu/int8_block_dispatch.h"

namespace xinfer::cpu::avx2 {
namespace {

inline float F16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Block b (32 elements, element order) of a weight row: its bytes, the F32 scale of each int32
// lane of the dot (lane l sums elements 4l..4l+3), and for the formats with a per-block min
// (Q4_K, Q5_K: value d * sc * q - dmin * m) the min dmin * m. Signed formats (Q4_0: q - 8,
// Q5_0: q - 16, Q6_K: q - 32, Q8_0) give signed bytes, the K-quants with mins unsigned codes.
struct WeightBlock {
  __m256i w;
  __m256 scale;
  float min = 0.f;
};

template <QuantType QT>
struct Avx2Format;

template <>
struct Avx2Format<QuantType::kQ4_0> {
  static constexpr bool kUnsigned = false;
  static WeightBlock Load(const uint8_t* row, int64_t b) {
    const uint8_t* p = row + b * 18;
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2));
    const __m128i low4 = _mm_set1_epi8(0x0F);
    const __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(v, low4)),
                                              _mm_and_si128(_mm_srli_epi16(v, 4), low4), 1);
    return {_mm256_sub_epi8(q, _mm256_set1_epi8(8)), _mm256_set1_ps(F16(p))};
  }
};

template <>
struct Avx2Format<QuantType::kQ8_0> {
  static constexpr bool kUnsigned = false;
  static WeightBlock Load(const uint8_t* row, int64_t b) {
    const uint8_t* p = row + b * 34;
    return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2)), _mm256_set1_ps(F16(p))};
  }
};

// 32 bits to 32 bytes of 0x10 (bit set) or 0.
inline __m256i HighBits(uint32_t bits) {
  const __m256i spread =
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                          _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101,
                                             0x0202020202020202, 0x0303030303030303));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit),
                          _mm256_set1_epi8(0x10));
}

template <>
struct Avx2Format<QuantType::kQ5_0> {
  static constexpr bool kUnsigned = false;
  static WeightBlock Load(const uint8_t* row, int64_t b) {
    const uint8_t* p = row + b * 22;
    uint32_t qh;
    std::memcpy(&qh, p + 2, 4);
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 6));
    const __m128i low4 = _mm_set1_epi8(0x0F);
    const __m256i q =
        _mm256_or_si256(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(v, low4)),
                                                _mm_and_si128(_mm_srli_epi16(v, 4), low4), 1),
                        HighBits(qh));
    return {_mm256_sub_epi8(q, _mm256_set1_epi8(16)), _mm256_set1_ps(F16(p))};
  }
};

// Q4_1 (20 bytes: d, m, 16 nibble bytes) and Q5_1 (24: d, m, 32 bits qh, 16 nibble bytes):
// value d * q + m with q unsigned, so the min enters as -m (the tile subtracts the mins).
template <bool kFiveBits>
struct MinBlockAvx2 {
  static constexpr bool kUnsigned = true;
  static WeightBlock Load(const uint8_t* row, int64_t b) {
    const uint8_t* p = row + b * (kFiveBits ? 24 : 20);
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + (kFiveBits ? 8 : 4)));
    const __m128i low4 = _mm_set1_epi8(0x0F);
    __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(v, low4)),
                                        _mm_and_si128(_mm_srli_epi16(v, 4), low4), 1);
    if constexpr (kFiveBits) {
      uint32_t qh;
      std::memcpy(&qh, p + 4, 4);
      q = _mm256_or_si256(q, HighBits(qh));
    }
    return {q, _mm256_set1_ps(F16(p)), -F16(p + 2)};
  }
};
template <>
struct Avx2Format<QuantType::kQ4_1> : MinBlockAvx2<false> {};
template <>
struct Avx2Format<QuantType::kQ5_1> : MinBlockAvx2<true> {};

// Q4_K / Q5_K: block b is sub-block j = b % 8 of super-block b / 8; chunk j / 2's 32 bytes hold it
// in their low (even j) or high (odd j) nibbles, Q5_K's 5th bit in bit j of qh[l].
template <bool kFiveBits>
struct ScaleMinKAvx2 {
  static constexpr bool kUnsigned = true;
  static constexpr int64_t kBlockBytes = kFiveBits ? 176 : 144;
  static WeightBlock Load(const uint8_t* row, int64_t b) {
    const uint8_t* p = row + (b / 8) * kBlockBytes;
    const int j = static_cast<int>(b % 8);
    const __m256i v = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(p + (kFiveBits ? 48 : 16) + 32 * (j / 2)));
    __m256i q = _mm256_and_si256(j % 2 == 0 ? v : _mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F));
    if constexpr (kFiveBits) {
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 16));
      q = _mm256_or_si256(q, _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, j), 4),
                                              _mm256_set1_epi8(0x10)));
    }
    int sc, m;
    ScaleMinK4(j, p + 4, &sc, &m);
    return {q, _mm256_set1_ps(F16(p) * static_cast<float>(sc)), F16(p + 2) * static_cast<float>(m)};
  }
};
template <>
struct Avx2Format<QuantType::kQ4_K> : ScaleMinKAvx2<false> {};
template <>
struct Avx2Format<QuantType::kQ5_K> : ScaleMinKAvx2<true> {};

// Q6_K: block b is elements 32 (b % 4) .. of half (b % 8) / 4 of super-block b / 8: ql bytes
// 32 (b % 2) .. of the half's 64 (low nibbles for b % 4 < 2, high above), qh bits 2 (b % 4) of the
// half's 32 qh bytes; two int8 scales (16 elements each), value d * scale * (q - 32).
template <>
struct Avx2Format<QuantType::kQ6_K> {
  static constexpr bool kUnsigned = false;
  static WeightBlock Load(const uint8_t* row, int64_t b) {
    const uint8_t* p = row + (b / 8) * 210;
    const int half = static_cast<int>(b % 8) / 4, c = static_cast<int>(b % 4);
    const __m256i ql =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64 * half + 32 * (c % 2)));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 128 + 32 * half));
    const __m256i low =
        _mm256_and_si256(c < 2 ? ql : _mm256_srli_epi16(ql, 4), _mm256_set1_epi8(0x0F));
    const __m256i high = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * c), 4),
                                          _mm256_set1_epi8(0x30));
    const __m256i q = _mm256_sub_epi8(_mm256_or_si256(low, high), _mm256_set1_epi8(32));
    const int8_t* scales = reinterpret_cast<const int8_t*>(p + 192 + 8 * half + 2 * c);
    const float d = F16(p + 208);
    const __m128 s0 = _mm_set1_ps(d * scales[0]), s1 = _mm_set1_ps(d * scales[1]);
    return {q, _mm256_insertf128_ps(_mm256_castps128_ps256(s0), s1, 1)};
  }
};

// The 8 int32 lane sums of w . x over one block; `uw` is w for the unsigned formats, |w| for the
// signed ones (taken once per weight block, for every row of x).
template <bool kUnsigned>
inline __m256i BlockDot(__m256i uw, __m256i w, __m256i x) {
  const __m256i products = _mm256_maddubs_epi16(uw, kUnsigned ? x : _mm256_sign_epi8(x, w));
  return _mm256_madd_epi16(products, _mm256_set1_epi16(1));
}

// Horizontal sum of each accumulator plus bias, in one fixed tree for every tile shape.
inline float HorizontalSum(__m256 v) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

constexpr int64_t kPrefetchBytes = 8192;

template <QuantType QT, int MR, int NR>
void TileInt8Avx2(const QuantLinearTask& t, const uint8_t* q, int64_t row_bytes, int64_t r0,
                  int64_t n) {
  using F = Avx2Format<QT>;
  const int64_t blocks = t.w->cols / 32;
  __m256 acc[MR][NR];
  float min_acc[MR][NR] = {};
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  const uint8_t* rows = q + n * row_bytes;
  const int64_t block_bytes = row_bytes / blocks;  // average: a step of the prefetch
  for (int64_t b = 0; b < blocks; ++b) {
    const char* ahead = reinterpret_cast<const char*>(rows) + kPrefetchBytes + b * NR * block_bytes;
    for (int64_t o = 0; o < NR * block_bytes; o += 64) __builtin_prefetch(ahead + o, 0, 2);
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) {
      const WeightBlock wb = F::Load(rows + j * row_bytes, b);
      const __m256i uw = F::kUnsigned ? wb.w : _mm256_sign_epi8(wb.w, wb.w);
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) {
        const int64_t r = r0 + i;
        const __m256i x =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.xq + r * t.ldxq + 32 * b));
        const float* aux = t.xaux + r * t.ldxaux + 2 * b;  // d_x, d_x x the block's x sum
        acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(BlockDot<F::kUnsigned>(uw, wb.w, x)),
                                    _mm256_mul_ps(wb.scale, _mm256_set1_ps(aux[0])), acc[i][j]);
        if constexpr (F::kUnsigned) min_acc[i][j] += wb.min * aux[1];
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j)
      t.out[(r0 + i) * t.ldo + n + j] =
          HorizontalSum(acc[i][j]) - min_acc[i][j] + (t.bias != nullptr ? t.bias[n + j] : 0.f);
}

template <QuantType QT>
struct Avx2Tiles {
  template <int MR, int NR>
  static void Run(const QuantLinearTask& t, const uint8_t* q, int64_t row_bytes, int64_t r0,
                  int64_t n) {
    TileInt8Avx2<QT, MR, NR>(t, q, row_bytes, r0, n);
  }
};

}  // namespace

bool Int8DotSupports(const QuantTensor& w, const CpuFeatures& f) {
  return f.avx2 && int8_block::Supports(w);
}

void Int8PrepareX(const float* x, int64_t rows, int64_t ldx, int64_t k, int8_t* xq, int64_t ldxq,
                  float* xd, int64_t ldxd, Int8XLayout layout) {
  const bool awq_order = layout == Int8XLayout::kAwqPanels;
  // kAwqPanels: each 8-byte chunk as elements 0, 2, 4, 6, 1, 3, 5, 7.
  const __m256i awq_shuffle = _mm256_setr_epi64x(0x0705030106040200, 0x0F0D0B090E0C0A08,
                                                 0x0705030106040200, 0x0F0D0B090E0C0A08);
  const __m256 sign_bit = _mm256_set1_ps(-0.f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < k / 32; ++b) {
      const float* xs = x + r * ldx + 32 * b;
      __m256 v[4];
      __m256 amax = _mm256_setzero_ps();
      for (int c = 0; c < 4; ++c) {
        v[c] = _mm256_loadu_ps(xs + 8 * c);
        amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_bit, v[c]));
      }
      __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
      m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
      m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
      const float d = _mm_cvtss_f32(m4) / 127.f;
      const __m256 id = _mm256_set1_ps(d != 0.f ? 1.f / d : 0.f);
      // vcvtps2dq rounds to nearest even (the default MXCSR mode); the packs saturate.
      __m256i q[4];
      for (int c = 0; c < 4; ++c) q[c] = _mm256_cvtps_epi32(_mm256_mul_ps(v[c], id));
      // packs interleave 128-bit lanes; the permute restores element order.
      const __m256i w01 = _mm256_packs_epi32(q[0], q[1]), w23 = _mm256_packs_epi32(q[2], q[3]);
      const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(w01, w23),
                                                        _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(xq + r * ldxq + 32 * b),
                          awq_order ? _mm256_shuffle_epi8(bytes, awq_shuffle) : bytes);
      // The block's int8 sum, for the K-quants' mins: vpmaddubsw of ones with x, then pairs.
      const __m256i sums =
          _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), bytes), _mm256_set1_epi16(1));
      __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
      xd[r * ldxd + 2 * b] = d;
      const float sum = static_cast<float>(_mm_cvtsi128_si32(s4));
      xd[r * ldxd + 2 * b + 1] = layout == Int8XLayout::kRowKernel ? d * sum : sum;
    }
    if (awq_order) {
      float* aux = xd + r * ldxd;
      for (int64_t g = 0; g < k / int8_panels::kGroup; ++g)
        aux[int8_panels::AwqGroupXTermAt(k) + g] = int8_panels::AwqGroupXTerm(aux, g);
    }
  }
}

void QuantLinearInt8(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  if (t.w->data.layout() != Layout::kRowMajor) return QuantLinearInt8Panels(t, t0, t1, n0, n1);
  int8_block::Linear<Avx2Tiles>(t, t0, t1, n0, n1);
}

}  // namespace xinfer::cpu::avx2

#pragma GCC pop_options

#endif  // defined(__x86_64__)
