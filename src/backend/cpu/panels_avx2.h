// The parts the AVX2 broadcast-x panel kernels share (cpu_kernels_int8_panels_avx2.cc: int8
// activations; cpu_kernels_w4a16_panels_avx2.cc: F32 activations): the row mask of the short last
// tile, the output store and the driver that walks a range of rows of x and weight rows over a
// kernel's tiles. Each kernel supplies only its inner loop (the prefetch they share is in
// int8_panels_layout.h). Include it after the file's `#pragma GCC target(...)` so that it
// compiles for AVX2.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/int8_panels_layout.h"

namespace xinfer::cpu::avx2::panels {

// Lanes [0, rows) set: the rows of a half-panel in the weight's short last tile.
inline __m256i RowMask(int rows) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(rows), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// out rows r0..r0+MR-1, columns of half-panels h0..h0+NH-1 = acc + bias; masked to the rows of
// the short last tile unless kFull.
template <int MR, int NH, bool kFull>
inline void StoreTile(const QuantLinearTask& t, int64_t r0, int64_t h0, const __m256 (&acc)[MR][NH],
                      __m256i mask) {
#pragma GCC unroll 4
  for (int h = 0; h < NH; ++h) {
    const int64_t n = (h0 + h) * 8;
    const __m256 bias = t.bias == nullptr ? _mm256_setzero_ps()
                        : kFull           ? _mm256_loadu_ps(t.bias + n)
                                          : _mm256_maskload_ps(t.bias + n, mask);
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      float* out = t.out + (r0 + i) * t.ldo + n;
      const __m256 v = _mm256_add_ps(acc[i][h], bias);
      if (kFull) {
        _mm256_storeu_ps(out, v);
      } else {
        _mm256_maskstore_ps(out, mask, v);
      }
    }
  }
}

// A kernel's tile: rows r0.. of x against half-panels h0...
using PanelTileFn = void (*)(const QuantLinearTask&, int64_t, int64_t);
constexpr int kMr = 4;  // rows of x per tile at most
constexpr int kNh = 4;  // half-panels per GEMV tile at most

// The tiles RunPanels picks from, K::Tile<MR, NH, kFull> (MR rows of x on NH half-panels; kFull:
// in whole 16-row tiles, else one half of the weight's short last tile, masked): m rows of x on
// one half-panel, one row on n half-panels (for one row of x, more chains per code register), and
// m rows on the short tile.
template <class K>
struct TileTables {
  static constexpr PanelTileFn kRows[kMr] = {
      K::template Tile<1, 1, true>, K::template Tile<2, 1, true>, K::template Tile<3, 1, true>,
      K::template Tile<4, 1, true>};
  static constexpr PanelTileFn kGemv[kNh] = {
      K::template Tile<1, 1, true>, K::template Tile<1, 2, true>, K::template Tile<1, 3, true>,
      K::template Tile<1, 4, true>};
  static constexpr PanelTileFn kShort[kMr] = {
      K::template Tile<1, 1, false>, K::template Tile<2, 1, false>, K::template Tile<3, 1, false>,
      K::template Tile<4, 1, false>};
};

// Runs rows [t0, t1) of x against weight rows [n0, n1) (16-row tile bounds, or the weight's end)
// over kernel K's tiles (TileTables). Which tile computes an output element does not change its
// bits (each kernel's sequence depends on K only), so the walk is free to pick by shape.
template <class K>
void RunPanels(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  using int8_panels::kTileRows;
  using Tiles = TileTables<K>;
  const QuantTensor& w = *t.w;
  XI_CHECK_MSG(n0 % kTileRows == 0 && (n1 % kTileRows == 0 || n1 == w.rows),
               "a panel range must start and end at 16-row tiles");
  // Half-panels [h_begin, h_full) lie in whole 16-row tiles; those of the weight's short last
  // tile (fewer than 16 rows) go masked, one at a time.
  const int64_t h_begin = n0 / 8, h_full = std::min(n1, w.rows / kTileRows * kTileRows) / 8;
  // Blocks of weight rows that stay in L2 while every row of x passes over them.
  const int64_t block =
      std::max<int64_t>(4, (256 << 10) / (8 * static_cast<int64_t>(w.row_bytes())) / 4 * 4);
  for (int64_t bs = h_begin; bs < h_full; bs += block) {
    const int64_t be = std::min(h_full, bs + block);
    if (t1 - t0 == 1) {
      for (int64_t h = bs; h < be; h += kNh)
        Tiles::kGemv[std::min<int64_t>(kNh, be - h) - 1](t, t0, h);
      continue;
    }
    for (int64_t r = t0; r < t1; r += kMr) {
      const PanelTileFn tile = Tiles::kRows[std::min<int64_t>(kMr, t1 - r) - 1];
      for (int64_t h = bs; h < be; ++h) tile(t, r, h);
    }
  }
  for (int64_t h = std::max(h_begin, h_full); h * 8 < n1; ++h)
    for (int64_t r = t0; r < t1; r += kMr)
      Tiles::kShort[std::min<int64_t>(kMr, t1 - r) - 1](t, r, h);
}

}  // namespace xinfer::cpu::avx2::panels
