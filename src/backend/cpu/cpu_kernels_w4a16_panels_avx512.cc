// AWQ g128 weights meeting F32 activations (W4A16, AWQ's default path) on AVX-512 CPUs,
// broadcast-x over the AVX2 W4A16 kernel's 16-row tiles (cpu_kernels_w4a16_panels_avx2.cc: the
// layout, x prescaled by avx2::W4A16PrepareX, and the arithmetic — this kernel gives its bits): a
// tile's 16 rows fill the 16 lanes of one register, x broadcast from memory. Per 16 rows and
// element 8c + p of x: one AND (p = 7: a shift), one exact conversion, and one FMA per row of x.
//
// Why, measured on a 2-core Zen 4 (docs/performance.md, session 19): the row-major vdpbf16ps
// kernel (cpu_kernels_nibble_bf16.cc) multiplies every weight twice (x's BF16 hi and lo halves)
// after unpacking its nibbles, ~0.23 instructions per weight: from cache it streams ~35 GB/s of
// AWQ bytes at T = 1 on Zen 4 (double-pumped 512-bit units), about the DRAM rate, and ~105
// GFLOP/s at T = 16 (the AVX2 W4A16 kernel on the same host, XINFER_ISA=avx2: 140-165). This one:
// ~210 GFLOP/s at T = 16 and 64 (~90 % of the FP32 FMA peak: a code's AND and conversion serve 6
// rows of x), and at T = 1 about the vdpbf16ps kernel's rate — three zmm ops per 16 weights, each
// on two of Zen 4's four 256-bit pipes, ~33-36 GB/s from cache; AWQ g128 16 sequences 116 -> 191
// tok/s, one sequence 0.82 -> 0.80 of its paired roofline (within the host's noise).
//
// Per output element (lanes are independent, so the AVX2 kernel's sequence): per group g of 128,
// a0 = the FMA chain of q x x over the group's even p (k order), a1 over the odd p, dot = a0 + a1,
// d = dot - z x xsum_g (one fnmadd), acc = fma(s, d, acc) over the groups in order; out = acc +
// bias. The one-row tile runs two groups' chains side by side (four chains: the FMA latency) and
// applies their epilogues in group order, which keeps every value's sequence.
#if defined(__x86_64__)  // x86 only; cpu_kernels_avx512_absent.cc elsewhere

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/int8_panels_layout.h"
#include "base/check.h"

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma")

#include "backend/cpu/panels_avx512.h"

namespace xinfer::cpu::avx512 {
namespace {

using int8_panels::kGroup;
using int8_panels::kTileRows;
using int8_panels::Tile;
using int8_panels::TileOf;

constexpr int64_t kUnitBytes = 4 * kTileRows;  // one dword of each of a full tile's 16 rows

// Code p (0..7) of each lane's dword, times 16^p for p < 7 (the AVX2 kernel's file comment).
template <int P>
inline __m512 Code(__m512i v) {
  if constexpr (P == 7) return _mm512_cvtepi32_ps(_mm512_srli_epi32(v, 28));
  return _mm512_cvtepi32_ps(_mm512_and_si512(v, _mm512_set1_epi32(15 << (4 * P))));
}

// One dword of NT tiles (v[j]) against x elements xk[i][0..7] of MR rows: code p meets chain
// p % 2.
template <int MR, int NT, int P>
inline void CodeStep(const __m512i (&v)[NT], const float* const (&xk)[MR], __m512 (&a)[MR][NT][2]) {
#pragma GCC unroll 4
  for (int j = 0; j < NT; ++j) {
    const __m512 code = Code<P>(v[j]);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
      a[i][j][P % 2] = _mm512_fmadd_ps(code, _mm512_set1_ps(xk[i][P]), a[i][j][P % 2]);
  }
}

template <int MR, int NT>
inline void Dword(const __m512i (&v)[NT], const float* const (&xk)[MR], __m512 (&a)[MR][NT][2]) {
  CodeStep<MR, NT, 0>(v, xk, a);
  CodeStep<MR, NT, 1>(v, xk, a);
  CodeStep<MR, NT, 2>(v, xk, a);
  CodeStep<MR, NT, 3>(v, xk, a);
  CodeStep<MR, NT, 4>(v, xk, a);
  CodeStep<MR, NT, 5>(v, xk, a);
  CodeStep<MR, NT, 6>(v, xk, a);
  CodeStep<MR, NT, 7>(v, xk, a);
}

// acc = fma(s, (a0 + a1) - z x xsum, acc): the group epilogue of one tile's lanes.
inline __m512 GroupEpilogue(__m512 acc, const __m512 (&a)[2], __m512 s, __m512 z, float xsum) {
  const __m512 d = _mm512_fnmadd_ps(z, _mm512_set1_ps(xsum), _mm512_add_ps(a[0], a[1]));
  return _mm512_fmadd_ps(s, d, acc);
}

// MR rows of x (r0..) times NT tiles (j0..); `mask` the lanes of the tiles' rows (all 16 but in
// the weight's short last tile, which runs alone).
template <int MR, int NT>
void PanelTile(const QuantLinearTask& t, int64_t r0, int64_t j0, __mmask16 mask) {
  const QuantTensor& w = *t.w;
  const int64_t groups = w.cols / kGroup;
  Tile tile[NT];
#pragma GCC unroll 4
  for (int j = 0; j < NT; ++j) tile[j] = TileOf(w, j0 + j);
  const int64_t unit_bytes = 4 * tile[0].lanes;
  const float* x[MR];
  const float* xsum[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    x[i] = t.x + (r0 + i) * t.ldx;
    xsum[i] = t.xsum + (r0 + i) * t.ldxsum;
  }
  __m512 acc[MR][NT];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NT; ++j) acc[i][j] = _mm512_setzero_ps();
  const int8_panels::NextRowsPrefetch prefetch(w, tile[0].base + NT * kTileRows * w.row_bytes(),
                                               NT * kTileRows);
  for (int64_t g = 0; g < groups; ++g) {
    __m512 a[MR][NT][2];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int j = 0; j < NT; ++j) a[i][j][0] = a[i][j][1] = _mm512_setzero_ps();
    for (int64_t kb = g * (kGroup / 32); kb < (g + 1) * (kGroup / 32); ++kb) {
      prefetch.Block(kb);
      const uint8_t* units[NT];
#pragma GCC unroll 4
      for (int j = 0; j < NT; ++j) units[j] = int8_panels::AwqBlockOf(tile[j], kb).units;
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        __m512i v[NT];
#pragma GCC unroll 4
        for (int j = 0; j < NT; ++j)
          v[j] = _mm512_maskz_loadu_epi32(mask, units[j] + c * unit_bytes);
        const float* xk[MR];
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) xk[i] = x[i] + 32 * kb + 8 * c;
        Dword<MR, NT>(v, xk, a);
      }
    }
#pragma GCC unroll 4
    for (int j = 0; j < NT; ++j) {
      const __m512 s = _mm512_maskz_loadu_ps(mask, tile[j].s + g * tile[j].lanes);
      const __m512 z = _mm512_maskz_loadu_ps(mask, tile[j].z + g * tile[j].lanes);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) acc[i][j] = GroupEpilogue(acc[i][j], a[i][j], s, z, xsum[i][g]);
    }
  }
  panels::StoreTiles<MR, NT>(t, r0, j0, acc, mask);
}

// How far ahead of its stream the one-row tile prefetches, into L2. On a 2-core Zen 4 the
// 151936 x 896 shape from DRAM read 27-30 GB/s so, against 19-21 with the non-temporal prefetch the
// int8 panel GEMV takes (kReadOncePrefetchBytes) and 13-15 with none; 4, 12 and 16 KiB about the
// same (docs/performance.md, session 19).
constexpr int64_t kGemvPrefetchBytes = 8192;

// NG groups (g..) of one whole tile against one row of x, their chains side by side; the
// epilogues in group order.
template <int NG>
inline __m512 GemvGroups(const Tile& tile, const float* x, const float* xsum, int64_t g,
                         __m512 acc) {
  __m512 a[NG][1][1][2];  // per group, Dword's [rows of x][tiles][chain]
#pragma GCC unroll 2
  for (int q = 0; q < NG; ++q) a[q][0][0][0] = a[q][0][0][1] = _mm512_setzero_ps();
  for (int64_t b = 0; b < kGroup / 32; ++b) {
#pragma GCC unroll 2
    for (int q = 0; q < NG; ++q) {
      const uint8_t* units = int8_panels::AwqBlockOf(tile, (g + q) * (kGroup / 32) + b).units;
      for (int64_t o = 0; o < 4 * kUnitBytes; o += 64)
        __builtin_prefetch(units + kGemvPrefetchBytes + o, 0, 2);
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const __m512i v[1] = {_mm512_loadu_si512(units + c * kUnitBytes)};
        const float* const xk[1] = {x + (g + q) * kGroup + 32 * b + 8 * c};
        Dword<1, 1>(v, xk, a[q]);
      }
    }
  }
#pragma GCC unroll 2
  for (int q = 0; q < NG; ++q) {
    const __m512 s = _mm512_loadu_ps(tile.s + (g + q) * kTileRows);
    const __m512 z = _mm512_loadu_ps(tile.z + (g + q) * kTileRows);
    acc = GroupEpilogue(acc, a[q][0][0], s, z, xsum[g + q]);
  }
  return acc;
}

// One row of x (decode) on one whole tile at a time, so that a thread's tiles are one sequential
// stream (as the int8 panel GEMV), prefetched kGemvPrefetchBytes ahead.
void GemvTile(const QuantLinearTask& t, int64_t r0, int64_t j) {
  const QuantTensor& w = *t.w;
  const int64_t groups = w.cols / kGroup;
  const Tile tile = TileOf(w, j);
  const float* x = t.x + r0 * t.ldx;
  const float* xsum = t.xsum + r0 * t.ldxsum;
  __m512 acc = _mm512_setzero_ps();
  int64_t g = 0;
  for (; g + 2 <= groups; g += 2) acc = GemvGroups<2>(tile, x, xsum, g, acc);
  if (g < groups) acc = GemvGroups<1>(tile, x, xsum, g, acc);
  const int64_t n = j * kTileRows;
  const __m512 bias = t.bias == nullptr ? _mm512_setzero_ps() : _mm512_loadu_ps(t.bias + n);
  _mm512_storeu_ps(t.out + r0 * t.ldo + n, _mm512_add_ps(acc, bias));
}

using PanelTileFn = void (*)(const QuantLinearTask&, int64_t, int64_t, __mmask16);
// Up to 6 rows of x on one tile: each code serves every row (12 chains + 6 sums + the code and
// its dword fill 20 of the 32 registers; x comes as broadcast memory operands). panels::RunPanels'
// kernel.
struct Kernel {
  static constexpr int kMr = 6;
  static constexpr PanelTileFn kRows[kMr] = {PanelTile<1, 1>, PanelTile<2, 1>, PanelTile<3, 1>,
                                             PanelTile<4, 1>, PanelTile<5, 1>, PanelTile<6, 1>};
  static void Gemv(const QuantLinearTask& t, int64_t r, int64_t j) { GemvTile(t, r, j); }
  static void Tiles(const QuantLinearTask& t, int64_t r, int mr, int64_t j0, int64_t j1,
                    __mmask16 mask) {
    for (int64_t j = j0; j < j1; ++j) kRows[mr - 1](t, r, j, mask);
  }
};

}  // namespace

bool W4A16PanelsSupports(const QuantTensor& w, const CpuFeatures& f) {
  return f.avx512 && avx2::W4A16PanelsSupports(w, f);
}

void QuantLinearW4A16Panels(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0,
                            int64_t n1) {
  const QuantTensor& w = *t.w;
  int8_panels::CheckPlaced(w);
  XI_CHECK(w.type == QuantType::kAwq4);
  panels::RunPanels<Kernel>(t, t0, t1, n0, n1);
}

}  // namespace xinfer::cpu::avx512

#pragma GCC pop_options

#endif  // defined(__x86_64__)
