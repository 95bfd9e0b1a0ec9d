// AWQ g128 weights meeting BF16 activations (W4A16 with x in BF16: `--dtype bfloat16`) on
// AVX512-BF16 CPUs, broadcast-x over the 16-row tiles the other panel kernels read
// (int8_panels_layout.h: codes, scales and zero points in kDwordTiles): a tile's 16 rows fill the
// 16 lanes of a register, x broadcast from memory, one `vdpbf16ps` per two weights of a row.
//
// Why: the F32-activation W4A16 kernel (cpu_kernels_w4a16_panels_avx512.cc) spends an AND, a
// conversion and an FMA per code and 16 rows; at one sequence it is bound by those instructions
// (~33-36 GB/s of AWQ bytes from cache on a 2-core Zen 4, below that host's fast minutes' DRAM
// rate), and at 16 sequences by the FP32 FMA peak. Here a shift and a vpternlogd make two codes of
// every row BF16 values at once, and one vdpbf16ps multiplies both: per 32 weights of a tile 2
// integer ops + 1 vdpbf16ps per row of x, half the instructions at T = 1 and half the multiplies
// at T >= 16 (docs/performance.md, session 25).
//
// The codes. Dword c of a row holds elements 8c..8c+7, element 8c + p in bits 4p..4p+3. Pair p
// (0..3) is elements 8c + p and 8c + p + 4, sixteen bits apart: shifting the dword so that bits
// 4p..4p+3 land on bits 3..6 puts bits 4p+16..4p+19 on 19..22, and (v' AND 0x00780078) OR
// 0x3F803F80 makes both words the BF16 value 1 + q/16 (exact: 4 fraction bits). x is stored by
// W4A16Bf16PrepareX in the same pair order, x rounded to BF16 (nearest even): per chunk of 8,
// (x0, x4), (x1, x5), (x2, x6), (x3, x7), and its group sums X = the sum of the rounded x.
// Then sum x (1 + q/16) = X + sum x q / 16, so sum x (q - z) = 16 (dot - (1 + z/16) X).
//
// Per output element (lanes are independent): per group g of 128, a_p = the vdpbf16ps chain over
// pair p of its 16 chunks (k order), p = 0..3; dot = (a0 + a1) + (a2 + a3), zz = fma(z, 1/16, 1),
// d = fnmadd(zz, X_g, dot), acc = fma(s, d, acc) over the groups in order; out = 16 acc (exact) +
// bias. Four chains so that the one-row GEMV can read a group's blocks in memory order and still
// cover vdpbf16ps' latency. That sequence depends on K only, not on the tile, the rows of x in the
// call or the threads (batch invariance); W4A16PanelsTest evaluates it with the instruction itself.
#if defined(__x86_64__)  // x86 only; cpu_kernels_avx512_absent.cc elsewhere

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/int8_panels_layout.h"
#include "base/check.h"

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma")

#include "backend/cpu/panels_avx512.h"

namespace xinfer::cpu::avx512 {
namespace {

using int8_panels::kGroup;
using int8_panels::kTileRows;
using int8_panels::Tile;
using int8_panels::TileOf;

constexpr int64_t kUnitBytes = 4 * kTileRows;  // one dword of each of a full tile's 16 rows

// Pair p of each lane's dword as two BF16 values 1 + q/16 (see the file comment).
template <int P>
inline __m512bh Pair(__m512i v) {
  const __m512i moved = P == 0 ? _mm512_slli_epi32(v, 3) : _mm512_srli_epi32(v, 4 * P - 3);
  // (moved AND mask) OR one: vpternlogd's truth table for (A & B) | C.
  const __m512i bits = _mm512_ternarylogic_epi32(moved, _mm512_set1_epi32(0x00780078),
                                                 _mm512_set1_epi32(0x3F803F80), 0xEA);
  return reinterpret_cast<const __m512bh&>(bits);
}

// x's BF16 pair that pair p of a dword meets, broadcast to every lane (a memory operand).
inline __m512bh XPair(const uint16_t* pair) {
  int32_t bits;
  std::memcpy(&bits, pair, sizeof bits);
  const __m512i v = _mm512_set1_epi32(bits);
  return reinterpret_cast<const __m512bh&>(v);
}

// One dword of a tile (v) against the pairs xk[i][0..3] of MR rows: pair p meets chain p.
template <int MR, int P>
inline void PairStep(__m512i v, const uint16_t* const (&xk)[MR], __m512 (&a)[MR][4]) {
  const __m512bh w = Pair<P>(v);
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) a[i][P] = _mm512_dpbf16_ps(a[i][P], XPair(xk[i] + 2 * P), w);
}

template <int MR>
inline void Dword(__m512i v, const uint16_t* const (&xk)[MR], __m512 (&a)[MR][4]) {
  PairStep<MR, 0>(v, xk, a);
  PairStep<MR, 1>(v, xk, a);
  PairStep<MR, 2>(v, xk, a);
  PairStep<MR, 3>(v, xk, a);
}

// acc = fma(s, dot - (1 + z/16) X, acc) with dot = (a0 + a1) + (a2 + a3): the group epilogue of
// one tile's lanes.
inline __m512 GroupEpilogue(__m512 acc, const __m512 (&a)[4], __m512 s, __m512 zz, float xsum) {
  const __m512 dot = _mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3]));
  const __m512 d = _mm512_fnmadd_ps(zz, _mm512_set1_ps(xsum), dot);
  return _mm512_fmadd_ps(s, d, acc);
}

inline __m512 ZeroTerm(__m512 z) {
  return _mm512_fmadd_ps(z, _mm512_set1_ps(0.0625f), _mm512_set1_ps(1.f));
}

// out = 16 acc + bias (16 acc is exact).
template <int MR>
inline void Store(const QuantLinearTask& t, int64_t r0, int64_t j, __m512 (&acc)[MR],
                  __mmask16 mask) {
  __m512 scaled[MR][1];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) scaled[i][0] = _mm512_mul_ps(acc[i], _mm512_set1_ps(16.f));
  panels::StoreTiles<MR, 1>(t, r0, j, scaled, mask);
}

// MR rows of x (r0..) times tile j; `mask` the lanes of the tile's rows (all 16 but in the
// weight's short last tile).
template <int MR>
void PanelTile(const QuantLinearTask& t, int64_t r0, int64_t j, __mmask16 mask) {
  const QuantTensor& w = *t.w;
  const int64_t groups = w.cols / kGroup;
  const Tile tile = TileOf(w, j);
  const int64_t unit_bytes = 4 * tile.lanes;
  const uint16_t* x[MR];
  const float* xsum[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) {
    x[i] = t.xs + (r0 + i) * t.ldxs;
    xsum[i] = t.xsum + (r0 + i) * t.ldxsum;
  }
  __m512 acc[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) acc[i] = _mm512_setzero_ps();
  const int8_panels::NextRowsPrefetch prefetch(w, tile.base + kTileRows * w.row_bytes(), kTileRows);
  for (int64_t g = 0; g < groups; ++g) {
    __m512 a[MR][4];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) a[i][0] = a[i][1] = a[i][2] = a[i][3] = _mm512_setzero_ps();
    for (int64_t kb = g * (kGroup / 32); kb < (g + 1) * (kGroup / 32); ++kb) {
      prefetch.Block(kb);
      const uint8_t* units = int8_panels::AwqBlockOf(tile, kb).units;
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const __m512i v = _mm512_maskz_loadu_epi32(mask, units + c * unit_bytes);
        const uint16_t* xk[MR];
#pragma GCC unroll 8
        for (int i = 0; i < MR; ++i) xk[i] = x[i] + 32 * kb + 8 * c;
        Dword<MR>(v, xk, a);
      }
    }
    const __m512 s = _mm512_maskz_loadu_ps(mask, tile.s + g * tile.lanes);
    const __m512 zz = ZeroTerm(_mm512_maskz_loadu_ps(mask, tile.z + g * tile.lanes));
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) acc[i] = GroupEpilogue(acc[i], a[i], s, zz, xsum[i][g]);
  }
  Store<MR>(t, r0, j, acc, mask);
}

// How far ahead of its stream the one-row tile prefetches, into L2: the F32-activation W4A16
// GEMV's distance (cpu_kernels_w4a16_panels_avx512.cc, measured there on a 2-core Zen 4).
constexpr int64_t kGemvPrefetchBytes = 8192;

// One row of x (decode) on one whole tile at a time, its blocks in memory order, so that a
// thread's tiles are one sequential stream (interleaving two groups' blocks to lengthen the
// chains streamed 15-25 % less from DRAM), prefetched kGemvPrefetchBytes ahead; the four chains
// of a group keep vdpbf16ps' latency covered.
void GemvTile(const QuantLinearTask& t, int64_t r0, int64_t j) {
  const QuantTensor& w = *t.w;
  const int64_t groups = w.cols / kGroup;
  const Tile tile = TileOf(w, j);
  const uint16_t* x = t.xs + r0 * t.ldxs;
  const float* xsum = t.xsum + r0 * t.ldxsum;
  __m512 acc[1] = {_mm512_setzero_ps()};
  for (int64_t g = 0; g < groups; ++g) {
    __m512 a[1][4] = {
        {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()}};
#pragma GCC unroll 4
    for (int64_t b = 0; b < kGroup / 32; ++b) {
      const uint8_t* units = int8_panels::AwqBlockOf(tile, g * (kGroup / 32) + b).units;
      for (int64_t o = 0; o < 4 * kUnitBytes; o += 64)
        __builtin_prefetch(units + kGemvPrefetchBytes + o, 0, 2);
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const uint16_t* const xk[1] = {x + g * kGroup + 32 * b + 8 * c};
        Dword<1>(_mm512_loadu_si512(units + c * kUnitBytes), xk, a);
      }
    }
    const __m512 s = _mm512_loadu_ps(tile.s + g * kTileRows);
    const __m512 zz = ZeroTerm(_mm512_loadu_ps(tile.z + g * kTileRows));
    acc[0] = GroupEpilogue(acc[0], a[0], s, zz, xsum[g]);
  }
  Store<1>(t, r0, j, acc, 0xFFFF);
}

using PanelTileFn = void (*)(const QuantLinearTask&, int64_t, int64_t, __mmask16);
// Up to 6 rows of x on one tile: each pair of codes serves every row (24 chains + 6 sums + the
// dword and its pair fill the 32 registers; x comes as broadcast memory operands, the constants
// too where the compiler needs their registers). 5 rows measured no faster from DRAM and slower
// from cache (kernel_bench, session 25). panels::RunPanels' kernel.
struct Kernel {
  static constexpr int kMr = 6;
  static constexpr PanelTileFn kRows[kMr] = {PanelTile<1>, PanelTile<2>, PanelTile<3>,
                                             PanelTile<4>, PanelTile<5>, PanelTile<6>};
  static void Gemv(const QuantLinearTask& t, int64_t r, int64_t j) { GemvTile(t, r, j); }
  static void Tiles(const QuantLinearTask& t, int64_t r, int mr, int64_t j0, int64_t j1,
                    __mmask16 mask) {
    for (int64_t j = j0; j < j1; ++j) kRows[mr - 1](t, r, j, mask);
  }
};

}  // namespace

bool W4A16Bf16PanelsSupports(const QuantTensor& w, const CpuFeatures& f) {
  return f.avx512_bf16 && W4A16PanelsSupports(w, f);
}

void W4A16Bf16PrepareX(const float* x, int64_t rows, int64_t ldx, int64_t k, uint16_t* xs,
                       int64_t ldxs, float* xsum, int64_t ldxsum) {
  XI_CHECK(k % kGroup == 0);
  // Word i of a 16-word chunk pair takes word kPairOrder[i]: per chunk of 8, (0, 4), (1, 5), ...
  const __m256i order = _mm256_setr_epi16(0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * ldx;
    uint16_t* xsr = xs + r * ldxs;
    for (int64_t g = 0; g < k / kGroup; ++g) {
      __m512 lanes = _mm512_setzero_ps();
      for (int64_t e = g * kGroup; e < (g + 1) * kGroup; e += 16) {
        const __m256bh b = _mm512_cvtneps_pbh(_mm512_loadu_ps(xr + e));
        const __m256i words = reinterpret_cast<const __m256i&>(b);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(xsr + e),
                            _mm256_permutexvar_epi16(order, words));
        lanes = _mm512_add_ps(
            lanes, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(words), 16)));
      }
      // _mm512_reduce_add_ps' tree: lanes l and l + 8, then l + 4, l + 2, l + 1
      // (W4A16PanelsTest spells it out).
      xsum[r * ldxsum + g] = _mm512_reduce_add_ps(lanes);
    }
  }
}

void QuantLinearW4A16Bf16Panels(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0,
                                int64_t n1) {
  const QuantTensor& w = *t.w;
  int8_panels::CheckPlaced(w);
  XI_CHECK(w.type == QuantType::kAwq4 && t.xs != nullptr);
  panels::RunPanels<Kernel>(t, t0, t1, n0, n1);
}

}  // namespace xinfer::cpu::avx512

#pragma GCC pop_options

#endif  // defined(__x86_64__)
