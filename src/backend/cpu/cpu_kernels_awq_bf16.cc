// AWQ4 (group size 128) Linear with vdpbf16ps, for CPUs with AVX512-BF16.
//
// Why: the F32 nibble kernel (cpu_kernels_quant_avx512.cc) spends 5 integer ops and 2 FMAs per 32
// weights and is compute-bound at ~12 GB/s of weights per Zen 4 core, below the DRAM stream.
// Here a 64-byte line (one 128-weight group of one row) is loaded once; each 16-bit word holds 4
// nibbles, and one shift + one vpternlogd turns nibble n of all 32 words into 32 BF16 values
// m = 1 + q/16 (exact: 4 mantissa bits). vdpbf16ps then multiplies 32 weights per instruction.
//
// Activations stay (nearly) F32: each x is split into two BF16 values, hi = bf16(x) and
// lo = bf16(x - hi), and every weight meets both, so x is represented to 2^-17 of its magnitude
// (BF16 activations alone moved the golden logits past their tolerance). The products of BF16
// values are exact in F32 and accumulate in F32. Per 32 weights: 2 integer ops + 2 vdpbf16ps,
// against 7 ops for the F32 kernel.
//
// Layout (AwqBf16PrepareX): in a group, word w of a weight row's 64 bytes holds elements 4w..4w+3
// (byte 2w: elements 4w, 4w+1; byte 2w+1: 4w+2, 4w+3; low nibble first). For nibble n the kernel
// needs x[4w + n] in lane w, so a group of x is stored as 4 vectors of 32 hi values then 4 of 32 lo
// values (512 bytes). vdpbf16ps lane l sums words 2l and 2l+1: elements 8l..8l+7 over the four n,
// so xsum lane l is the sum of hi + lo over those 8 elements.
//
// Per group g and weight row: tmp = -(1 + z/16) * xsum_g; for n = 0..3: tmp = dpbf16(tmp, hi_n,
// m_n); tmp = dpbf16(tmp, lo_n, m_n); acc = fma(16 * scale, tmp, acc). That sequence depends on K
// only, not on the tile, the batch or the threads (batch invariance), like every kernel here.
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/cpu_kernels.h"

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma,f16c,bmi2")

namespace xinfer::cpu::avx512 {
namespace {

constexpr int64_t kGroup = 128;
constexpr int64_t kGroupXElems = 2 * kGroup;  // hi and lo values of one group of x

inline __m512bh AsBh(__m512i v) { return reinterpret_cast<__m512bh&>(v); }

// m_n = BF16(1 + q/16) for nibble n of each word of `v`.
inline void UnpackGroup(__m512i v, __m512bh m[4]) {
  const __m512i mask = _mm512_set1_epi16(0x0078);  // BF16 mantissa bits 3..6
  const __m512i one = _mm512_set1_epi16(0x3F80);   // BF16 1.0
  // 0xEA: (a & b) | c
  m[0] = AsBh(_mm512_ternarylogic_epi32(_mm512_slli_epi16(v, 3), mask, one, 0xEA));
  m[1] = AsBh(_mm512_ternarylogic_epi32(_mm512_srli_epi16(v, 1), mask, one, 0xEA));
  m[2] = AsBh(_mm512_ternarylogic_epi32(_mm512_srli_epi16(v, 5), mask, one, 0xEA));
  m[3] = AsBh(_mm512_ternarylogic_epi32(_mm512_srli_epi16(v, 9), mask, one, 0xEA));
}

struct AwqRows {
  const uint8_t* q;
  int64_t row_bytes;
  const float* scales;
  const float* zeros;
  int64_t groups;
};

template <int MR, int NR>
void TileAwqBf16(const QuantLinearTask& t, const AwqRows& w, int64_t r0, int64_t n) {
  const uint8_t* rows[NR];
  const float* scales[NR];
  const float* zeros[NR];
#pragma GCC unroll 8
  for (int j = 0; j < NR; ++j) {
    rows[j] = w.q + (n + j) * w.row_bytes;
    scales[j] = w.scales + (n + j) * w.groups;
    zeros[j] = w.zeros + (n + j) * w.groups;
  }
  const uint16_t* x = t.xs + r0 * t.ldxs;
  const float* xs = t.xsum + r0 * t.ldxsum;
  __m512 acc[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int64_t g = 0; g < w.groups; ++g) {
    PrefetchRange(rows[0] + kQuantPrefetchBytes + g * NR * 64, NR * 64);
    if constexpr (MR == 1) {
      // One row of x: its 8 vectors stay in registers; NR independent chains.
      __m512bh xv[8];
#pragma GCC unroll 8
      for (int v = 0; v < 8; ++v) xv[v] = AsBh(_mm512_loadu_si512(x + g * kGroupXElems + v * 32));
      const __m512 xsb = _mm512_loadu_ps(xs + g * 16);
      __m512 tmp[NR];
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j)
        tmp[j] = _mm512_mul_ps(xsb, _mm512_set1_ps(-(1.f + zeros[j][g] * 0.0625f)));
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) {
        __m512bh m[4];
        UnpackGroup(_mm512_loadu_si512(rows[j] + g * 64), m);
#pragma GCC unroll 4
        for (int nb = 0; nb < 4; ++nb) {
          tmp[j] = _mm512_dpbf16_ps(tmp[j], xv[nb], m[nb]);
          tmp[j] = _mm512_dpbf16_ps(tmp[j], xv[4 + nb], m[nb]);
        }
      }
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j)
        acc[0][j] = _mm512_fmadd_ps(_mm512_set1_ps(16.f * scales[j][g]), tmp[j], acc[0][j]);
      continue;
    }
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      __m512bh m[4];
      UnpackGroup(_mm512_loadu_si512(rows[j] + g * 64), m);
      const __m512 s16 = _mm512_set1_ps(16.f * scales[j][g]);
      const __m512 nzz = _mm512_set1_ps(-(1.f + zeros[j][g] * 0.0625f));
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const uint16_t* xg = x + i * t.ldxs + g * kGroupXElems;
        __m512 tmp = _mm512_mul_ps(_mm512_loadu_ps(xs + i * t.ldxsum + g * 16), nzz);
#pragma GCC unroll 4
        for (int nb = 0; nb < 4; ++nb) {
          tmp = _mm512_dpbf16_ps(tmp, AsBh(_mm512_loadu_si512(xg + nb * 32)), m[nb]);
          tmp = _mm512_dpbf16_ps(tmp, AsBh(_mm512_loadu_si512(xg + (4 + nb) * 32)), m[nb]);
        }
        acc[i][j] = _mm512_fmadd_ps(s16, tmp, acc[i][j]);
      }
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j)
      t.out[(r0 + i) * t.ldo + n + j] =
          _mm512_reduce_add_ps(acc[i][j]) + (t.bias != nullptr ? t.bias[n + j] : 0.f);
}

constexpr int kMr = 4;
constexpr int kNr = 4;
using TileFn = void (*)(const QuantLinearTask&, const AwqRows&, int64_t, int64_t);
template <int MR>
constexpr TileFn kRow[kNr] = {TileAwqBf16<MR, 1>, TileAwqBf16<MR, 2>, TileAwqBf16<MR, 3>,
                              TileAwqBf16<MR, 4>};
constexpr const TileFn* kTiles[kMr] = {kRow<1>, kRow<2>, kRow<3>, kRow<4>};

}  // namespace

bool AwqBf16Supports(const QuantTensor& w) {
  return w.type == QuantType::kAwq4 && w.group_size == kGroup && w.cols % kGroup == 0;
}

void AwqBf16PrepareX(const float* x, int64_t rows, int64_t ldx, int64_t k, uint16_t* xs,
                     int64_t ldxs, float* xsum, int64_t ldxsum) {
  // Word index (into the concatenation of two 32-word vectors) of element 4w + n, w = 0..15.
  __m512i idx[4];
  for (int n = 0; n < 4; ++n) {
    alignas(64) uint16_t v[32];
    for (int w = 0; w < 32; ++w) v[w] = static_cast<uint16_t>(4 * (w % 16) + n);
    idx[n] = _mm512_load_si512(v);
  }
  const __m512i hi_mask = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < k / kGroup; ++g) {
      const float* xg = x + r * ldx + g * kGroup;
      uint16_t* out = xs + r * ldxs + g * kGroupXElems;
      // hi and lo of the group's 128 elements in natural order, 32 per vector.
      __m512i hi[4], lo[4];
      for (int v = 0; v < 4; ++v) {
        const __m512 a = _mm512_loadu_ps(xg + 32 * v), b = _mm512_loadu_ps(xg + 32 * v + 16);
        const __m256bh ha = _mm512_cvtneps_pbh(a), hb = _mm512_cvtneps_pbh(b);
        const __m512 ra =
            _mm512_sub_ps(a, _mm512_castsi512_ps(_mm512_slli_epi32(
                                 _mm512_cvtepu16_epi32(reinterpret_cast<const __m256i&>(ha)), 16)));
        const __m512 rb =
            _mm512_sub_ps(b, _mm512_castsi512_ps(_mm512_slli_epi32(
                                 _mm512_cvtepu16_epi32(reinterpret_cast<const __m256i&>(hb)), 16)));
        const __m256bh la = _mm512_cvtneps_pbh(ra), lb = _mm512_cvtneps_pbh(rb);
        hi[v] = _mm512_inserti64x4(_mm512_castsi256_si512(reinterpret_cast<const __m256i&>(ha)),
                                   reinterpret_cast<const __m256i&>(hb), 1);
        lo[v] = _mm512_inserti64x4(_mm512_castsi256_si512(reinterpret_cast<const __m256i&>(la)),
                                   reinterpret_cast<const __m256i&>(lb), 1);
      }
      __m512 sum = _mm512_setzero_ps();
      for (int part = 0; part < 2; ++part) {
        const __m512i* src = part == 0 ? hi : lo;
        for (int n = 0; n < 4; ++n) {
          // Lanes 0..15: elements 4w + n of the first 64 (vectors 0, 1); 16..31: of the last 64.
          const __m512i first = _mm512_permutex2var_epi16(src[0], idx[n], src[1]);
          const __m512i second = _mm512_permutex2var_epi16(src[2], idx[n], src[3]);
          const __m512i vec = _mm512_inserti64x4(first, _mm512_castsi512_si256(second), 1);
          _mm512_storeu_si512(out + (part * 4 + n) * 32, vec);
          // Lane l of the dot product covers words 2l (even) and 2l + 1 (odd).
          sum = _mm512_add_ps(sum, _mm512_castsi512_ps(_mm512_slli_epi32(vec, 16)));
          sum = _mm512_add_ps(sum, _mm512_castsi512_ps(_mm512_and_si512(vec, hi_mask)));
        }
      }
      _mm512_storeu_ps(xsum + r * ldxsum + g * 16, sum);
    }
  }
}

void QuantLinearAwqBf16(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  const QuantTensor& qw = *t.w;
  const AwqRows w{static_cast<const uint8_t*>(qw.data.raw()), static_cast<int64_t>(qw.row_bytes()),
                  qw.scales.data<float>(), qw.zeros.data<float>(), qw.cols / kGroup};
  int64_t nb = (256 << 10) / w.row_bytes / kNr * kNr;
  if (nb < kNr) nb = kNr;
  ForEachTile<kMr, kNr>(t0, t1, n0, n1, nb, [&](int64_t r, int64_t mr, int64_t n, int64_t nr) {
    kTiles[mr - 1][nr - 1](t, w, r, n);
  });
}

}  // namespace xinfer::cpu::avx512

#pragma GCC pop_options
