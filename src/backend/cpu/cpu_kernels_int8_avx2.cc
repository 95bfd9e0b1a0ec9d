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

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi2")

namespace xinfer::cpu::avx2 {
namespace {

inline float F16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Block b of a weight row as 32 signed bytes in element order, and its scale.
template <QuantType QT>
inline __m256i WeightBlock(const uint8_t* row, int64_t b, float& d) {
  if constexpr (QT == QuantType::kQ4_0) {
    const uint8_t* p = row + b * 18;
    d = F16(p);
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2));
    const __m128i low4 = _mm_set1_epi8(0x0F);
    const __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(v, low4)),
                                              _mm_and_si128(_mm_srli_epi16(v, 4), low4), 1);
    return _mm256_sub_epi8(q, _mm256_set1_epi8(8));
  } else {
    const uint8_t* p = row + b * 34;
    d = F16(p);
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2));
  }
}

// The 8 int32 lane sums of w . x over one block.
inline __m256i BlockDot(__m256i w, __m256i x) {
  const __m256i products = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
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
  const int64_t blocks = t.w->cols / 32;
  __m256 acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_setzero_ps();
  const uint8_t* rows = q + n * row_bytes;
  const int64_t block_bytes = QT == QuantType::kQ4_0 ? 18 : 34;
  for (int64_t b = 0; b < blocks; ++b) {
    const char* ahead = reinterpret_cast<const char*>(rows) + kPrefetchBytes + b * NR * block_bytes;
    for (int64_t o = 0; o < NR * block_bytes; o += 64) __builtin_prefetch(ahead + o, 0, 2);
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) {
      float dw;
      const __m256i w = WeightBlock<QT>(rows + j * row_bytes, b, dw);
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) {
        const int64_t r = r0 + i;
        const __m256i x =
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.xq + r * t.ldxq + 32 * b));
        const __m256 scale = _mm256_set1_ps(dw * t.xaux[r * t.ldxaux + b]);
        acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(BlockDot(w, x)), scale, acc[i][j]);
      }
    }
  }
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NR; ++j)
      t.out[(r0 + i) * t.ldo + n + j] =
          HorizontalSum(acc[i][j]) + (t.bias != nullptr ? t.bias[n + j] : 0.f);
}

constexpr int kMr = 4;
constexpr int kNr = 4;
using TileFn = void (*)(const QuantLinearTask&, const uint8_t*, int64_t, int64_t, int64_t);
template <QuantType QT, int MR>
constexpr TileFn kRow[kNr] = {TileInt8Avx2<QT, MR, 1>, TileInt8Avx2<QT, MR, 2>,
                              TileInt8Avx2<QT, MR, 3>, TileInt8Avx2<QT, MR, 4>};
template <QuantType QT>
constexpr const TileFn* kTiles[kMr] = {kRow<QT, 1>, kRow<QT, 2>, kRow<QT, 3>, kRow<QT, 4>};

template <QuantType QT>
void QuantLinearInt8Impl(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  const uint8_t* q = static_cast<const uint8_t*>(t.w->data.raw());
  const int64_t row_bytes = static_cast<int64_t>(t.w->row_bytes());
  int64_t nb = (256 << 10) / row_bytes / kNr * kNr;
  if (nb < kNr) nb = kNr;
  ForEachTile<kMr, kNr>(t0, t1, n0, n1, nb, [&](int64_t r, int64_t mr, int64_t n, int64_t nr) {
    kTiles<QT>[mr - 1][nr - 1](t, q, row_bytes, r, n);
  });
}

}  // namespace

bool Int8DotSupports(const QuantTensor& w, const CpuFeatures& f) {
  return f.avx2 && (w.type == QuantType::kQ4_0 || w.type == QuantType::kQ8_0) && w.cols % 32 == 0;
}

void Int8PrepareX(const float* x, int64_t rows, int64_t ldx, int64_t k, int8_t* xq, int64_t ldxq,
                  float* xd, int64_t ldxd) {
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
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(xq + r * ldxq + 32 * b), bytes);
      xd[r * ldxd + b] = d;
    }
  }
}

void QuantLinearInt8(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  if (t.w->type == QuantType::kQ4_0)
    return QuantLinearInt8Impl<QuantType::kQ4_0>(t, t0, t1, n0, n1);
  return QuantLinearInt8Impl<QuantType::kQ8_0>(t, t0, t1, n0, n1);
}

}  // namespace xinfer::cpu::avx2

#pragma GCC pop_options

#endif  // defined(__x86_64__)
