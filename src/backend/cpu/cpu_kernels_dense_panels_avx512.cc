// Dense Linear (F32, BF16, F16 weights; F32 activations) on AVX-512 CPUs, broadcast-x form over
// the same 16-row panels as the AVX2 kernel (cpu_kernels_dense_panels_avx2.cc; tensor.h:
// kDwordTiles for F32, kWordTiles for BF16/F16): one output row per 32-bit lane of a 512-bit
// register, so a panel's k-step is one register, and x is broadcast.
//
// Why, measured on a 2-core Zen 5 (two 512-bit FMA pipes, ~70 GB/s of DRAM reads; see
// docs/performance.md, session 13): the row-tile kernels (cpu_kernels_avx512.cc) keep 16 partial
// sums per output row and reduce them at the end, reload x for every 6 weight rows and, for one
// row of x, read a tile's 6 rows as one stream; here a tile of up to 8 rows of x meets up to 6
// panels with one F32 FMA per (row of x, panel) per k — no reduction, no permuted copy of x — and
// a decode-sized x reads 4 panels side by side.
//
// Arithmetic: exactly the AVX2 panel kernel's, so the two give the same bits: output element
// (t, n) is
//   acc = 0; for k in 0..K-1: acc = fma(x[t, k], w[n, k], acc);  out = acc (+ bias[n])
// in F32, whatever the tile, the rows of x in the call or the threads (batch-invariant).
#if defined(__x86_64__)  // x86 only; cpu_kernels_avx512_absent.cc elsewhere

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "backend/cpu/cpu_kernels.h"
#include "base/check.h"
#include "tensor/dtype.h"

// GCC 12 reports the intrinsics' _mm512_undefined_* pass-through operands as maybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c")

namespace xinfer::cpu::avx512 {
namespace {

constexpr int64_t kRows = kDwordTileRows;  // weight rows per panel: one register of 16 lanes
constexpr int kMr = 8;                     // rows of x per tile

// The 16 weights of one k of a panel, in row order, as F32.
struct F32Panel {
  using T = float;
  static __m512 Load(const float* p) { return _mm512_loadu_ps(p); }
};
struct F16Panel {
  using T = uint16_t;
  static __m512 Load(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
};
struct Bf16Panel {
  using T = uint16_t;
  static __m512 Load(const uint16_t* p) {
    const __m512i v =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  }
};

// MR rows of x (ldx apart) times NP consecutive full panels (16 rows, K values each): MR x NP
// accumulators + NP weight registers + a broadcast, within the 32 registers. One row of x takes 4
// panels (four FMA chains in flight and four weight streams for decode).
template <class P, int MR, int NP>
__attribute__((noinline)) void PanelTile(const float* x, int64_t ldx, const typename P::T* panel,
                                         int64_t k, const float* bias, float* out, int64_t ldo) {
  static_assert(MR >= 1 && NP >= 1 && MR * NP + NP < 32);
  __m512 acc[MR][NP];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NP; ++j) acc[i][j] = _mm512_setzero_ps();
  const int64_t panel_stride = k * kRows;
  for (int64_t kk = 0; kk < k; ++kk) {
    __m512 w[NP];
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) w[p] = P::Load(panel + p * panel_stride + kk * kRows);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 xb = _mm512_set1_ps(x[i * ldx + kk]);
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) acc[i][p] = _mm512_fmadd_ps(xb, w[p], acc[i][p]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) {
      __m512 v = acc[i][p];
      if (bias != nullptr) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + p * kRows));
      _mm512_storeu_ps(out + i * ldo + p * kRows, v);
    }
}

template <class P>
using PanelTileFn = void (*)(const float*, int64_t, const typename P::T*, int64_t, const float*,
                             float*, int64_t);
// Panels per tile for MR rows of x, and the tiles by [MR][NP].
constexpr int MaxPanels(int mr) { return mr <= 2 ? 4 : mr <= 4 ? 6 : 3; }
template <class P, int MR, int NP>
constexpr PanelTileFn<P> TileOrNull() {
  if constexpr (NP <= MaxPanels(MR)) {
    return PanelTile<P, MR, NP>;
  } else {
    return nullptr;
  }
}
template <class P, int MR>
constexpr PanelTileFn<P> kRow[6] = {TileOrNull<P, MR, 1>(), TileOrNull<P, MR, 2>(),
                                    TileOrNull<P, MR, 3>(), TileOrNull<P, MR, 4>(),
                                    TileOrNull<P, MR, 5>(), TileOrNull<P, MR, 6>()};
template <class P>
constexpr const PanelTileFn<P>* kTiles[kMr] = {kRow<P, 1>, kRow<P, 2>, kRow<P, 3>, kRow<P, 4>,
                                               kRow<P, 5>, kRow<P, 6>, kRow<P, 7>, kRow<P, 8>};

template <class P>
void LinearPanelsTyped(const LinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  using T = typename P::T;
  const T* w = static_cast<const T*>(t.w);
  const int64_t k = t.k, n = t.ldo;                          // the weight has ldo rows
  const int64_t full_end = std::min(n1, n / kRows * kRows);  // rows in full panels
  // With more than one tile of x, blocks of panels of about 256 KiB stay in L2 while every tile
  // of x passes over them; a decode-sized x (one tile) meets each panel once, as it streams in.
  // A block holds at least the panels of one full tile (MaxPanels(kMr)), even past the budget: at
  // K = 4864 one panel is 152-304 KiB, and one-panel tiles ran at 310 GFLOP/s against 410 for
  // three (2-core Zen 5, kernel_bench's down-projection shapes).
  const int64_t panel_bytes = k * kRows * static_cast<int64_t>(sizeof(T));
  const int64_t block = t1 - t0 <= kMr
                            ? std::max<int64_t>(full_end - n0, kRows)
                            : std::max<int64_t>(MaxPanels(kMr), (256 << 10) / panel_bytes) * kRows;
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

}  // namespace xinfer::cpu::avx512

#pragma GCC pop_options

#endif  // defined(__x86_64__)
