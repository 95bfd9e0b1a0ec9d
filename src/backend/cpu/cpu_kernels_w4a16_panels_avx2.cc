// AWQ g128 weights meeting F32 activations (W4A16, AWQ's default path) on AVX2 CPUs without
// AVX-512 (Hygon C86, Zen 1-3, Intel before Ice Lake), broadcast-x form over the 16-row tiles the
// int8 panel kernel reads (int8_panels_layout.h: codes, scales and zero points in kDwordTiles),
// one output row per 32-bit lane, x broadcast. Without it these CPUs dequantized 4 rows at a time
// into an F32 panel and multiplied that (Highway's QuantLinear): a store and a reload per weight,
// ~0.35 of the bandwidth roofline for one sequence.
//
// Why the codes need no shift: dword c of a row holds elements 8c..8c+7, element 8c + p in bits
// 4p..4p+3. For p < 7, v & (15 << 4p) read as int32 is q x 16^p, which converts to F32 exactly (4
// significant bits, below 2^28), and x was stored prescaled by 16^-p (exact: a power of two), so
// fma(q x 16^p, x x 16^-p, a) is fma(q, x, a) to the bit. p = 7 (bits 28..31) would set the sign,
// so it is v >> 28 = q with x as is. One AND (or shift) and one conversion per 8 weights, shared by
// every row of x in the tile.
//
// Per output element, per group g of 128: a0 = the FMA chain of q x x over the group's even p (k
// order), a1 over the odd p (two chains so that the FMA latency hides with fewer registers),
// dot = a0 + a1, d = dot - z x xsum_g (one fnmadd; xsum_g the group's sum of x, W4A16PrepareX),
// acc = fma(s, d, acc) over the groups in order; out = acc + bias. That sequence depends on K
// only, not on the tile, the rows of x in the call or the threads (batch invariance).
#if defined(__x86_64__)  // x86 only; cpu_kernels_avx512_absent.cc elsewhere

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/int8_panels_layout.h"

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#pragma GCC push_options
#pragma GCC target("avx2,fma")

#include "backend/cpu/panels_avx2.h"

namespace xinfer::cpu::avx2 {
namespace {

using int8_panels::Half;
using int8_panels::HalfOf;
using int8_panels::kGroup;
using int8_panels::kTileRows;

// Code p (0..7) of each lane's dword, times 16^p for p < 7 (see the file comment).
template <int P>
inline __m256 Code(__m256i v) {
  if constexpr (P == 7) return _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 28));
  return _mm256_cvtepi32_ps(_mm256_and_si256(v, _mm256_set1_epi32(15 << (4 * P))));
}

// One dword of NH half-panels (units[h]) against x elements xk[i][0..7] of MR rows: code p meets
// accumulator chain p % 2.
template <int MR, int NH, int P>
inline void CodeStep(const __m256i (&v)[NH], const float* const (&xk)[MR], __m256 (&a)[MR][NH][2]) {
#pragma GCC unroll 4
  for (int h = 0; h < NH; ++h) {
    const __m256 code = Code<P>(v[h]);
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i)
      a[i][h][P % 2] = _mm256_fmadd_ps(code, _mm256_broadcast_ss(xk[i] + P), a[i][h][P % 2]);
  }
}

// MR rows of x (r0..) times NH half-panels (h0..). kFull: the halves lie in whole 16-row tiles;
// otherwise one half of the weight's short last tile, masked to its rows.
template <int MR, int NH, bool kFull>
void PanelTile(const QuantLinearTask& t, int64_t r0, int64_t h0) {
  const QuantTensor& w = *t.w;
  const int64_t groups = w.cols / kGroup;
  Half half[NH];
#pragma GCC unroll 4
  for (int h = 0; h < NH; ++h) half[h] = HalfOf(w, h0 + h);
  const int64_t unit_bytes = kFull ? 4 * kTileRows : 4 * half[0].tile.lanes;
  const __m256i mask = panels::RowMask(kFull ? 8 : half[0].rows);
  const float* x[MR];
  const float* xsum[MR];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) {
    x[i] = t.x + (r0 + i) * t.ldx;
    xsum[i] = t.xsum + (r0 + i) * t.ldxsum;
  }
  __m256 acc[MR][NH];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int h = 0; h < NH; ++h) acc[i][h] = _mm256_setzero_ps();
  const int8_panels::NextRowsPrefetch prefetch(
      w, static_cast<const uint8_t*>(w.data.raw()) + (h0 + NH) * 8 * w.row_bytes(), NH * 8);
  for (int64_t g = 0; g < groups; ++g) {
    __m256 a[MR][NH][2];
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int h = 0; h < NH; ++h) a[i][h][0] = a[i][h][1] = _mm256_setzero_ps();
    int8_panels::AwqBlock at[NH];
    for (int64_t kb = g * (kGroup / 32); kb < (g + 1) * (kGroup / 32); ++kb) {
      prefetch.Block(kb);
#pragma GCC unroll 4
      for (int h = 0; h < NH; ++h) {
        at[h] = int8_panels::AwqBlockOf(half[h].tile, kb);
        at[h].units += half[h].part * 32;
      }
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        __m256i v[NH];
#pragma GCC unroll 4
        for (int h = 0; h < NH; ++h) {
          const auto* unit = reinterpret_cast<const int*>(at[h].units + c * unit_bytes);
          v[h] = kFull ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit))
                       : _mm256_maskload_epi32(unit, mask);
        }
        const float* xk[MR];
#pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) xk[i] = x[i] + 32 * kb + 8 * c;
        CodeStep<MR, NH, 0>(v, xk, a);
        CodeStep<MR, NH, 1>(v, xk, a);
        CodeStep<MR, NH, 2>(v, xk, a);
        CodeStep<MR, NH, 3>(v, xk, a);
        CodeStep<MR, NH, 4>(v, xk, a);
        CodeStep<MR, NH, 5>(v, xk, a);
        CodeStep<MR, NH, 6>(v, xk, a);
        CodeStep<MR, NH, 7>(v, xk, a);
      }
    }
#pragma GCC unroll 4
    for (int h = 0; h < NH; ++h) {
      const float* s_at = half[h].tile.s + g * half[h].tile.lanes + half[h].part * 8;
      const float* z_at = half[h].tile.z + g * half[h].tile.lanes + half[h].part * 8;
      const __m256 s = kFull ? _mm256_loadu_ps(s_at) : _mm256_maskload_ps(s_at, mask);
      const __m256 z = kFull ? _mm256_loadu_ps(z_at) : _mm256_maskload_ps(z_at, mask);
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) {
        const __m256 dot = _mm256_add_ps(a[i][h][0], a[i][h][1]);
        const __m256 d = _mm256_fnmadd_ps(z, _mm256_broadcast_ss(xsum[i] + g), dot);
        acc[i][h] = _mm256_fmadd_ps(s, d, acc[i][h]);
      }
    }
  }
  panels::StoreTile<MR, NH, kFull>(t, r0, h0, acc, mask);
}

// Up to 4 rows of x on one half-panel (each code register serves every row: 8 chains + 4 sums +
// 3 temporaries fill the 16 registers), or one row on four half-panels (eight chains):
// panels::TileTables.
struct Kernel {
  template <int MR, int NH, bool kFull>
  static void Tile(const QuantLinearTask& t, int64_t r0, int64_t h0) {
    PanelTile<MR, NH, kFull>(t, r0, h0);
  }
};

}  // namespace

bool W4A16PanelsSupports(const QuantTensor& w, const CpuFeatures& f) {
  return f.avx2 && w.type == QuantType::kAwq4 && Int8PanelsSupports(w, f);
}

void W4A16PrepareX(const float* x, int64_t rows, int64_t ldx, int64_t k, float* xs, int64_t ldxs,
                   float* xsum, int64_t ldxsum) {
  XI_CHECK(k % kGroup == 0);
  // Lane p of each 8-element chunk: 16^-p (p < 7), 1 (p = 7).
  const __m256 prescale =
      _mm256_setr_ps(1.f, 0x1p-4f, 0x1p-8f, 0x1p-12f, 0x1p-16f, 0x1p-20f, 0x1p-24f, 1.f);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * ldx;
    float* xsr = xs + r * ldxs;
    for (int64_t g = 0; g < k / kGroup; ++g) {
      __m256 lanes = _mm256_setzero_ps();
      for (int64_t e = g * kGroup; e < (g + 1) * kGroup; e += 8) {
        const __m256 v = _mm256_loadu_ps(xr + e);
        lanes = _mm256_add_ps(lanes, v);
        _mm256_storeu_ps(xsr + e, _mm256_mul_ps(v, prescale));
      }
      // ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
      const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(lanes), _mm256_extractf128_ps(lanes, 1));
      const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
      xsum[r * ldxsum + g] = _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
    }
  }
}

void QuantLinearW4A16Panels(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0,
                            int64_t n1) {
  const QuantTensor& w = *t.w;
  int8_panels::CheckPlaced(w);
  XI_CHECK(w.type == QuantType::kAwq4);
  panels::RunPanels<Kernel>(t, t0, t1, n0, n1);
}

}  // namespace xinfer::cpu::avx2

#pragma GCC pop_options

#endif  // defined(__x86_64__)
