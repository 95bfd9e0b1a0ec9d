// AWQ g128 and GGUF Q4_0 weights meeting int8 activations on AVX512-VNNI CPUs, broadcast-x form
// over the AVX2 int8 panel kernel's 16-row tiles (cpu_kernels_int8_panels_avx2.cc: the layouts,
// the x layout of avx2::Int8PrepareX, and the arithmetic — this kernel gives its bits): a tile's
// 16 rows fill the 16 lanes of one register, x broadcast, and vpdpbusd adds the products of 4
// codes and 4 x bytes into each lane's exact int32 block sum (the AVX2 kernel gets the same
// integer from vpmaddubsw + vpmaddwd).
//
// Why, measured on a 2-core Zen 5 (docs/performance.md, session 14): the row-major int8 kernel
// (cpu_kernels_int8_avx512.cc) reads 4 weight rows side by side, reloads x for every row and
// pays its F32 epilogue per 128 weights and row: ~14 vector ops per 64 bytes of AWQ codes at
// T = 1, and in the host's fast-bandwidth minutes the 4-bit layers streamed ~35 % slower per
// byte than the F16 lm_head. Here a block of 32 weights of 16 rows costs 4 loads, 12 integer ops
// and, per row of x, 8 vpdpbusd with 8 x broadcasts and one F32 epilogue for all 16 rows.
//
// Per output element (as the AVX2 kernel, which gives the sequences in full): isum_b = the
// exact integer dot of block b's codes with x; Q4_0 applies its scale and offset per block, AWQ
// per group of 4 blocks (gsum = fma(float(isum_b), d_b, gsum) from 0, then acc = fma(s,
// fnmadd(z, X_g, gsum), acc)); out = acc + bias (0 without one). Depends on K only (batch
// invariance).
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
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,fma,f16c")

#include "backend/cpu/panels_avx512.h"

namespace xinfer::cpu::avx512 {
namespace {

using int8_panels::kGroupBlocks;
using int8_panels::kTileRows;
using int8_panels::Tile;
using int8_panels::TileOf;

inline __m512i Broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Block kb's codes, scale and offset (int8_panels_layout.h: a tile's 16 rows fill the 16 lanes),
// and x's byte offsets for the nibbles of dword c.
struct AwqPanels : int8_panels::AwqX {
  static constexpr bool kPerGroup = true;  // one scale and zero point per 4 blocks
  using At = int8_panels::AwqBlock;
  static At Block(const Tile& tile, int64_t kb) { return int8_panels::AwqBlockOf(tile, kb); }
  static __m512 Scale(const At& at, __mmask16 m) { return _mm512_maskz_loadu_ps(m, at.scale); }
  static __m512 Offset(const At& at, __mmask16 m) { return _mm512_maskz_loadu_ps(m, at.zero); }
};

struct Q4_0Panels : int8_panels::Q4_0X {
  static constexpr bool kPerGroup = false;  // a scale per block
  using At = int8_panels::Q4_0Block;        // scale: 16 F16
  static At Block(const Tile& tile, int64_t kb) { return int8_panels::Q4_0BlockOf(tile, kb); }
  static __m512 Scale(const At& at, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, at.scale));
  }
  static __m512 Offset(const At&, __mmask16) { return _mm512_set1_ps(8.f); }
};

// The exact integer sums of block kb of NT tiles (`at`) with MR rows of x: isum[i][j] for row i
// of x and tile j, one lane per weight row.
template <class F, int MR, int NT>
inline void BlockSums(const typename F::At (&at)[NT], const int8_t* const (&xq)[MR], int64_t kb,
                      int64_t unit_bytes, __mmask16 mask, __m512i (&isum)[MR][NT]) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NT; ++j) isum[i][j] = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
#pragma GCC unroll 4
    for (int j = 0; j < NT; ++j) {
      const __m512i v = _mm512_maskz_loadu_epi32(mask, at[j].units + c * unit_bytes);
      const __m512i lo = _mm512_and_si512(v, low4);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) {
        const int8_t* xb = xq[i] + 32 * kb;
        isum[i][j] = _mm512_dpbusd_epi32(isum[i][j], lo, Broadcast4(xb + F::kLow(c)));
        isum[i][j] = _mm512_dpbusd_epi32(isum[i][j], hi, Broadcast4(xb + F::kHigh(c)));
      }
    }
  }
}

// MR rows of x (r0..) times NT tiles (j0..) of format F; `mask` the lanes of the tiles' rows (all
// 16 but in the weight's short last tile, which runs alone).
template <class F, int MR, int NT>
void PanelTile(const QuantLinearTask& t, int64_t r0, int64_t j0, __mmask16 mask) {
  const QuantTensor& w = *t.w;
  const int64_t blocks = w.cols / 32;
  Tile tile[NT];
#pragma GCC unroll 4
  for (int j = 0; j < NT; ++j) tile[j] = TileOf(w, j0 + j);
  const int64_t unit_bytes = 4 * tile[0].lanes;
  const int8_t* xq[MR];
  const float* aux[MR];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) {
    xq[i] = t.xq + (r0 + i) * t.ldxq;
    aux[i] = t.xaux + (r0 + i) * t.ldxaux;
  }
  __m512 acc[MR][NT];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NT; ++j) acc[i][j] = _mm512_setzero_ps();
  const int8_panels::NextRowsPrefetch prefetch(w, tile[0].base + NT * kTileRows * w.row_bytes(),
                                               NT * kTileRows);
  typename F::At at[NT];
  __m512i isum[MR][NT];
  if constexpr (F::kPerGroup) {
    // AWQ: per block gsum += d_b float(isum_b), per group acc += s (gsum - z X_g) (the file
    // comment).
    for (int64_t g = 0; g < blocks / kGroupBlocks; ++g) {
      __m512 gsum[MR][NT];
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < NT; ++j) gsum[i][j] = _mm512_setzero_ps();
#pragma GCC unroll 4
      for (int64_t b = 0; b < kGroupBlocks; ++b) {
        const int64_t kb = g * kGroupBlocks + b;
        prefetch.Block(kb);
#pragma GCC unroll 4
        for (int j = 0; j < NT; ++j) at[j] = F::Block(tile[j], kb);
        BlockSums<F, MR, NT>(at, xq, kb, unit_bytes, mask, isum);
#pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) {
          const __m512 d = _mm512_set1_ps(aux[i][2 * kb]);
#pragma GCC unroll 4
          for (int j = 0; j < NT; ++j)
            gsum[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i][j]), d, gsum[i][j]);
        }
      }
#pragma GCC unroll 4
      for (int j = 0; j < NT; ++j) {
        const __m512 s = F::Scale(at[j], mask);
        const __m512 z = F::Offset(at[j], mask);
#pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) {
          const __m512 zx = _mm512_set1_ps(aux[i][int8_panels::AwqGroupXTermAt(w.cols) + g]);
          acc[i][j] = _mm512_fmadd_ps(s, _mm512_fnmadd_ps(z, zx, gsum[i][j]), acc[i][j]);
        }
      }
    }
  } else {
    for (int64_t kb = 0; kb < blocks; ++kb) {
      prefetch.Block(kb);
#pragma GCC unroll 4
      for (int j = 0; j < NT; ++j) at[j] = F::Block(tile[j], kb);
      BlockSums<F, MR, NT>(at, xq, kb, unit_bytes, mask, isum);
#pragma GCC unroll 4
      for (int j = 0; j < NT; ++j) {
        const __m512 s = F::Scale(at[j], mask);
        const __m512 offset = F::Offset(at[j], mask);
#pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) {
          const float* a = aux[i] + 2 * kb;  // the block's d and int8 sum
          const __m512 dot =
              _mm512_fnmadd_ps(offset, _mm512_set1_ps(a[1]), _mm512_cvtepi32_ps(isum[i][j]));
          acc[i][j] = _mm512_fmadd_ps(dot, _mm512_mul_ps(s, _mm512_set1_ps(a[0])), acc[i][j]);
        }
      }
    }
  }
  panels::StoreTiles<MR, NT>(t, r0, j0, acc, mask);
}

// One row of x (decode) on one whole tile at a time, so that a thread's tiles are one sequential
// stream, prefetched `ahead` bytes on. (Four tiles side by side, as the AVX2 kernel's GEMV, are
// four streams: the 151936 x 896 shape from DRAM read 26-35 GB/s that way, 34-60 so, 2-core Zen 5;
// from L3 59-107 against 96-143.) The block's integer sum is split into four partial sums (one
// per dword of the block's rows) added at the end — integers, so exactly the same sum — to keep
// the vpdpbusd chain short. The stream is prefetched as the dense decode tiles' (cpu_kernels.h,
// DecodePrefetchBytes): 8 KiB ahead with the read-once hint — on AMD non-temporal: AWQ g128
// one-sequence decode 0.81 -> 0.85 of its paired roofline in the host's ~45 GB/s minutes
// against prefetcht1 4 KiB ahead (2-core Zen 5, 18-19 runs each; docs/performance.md, session
// 16) —, on Intel into L2, and not at all on Zen 4.
template <class F>
void GemvTile(const QuantLinearTask& t, int64_t r0, int64_t j, int64_t ahead) {
  const QuantTensor& w = *t.w;
  const int64_t blocks = w.cols / 32;
  const Tile tile = TileOf(w, j);
  const int64_t unit_bytes = 4 * kTileRows;
  const int8_t* xq = t.xq + r0 * t.ldxq;
  const float* aux = t.xaux + r0 * t.ldxaux;
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __mmask16 all = 0xFFFF;
  const bool non_temporal = DetectCpuFeatures().read_once_non_temporal;
  __m512 acc = _mm512_setzero_ps();
  __m512 gsum = _mm512_setzero_ps();  // AWQ: the group's sum of d_b float(isum_b) so far
  for (int64_t kb = 0; kb < blocks; ++kb) {
    const typename F::At at = F::Block(tile, kb);
    if (ahead != 0) PrefetchLines(at.units + ahead, 4 * unit_bytes, non_temporal);
    const int8_t* xb = xq + 32 * kb;
    __m512i part[4];
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m512i v = _mm512_loadu_si512(at.units + c * unit_bytes);
      const __m512i lo = _mm512_and_si512(v, low4);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
      part[c] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, Broadcast4(xb + F::kLow(c)));
      part[c] = _mm512_dpbusd_epi32(part[c], hi, Broadcast4(xb + F::kHigh(c)));
    }
    const __m512i isum =
        _mm512_add_epi32(_mm512_add_epi32(part[0], part[1]), _mm512_add_epi32(part[2], part[3]));
    const float* a = aux + 2 * kb;
    if constexpr (F::kPerGroup) {
      const int64_t b = kb % kGroupBlocks;
      if (b == 0) gsum = _mm512_setzero_ps();
      gsum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_set1_ps(a[0]), gsum);
      if (b + 1 < kGroupBlocks) continue;
      const __m512 zx =
          _mm512_set1_ps(aux[int8_panels::AwqGroupXTermAt(w.cols) + kb / kGroupBlocks]);
      acc = _mm512_fmadd_ps(F::Scale(at, all), _mm512_fnmadd_ps(F::Offset(at, all), zx, gsum), acc);
    } else {
      const __m512 dot =
          _mm512_fnmadd_ps(F::Offset(at, all), _mm512_set1_ps(a[1]), _mm512_cvtepi32_ps(isum));
      acc = _mm512_fmadd_ps(dot, _mm512_mul_ps(F::Scale(at, all), _mm512_set1_ps(a[0])), acc);
    }
  }
  const int64_t n = j * kTileRows;
  const __m512 bias = t.bias == nullptr ? _mm512_setzero_ps() : _mm512_loadu_ps(t.bias + n);
  _mm512_storeu_ps(t.out + r0 * t.ldo + n, _mm512_add_ps(acc, bias));
}

using PanelTileFn = void (*)(const QuantLinearTask&, int64_t, int64_t, __mmask16);
// Up to 4 rows of x on two tiles (16 accumulators and block sums), or on one (the range's odd
// last tile, and the weight's short last tile, masked): panels::RunPanels' kernel.
template <class F>
struct Kernel {
  static constexpr int kMr = 4;
  static constexpr PanelTileFn kPairs[kMr] = {PanelTile<F, 1, 2>, PanelTile<F, 2, 2>,
                                              PanelTile<F, 3, 2>, PanelTile<F, 4, 2>};
  static constexpr PanelTileFn kSingles[kMr] = {PanelTile<F, 1, 1>, PanelTile<F, 2, 1>,
                                                PanelTile<F, 3, 1>, PanelTile<F, 4, 1>};
  static void Gemv(const QuantLinearTask& t, int64_t r, int64_t j) {
    static const int64_t ahead = DecodePrefetchBytes(DetectCpuFeatures());
    GemvTile<F>(t, r, j, ahead);
  }
  static void Tiles(const QuantLinearTask& t, int64_t r, int mr, int64_t j0, int64_t j1,
                    __mmask16 mask) {
    int64_t j = j0;
    for (; j + 2 <= j1; j += 2) kPairs[mr - 1](t, r, j, mask);
    if (j < j1) kSingles[mr - 1](t, r, j, mask);
  }
};

}  // namespace

bool Int8PanelsSupports(const QuantTensor& w, const CpuFeatures& f) {
  return f.avx512 && f.avx512_vnni && avx2::Int8PanelsSupports(w, f);
}

void QuantLinearInt8Panels(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0,
                           int64_t n1) {
  int8_panels::CheckPlaced(*t.w);
  if (t.w->type == QuantType::kAwq4) return panels::RunPanels<Kernel<AwqPanels>>(t, t0, t1, n0, n1);
  panels::RunPanels<Kernel<Q4_0Panels>>(t, t0, t1, n0, n1);
}

}  // namespace xinfer::cpu::avx512

#pragma GCC pop_options

#endif  // defined(__x86_64__)
