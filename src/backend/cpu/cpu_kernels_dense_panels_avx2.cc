// Dense Linear (F32, BF16, F16 weights; F32 activations) on AVX2 CPUs without AVX-512 (Hygon C86,
// Zen 1-3, Intel's without AVX-512), broadcast-x form: CpuBackend::PlaceWeights stores the weight
// in 16-row panels (tensor.h: kDwordTiles for F32, kWordTiles for BF16/F16: per k, the 16 rows'
// values side by side), one output row per 32-bit lane, x broadcast.
//
// Why: Highway's row-tile kernel (cpu_kernels_hwy.cc) gives each output row its own accumulator
// vector over K, so every multiply-add needs a weight vector per row and a horizontal sum at the
// end; with AVX2's 16 registers it meets 2 rows of x at a time, and the weight loads and the
// BF16 widening bound batched decode and prefill at about half the FMA peak (docs/performance.md,
// session 11). Here a 6 x 16 tile (6 rows of x, 16 weight rows: 12 accumulators) costs per k one
// 32-byte weight load, two integer ops (BF16: the even rows' halves shifted up, the odd rows'
// masked) and six broadcasts for twelve FMAs, as in the classic AVX2 SGEMM micro-kernel.
//
// Arithmetic (batch invariance, as cpu_kernels.h asks): output element (t, n) is
//   acc = 0; for k in 0..K-1: acc = fma(x[t, k], w[n, k], acc);  out = acc (+ bias[n])
// in F32, in that order, whatever the tile, the rows of x in the call or the threads; the
// partial panel at the end of a matrix (fewer than 16 rows) and the reference the tests compare
// with run the same sequence with std::fma, so every path gives the same bits. (One running sum
// instead of the row kernels' 8 lane sums: the rounding differs from theirs by ~1e-6 of a logit
// on the tiny models; XINFER_DENSE_PANELS=0 keeps the row tiles, for A/B measurements.)
#if defined(__x86_64__)  // x86 only; cpu_kernels_avx512_absent.cc elsewhere

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/cpu/cpu_kernels.h"
#include "base/check.h"
#include "tensor/dtype.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace xinfer::cpu::avx2 {
namespace {

constexpr int64_t kRows = kDwordTileRows;  // weight rows per panel: two registers of 8 lanes
constexpr int kMr = 6;                     // rows of x per tile: 12 accumulators + 2 w + 1 x

// The 16 weights of one k of a panel as two vectors of 8 lanes (Load), and the accumulators put
// back in row order, rows 0..7 and 8..15 (InRowOrder, once per tile). F32 and F16 load in row
// order. BF16: one 32-byte load holds the 16 values as dwords of (even row, odd row); shifting a
// dword left by 16 gives the even row's value as F32, masking its low half the odd row's, so the
// first vector holds rows 0, 2, .., 14 and the second 1, 3, .., 15.
struct F32Panel {
  using T = float;
  static void Load(const float* p, __m256& lo, __m256& hi) {
    lo = _mm256_loadu_ps(p);
    hi = _mm256_loadu_ps(p + 8);
    // Keep the vectors in registers: otherwise GCC folds each load into all six FMAs that use
    // it (a load per FMA, which then bounds the tile).
    __asm__("" : "+x"(lo), "+x"(hi));
  }
  static void InRowOrder(__m256&, __m256&) {}
};

struct F16Panel {
  using T = uint16_t;
  static void Load(const uint16_t* p, __m256& lo, __m256& hi) {
    lo = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    hi = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
  }
  static void InRowOrder(__m256&, __m256&) {}
};

struct Bf16Panel {
  using T = uint16_t;
  static void Load(const uint16_t* p, __m256& lo, __m256& hi) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    lo = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
    hi = _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
  static void InRowOrder(__m256& even, __m256& odd) {
    // [e0 o0 e1 o1 | e4 o4 e5 o5] and [e2 o2 e3 o3 | e6 o6 e7 o7] -> rows 0..7 and 8..15.
    const __m256 a = _mm256_unpacklo_ps(even, odd), b = _mm256_unpackhi_ps(even, odd);
    even = _mm256_permute2f128_ps(a, b, 0x20);
    odd = _mm256_permute2f128_ps(a, b, 0x31);
  }
};

// out[j] = acc_j (+ bias[j]) for the 16 rows of a panel, from its two accumulators.
template <class P>
inline void StoreRow(__m256 lo, __m256 hi, const float* bias, float* out) {
  P::InRowOrder(lo, hi);
  if (bias != nullptr) {
    lo = _mm256_add_ps(lo, _mm256_loadu_ps(bias));
    hi = _mm256_add_ps(hi, _mm256_loadu_ps(bias + 8));
  }
  _mm256_storeu_ps(out, lo);
  _mm256_storeu_ps(out + 8, hi);
}

// MR rows of x (ldx apart) times NP consecutive full panels (16 rows, K values each): MR x 2 NP
// accumulators, at most 12 (+ 2 weight vectors + the broadcasts within AVX2's 16 registers).
// Small MR takes several panels so that enough FMA chains are in flight (an FMA's latency
// needs 8 on Zen 3; one row of x against one panel has 2) and several weight streams run.
template <class P, int MR, int NP>
__attribute__((noinline)) void PanelTile(const float* x, int64_t ldx, const typename P::T* panel,
                                         int64_t k, const float* bias, float* out, int64_t ldo) {
  static_assert(MR >= 1 && NP >= 1 && MR * 2 * NP <= 12);
  __m256 acc[MR][2 * NP];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < 2 * NP; ++j) acc[i][j] = _mm256_setzero_ps();
  const int64_t panel_stride = k * kRows;
  for (int64_t kk = 0; kk < k; ++kk) {
    if constexpr (NP == 1) {
      // Each broadcast is used right away: 12 accumulators + 2 weights + 1 broadcast.
      __m256 w0, w1;
      P::Load(panel + kk * kRows, w0, w1);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const __m256 xb = _mm256_broadcast_ss(x + i * ldx + kk);
        acc[i][0] = _mm256_fmadd_ps(xb, w0, acc[i][0]);
        acc[i][1] = _mm256_fmadd_ps(xb, w1, acc[i][1]);
      }
    } else {
      // MR <= 2 broadcasts stay in registers while the NP panels' weights come in.
      __m256 xb[MR];
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) xb[i] = _mm256_broadcast_ss(x + i * ldx + kk);
#pragma GCC unroll 16
      for (int p = 0; p < NP; ++p) {
        __m256 w0, w1;
        P::Load(panel + p * panel_stride + kk * kRows, w0, w1);
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) {
          acc[i][2 * p] = _mm256_fmadd_ps(xb[i], w0, acc[i][2 * p]);
          acc[i][2 * p + 1] = _mm256_fmadd_ps(xb[i], w1, acc[i][2 * p + 1]);
        }
      }
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int p = 0; p < NP; ++p)
      StoreRow<P>(acc[i][2 * p], acc[i][2 * p + 1], bias != nullptr ? bias + p * kRows : nullptr,
                  out + i * ldo + p * kRows);
}

template <class P>
using PanelTileFn = void (*)(const float*, int64_t, const typename P::T*, int64_t, const float*,
                             float*, int64_t);
// Panels per tile for MR rows of x (the most the registers allow), and the tiles by [MR][NP].
constexpr int MaxPanels(int mr) { return mr <= 2 ? 3 : 1; }
template <class P>
constexpr PanelTileFn<P> kTiles[kMr][3] = {
    {PanelTile<P, 1, 1>, PanelTile<P, 1, 2>, PanelTile<P, 1, 3>},
    {PanelTile<P, 2, 1>, PanelTile<P, 2, 2>, PanelTile<P, 2, 3>},
    {PanelTile<P, 3, 1>, nullptr, nullptr},
    {PanelTile<P, 4, 1>, nullptr, nullptr},
    {PanelTile<P, 5, 1>, nullptr, nullptr},
    {PanelTile<P, 6, 1>, nullptr, nullptr}};

template <class P>
void LinearPanelsTyped(const LinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  using T = typename P::T;
  const T* w = static_cast<const T*>(t.w);
  const int64_t k = t.k, n = t.ldo;                          // the weight has ldo rows
  const int64_t full_end = std::min(n1, n / kRows * kRows);  // rows in full panels
  // With more than one tile of x, blocks of panels of about 256 KiB stay in L2 while every tile
  // of x passes over them; a decode-sized x (one tile) meets each panel once, as it streams in.
  const int64_t panel_bytes = k * kRows * static_cast<int64_t>(sizeof(T));
  const int64_t block = t1 - t0 <= kMr ? std::max<int64_t>(full_end - n0, kRows)
                                       : std::max<int64_t>(1, (256 << 10) / panel_bytes) * kRows;
  for (int64_t bs = n0; bs < full_end; bs += block) {
    const int64_t be = std::min(full_end, bs + block);
    for (int64_t r = t0; r < t1; r += kMr) {
      const int mr = static_cast<int>(std::min<int64_t>(kMr, t1 - r));
      for (int64_t p = bs; p < be;) {
        const int np = static_cast<int>(std::min<int64_t>(MaxPanels(mr), (be - p) / kRows));
        kTiles<P>[mr - 1][np - 1](t.x + r * t.ldx, t.ldx, w + p * k, k,
                                  t.bias != nullptr ? t.bias + p : nullptr, t.out + r * t.ldo + p,
                                  t.ldo);
        p += np * kRows;
      }
    }
  }
  if (n1 > full_end) LinearPartialPanel(t, t0, t1, std::max(n0, full_end));
}

}  // namespace

void LinearPanels(const LinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  XI_CHECK_MSG(n0 % kRows == 0 && (n1 % kRows == 0 || n1 == t.ldo),
               "a panel Linear range must start and end at a panel");
  switch (t.wdtype) {
    case DType::kF32:
      return LinearPanelsTyped<F32Panel>(t, t0, t1, n0, n1);
    case DType::kBF16:
      return LinearPanelsTyped<Bf16Panel>(t, t0, t1, n0, n1);
    case DType::kF16:
      return LinearPanelsTyped<F16Panel>(t, t0, t1, n0, n1);
    default:
      XI_CHECK_MSG(false, "no panel kernel for this weight dtype");
  }
}

}  // namespace xinfer::cpu::avx2

#pragma GCC pop_options

// ISA-neutral: which weights the panel kernels take, and their last partial panel.
namespace xinfer::cpu {

bool DensePanelsSupport(DType dtype, const CpuFeatures& features) {
  return (features.avx2 || features.avx512) &&
         (dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16);
}

Layout DensePanelsLayout(DType dtype, const CpuFeatures& features) {
  if (features.avx512)
    return dtype == DType::kBF16   ? Layout::kWordPairTiles64
           : DTypeSize(dtype) == 4 ? Layout::kDwordTiles64
                                   : Layout::kWordTiles64;
  return DTypeSize(dtype) == 4 ? Layout::kDwordTiles : Layout::kWordTiles;
}

// The last panel of a matrix whose row count is not a multiple of 16 (nr rows, nr values per k):
// the kernels' per-element sequence, one element at a time (runs once per matrix).
void LinearPartialPanel(const LinearTask& t, int64_t t0, int64_t t1, int64_t p) {
  const int64_t k = t.k, nr = t.ldo - p;
  const auto value = [&](int64_t i) -> float {
    switch (t.wdtype) {
      case DType::kF32:
        return static_cast<const float*>(t.w)[i];
      case DType::kBF16:
        return Bf16ToF32(static_cast<const uint16_t*>(t.w)[i]);
      default:
        return F16ToF32(static_cast<const uint16_t*>(t.w)[i]);
    }
  };
  const int64_t base = p * k;  // the partial panel starts after the full ones
  for (int64_t i = t0; i < t1; ++i) {
    for (int64_t j = 0; j < nr; ++j) {
      float acc = 0.f;
      for (int64_t kk = 0; kk < k; ++kk)
        acc = std::fma(t.x[i * t.ldx + kk], value(base + kk * nr + j), acc);
      t.out[i * t.ldo + p + j] = t.bias != nullptr ? acc + t.bias[p + j] : acc;
    }
  }
}

}  // namespace xinfer::cpu

#endif  // defined(__x86_64__)
