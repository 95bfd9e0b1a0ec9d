// The parts the AVX-512 broadcast-x panel kernels share (cpu_kernels_int8_panels_avx512.cc: int8
// activations; cpu_kernels_w4a16_panels_avx512.cc: F32 activations) over the 16-row tiles of
// int8_panels_layout.h (one tile's rows in the 16 lanes of a register): the output store and the
// driver that walks a range of rows of x and weight tiles. Each kernel supplies its tiles.
// Include it after the file's `#pragma GCC target(...)` so that it compiles for AVX-512.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/int8_panels_layout.h"
#include "base/check.h"

namespace xinfer::cpu::avx512::panels {

// out rows r0..r0+MR-1, columns of tiles j0..j0+NT-1 = acc + bias, in the lanes of `mask`.
template <int MR, int NT>
inline void StoreTiles(const QuantLinearTask& t, int64_t r0, int64_t j0,
                       const __m512 (&acc)[MR][NT], __mmask16 mask) {
#pragma GCC unroll 4
  for (int j = 0; j < NT; ++j) {
    const int64_t n = (j0 + j) * int8_panels::kTileRows;
    const __m512 bias =
        t.bias == nullptr ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask, t.bias + n);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
      _mm512_mask_storeu_ps(t.out + (r0 + i) * t.ldo + n, mask, _mm512_add_ps(acc[i][j], bias));
  }
}

// Runs rows [t0, t1) of x against weight rows [n0, n1) (16-row tile bounds, or the weight's end)
// over kernel K: K::kMr rows of x per call at most; K::Gemv(t, r, j) one row of x on whole tile j;
// K::Tiles(t, r, mr, j0, j1, mask) rows r..r+mr-1 on tiles [j0, j1) in the lanes of `mask`.
// Which tile computes an output element does not change its bits (each kernel's sequence depends
// on K only), so the walk is free to pick by shape.
template <class K>
void RunPanels(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  using int8_panels::kTileRows;
  const QuantTensor& w = *t.w;
  XI_CHECK_MSG(n0 % kTileRows == 0 && (n1 % kTileRows == 0 || n1 == w.rows),
               "a panel range must start and end at 16-row tiles");
  // Tiles [j_begin, j_full) are whole; the weight's short last tile (fewer than 16 rows) goes
  // masked.
  const int64_t j_begin = n0 / kTileRows;
  const int64_t j_full = std::min(n1, w.rows / kTileRows * kTileRows) / kTileRows;
  // Blocks of tiles that stay in L2 while every row of x passes over them.
  const int64_t block =
      std::max<int64_t>(4, (256 << 10) / (kTileRows * static_cast<int64_t>(w.row_bytes())) / 4 * 4);
  for (int64_t bs = j_begin; bs < j_full; bs += block) {
    const int64_t be = std::min(j_full, bs + block);
    if (t1 - t0 == 1) {
      for (int64_t j = bs; j < be; ++j) K::Gemv(t, t0, j);
      continue;
    }
    for (int64_t r = t0; r < t1; r += K::kMr)
      K::Tiles(t, r, static_cast<int>(std::min<int64_t>(K::kMr, t1 - r)), bs, be, 0xFFFF);
  }
  if (n1 > j_full * kTileRows && j_full * kTileRows >= n0) {
    const int64_t lanes = w.rows - j_full * kTileRows;
    const __mmask16 mask = static_cast<__mmask16>((1u << lanes) - 1);
    for (int64_t r = t0; r < t1; r += K::kMr)
      K::Tiles(t, r, static_cast<int>(std::min<int64_t>(K::kMr, t1 - r)), j_full, j_full + 1, mask);
  }
}

}  // namespace xinfer::cpu::avx512::panels
