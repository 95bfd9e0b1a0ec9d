// AWQ g128 and GGUF Q4_0 weights meeting int8 activations on AVX2 CPUs without AVX512-VNNI (Hygon
// C86, Zen 1-3, Intel before Ice Lake), broadcast-x form: the weights kept in 16-row tiles
// (tensor.h; stored so at load by CpuBackend::PlaceWeights) — AWQ's codes, scales and zero points
// in kDwordTiles, Q4_0's blocks in kQ4_0Tiles (per block the 16 rows' F16 scales, then their codes
// as dwords side by side) —, one output row per 32-bit lane, x broadcast. Without it AWQ runs
// Highway's dequantize-to-a-panel path with F32 activations on these CPUs, and Q4_0 the row-major
// AVX2 int8 kernel (cpu_kernels_int8_avx2.cc, ~13 vector ops per 32 weights and row of x).
//
// Why broadcast x: a row-major int8 kernel gives each vpmaddubsw 32 weights of one row, and needs
// a horizontal sum per row and F32 work per block of 32 and row. Here one vpmaddubsw multiplies
// 4 nibbles of each of 8 rows with 4 x values broadcast to every lane; the codes are unsigned
// (0..15: AWQ's q, Q4_0's q before its -8), so no sign trick, and the 16-bit pair sums of a
// block's 8 vpmaddubsw (32 products per row, |sum| <= 32 x 15 x 127 = 60960 over two 16-bit
// lanes, <= 30480 in each) add up in 16 bits without saturating; one vpmaddwd per block and 8
// rows makes them int32. The x block scale, the weight scale and the offset (AWQ's zero point,
// Q4_0's 8) then apply to 8 rows per instruction.
//
// x (Int8PrepareX): blocks of 32 quantized as for the GGUF formats (d = max|x| / 127, q =
// round-to-nearest-even(x / d), aux per block: d and the block's int8 sum). The low nibbles of a
// weight dword meet 4 x bytes and the high ones another 4, the weights used as stored:
//   AWQ (Int8XLayout::kAwqPanels): dword c of a row holds elements 8c..8c+7, element 8c + 2j in
//     byte j's low nibble and 8c + 2j + 1 in its high one, so each 8-element chunk of x is stored
//     as its even elements, then its odd ones: low nibbles meet x bytes 8c..8c+3, high 8c+4..8c+7.
//   Q4_0 (kQ4_0Panels): dword c (0..3) of a block holds its bytes 4c..4c+3, elements 4c..4c+3 low
//     and 16 + 4c.. high; x in element order: low nibbles meet x bytes 4c.., high 16 + 4c...
//
// Per output element and block b: isum_b = the exact integer dot of the codes with x. Q4_0
// (a scale per block): dot = float(isum_b) - 8 x (the block's int8 sum) — exact, both are
// integers below 2^17 — and acc = fma(dot, s x d_b, acc). AWQ (a scale s and a zero point z per
// group of 4 blocks): per block gsum = fma(float(isum_b), d_b, gsum) from 0, per group
// acc = fma(s, fnmadd(z, X_g, gsum), acc), X_g = sum of d_b x (block b's int8 sum) as
// int8_panels::AwqGroupXTerm rounds it, computed once per call by Int8PrepareX. Per block and
// row of x that is one FMA on the multiply ports instead of three (the zero point, s x d_b and
// the FMA) beside the vpdpbusd's / vpmaddubsw's: on a 2-core Zen 4 the AVX-512 tile at 16-64
// rows of x +10-30 % (docs/performance.md, session 27). Its rounding is relative to x q and
// z x rather than to their difference (AWQ codes carry no sign), ~2^-24 of those terms: far
// below x's int8 rounding. out = acc + bias. Those sequences depend on K only, not on the tile,
// the rows of x in the call or the threads (batch invariance).
#if defined(__x86_64__)  // x86 only; cpu_kernels_avx512_absent.cc elsewhere

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/int8_panels_layout.h"

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,bmi2")

#include "backend/cpu/panels_avx2.h"

namespace xinfer::cpu::avx2 {
namespace {

using int8_panels::Half;
using int8_panels::HalfOf;
using int8_panels::kGroupBlocks;
using int8_panels::kTileRows;

inline __m256i Broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Block kb's codes, scales and offset for one half-panel (int8_panels_layout.h, the half's 8
// lanes of the tile's 16), and x's byte offsets for the nibbles of dword c.
struct AwqPanels : int8_panels::AwqX {
  static constexpr bool kPerGroup = true;  // one scale and zero point per 4 blocks
  using At = int8_panels::AwqBlock;
  static At Block(const QuantTensor&, const Half& half, int64_t kb) {
    At at = int8_panels::AwqBlockOf(half.tile, kb);
    return {at.units + half.part * 32, at.scale + half.part * 8, at.zero + half.part * 8};
  }
  template <bool kFull>
  static __m256 Scale(const At& at, __m256i mask) {
    return kFull ? _mm256_loadu_ps(at.scale) : _mm256_maskload_ps(at.scale, mask);
  }
  template <bool kFull>
  static __m256 Offset(const At& at, __m256i mask) {
    return kFull ? _mm256_loadu_ps(at.zero) : _mm256_maskload_ps(at.zero, mask);
  }
};

struct Q4_0Panels : int8_panels::Q4_0X {
  static constexpr bool kPerGroup = false;  // a scale per block
  using At = int8_panels::Q4_0Block;        // scale: 8 F16
  static At Block(const QuantTensor&, const Half& half, int64_t kb) {
    At at = int8_panels::Q4_0BlockOf(half.tile, kb);
    return {at.units + half.part * 32, at.scale + half.part * 16};
  }
  template <bool kFull>
  static __m256 Scale(const At& at, __m256i mask) {
    if (kFull) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(at.scale)));
    // The short last tile: its scales end 2 x rows bytes in; never read past them.
    alignas(16) uint16_t h[8] = {};
    const int rows = _mm256_movemask_ps(_mm256_castsi256_ps(mask));
    for (int i = 0; i < 8; ++i)
      if (rows >> i & 1) std::memcpy(&h[i], at.scale + 2 * i, 2);
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
  }
  template <bool kFull>
  static __m256 Offset(const At&, __m256i) {
    return _mm256_set1_ps(8.f);
  }
};

// The exact integer sums of block kb of NH half-panels (`at`) with MR rows of x: isum[i][h] for
// row i of x and half h, one lane per weight row (int32, from the 16-bit pair sums).
template <class F, int MR, int NH, bool kFull>
inline void BlockSums(const typename F::At (&at)[NH], const int8_t* const (&xq)[MR], int64_t kb,
                      int64_t unit_bytes, __m256i mask, __m256i (&isum)[MR][NH]) {
  const __m256i low4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int h = 0; h < NH; ++h) isum[i][h] = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
#pragma GCC unroll 4
    for (int h = 0; h < NH; ++h) {
      const auto* unit = reinterpret_cast<const int*>(at[h].units + c * unit_bytes);
      const __m256i v = kFull ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(unit))
                              : _mm256_maskload_epi32(unit, mask);
      const __m256i lo = _mm256_and_si256(v, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i) {
        const int8_t* xb = xq[i] + 32 * kb;
        isum[i][h] = _mm256_add_epi16(
            isum[i][h], _mm256_add_epi16(_mm256_maddubs_epi16(lo, Broadcast4(xb + F::kLow(c))),
                                         _mm256_maddubs_epi16(hi, Broadcast4(xb + F::kHigh(c)))));
        // Keeps GCC from reassociating the 16-bit sums into a tree of pending products,
        // which spilled most of them (the sums are exact in any order).
        __asm__("" : "+x"(isum[i][h]));
      }
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int h = 0; h < NH; ++h) isum[i][h] = _mm256_madd_epi16(isum[i][h], ones);
}

// MR rows of x (r0..) times NH half-panels (h0..) of format F. kFull: the halves lie in whole
// 16-row tiles; otherwise one half of the weight's short last tile, masked to its rows.
template <class F, int MR, int NH, bool kFull>
void PanelTile(const QuantLinearTask& t, int64_t r0, int64_t h0) {
  const QuantTensor& w = *t.w;
  const int64_t blocks = w.cols / 32;
  Half half[NH];
#pragma GCC unroll 4
  for (int h = 0; h < NH; ++h) half[h] = HalfOf(w, h0 + h);
  const int64_t unit_bytes = kFull ? 4 * kTileRows : 4 * half[0].tile.lanes;
  const __m256i mask = panels::RowMask(kFull ? 8 : half[0].rows);
  const int8_t* xq[MR];
  const float* aux[MR];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) {
    xq[i] = t.xq + (r0 + i) * t.ldxq;
    aux[i] = t.xaux + (r0 + i) * t.ldxaux;
  }
  __m256 acc[MR][NH];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int h = 0; h < NH; ++h) acc[i][h] = _mm256_setzero_ps();
  const int8_panels::NextRowsPrefetch prefetch(
      w, static_cast<const uint8_t*>(w.data.raw()) + (h0 + NH) * 8 * w.row_bytes(), NH * 8);
  typename F::At at[NH];
  __m256i isum[MR][NH];
  if constexpr (F::kPerGroup) {
    // AWQ: per block gsum += d_b float(isum_b), per group acc += s (gsum - z X_g) (the file
    // comment).
    for (int64_t g = 0; g < blocks / kGroupBlocks; ++g) {
      __m256 gsum[MR][NH];
#pragma GCC unroll 4
      for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int h = 0; h < NH; ++h) gsum[i][h] = _mm256_setzero_ps();
#pragma GCC unroll 4
      for (int64_t b = 0; b < kGroupBlocks; ++b) {
        const int64_t kb = g * kGroupBlocks + b;
        prefetch.Block(kb);
#pragma GCC unroll 4
        for (int h = 0; h < NH; ++h) at[h] = F::Block(w, half[h], kb);
        BlockSums<F, MR, NH, kFull>(at, xq, kb, unit_bytes, mask, isum);
#pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) {
          const __m256 d = _mm256_set1_ps(aux[i][2 * kb]);
#pragma GCC unroll 4
          for (int h = 0; h < NH; ++h)
            gsum[i][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i][h]), d, gsum[i][h]);
        }
      }
#pragma GCC unroll 4
      for (int h = 0; h < NH; ++h) {
        const __m256 s = F::template Scale<kFull>(at[h], mask);
        const __m256 z = F::template Offset<kFull>(at[h], mask);
#pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) {
          const __m256 zx = _mm256_set1_ps(aux[i][int8_panels::AwqGroupXTermAt(w.cols) + g]);
          acc[i][h] = _mm256_fmadd_ps(s, _mm256_fnmadd_ps(z, zx, gsum[i][h]), acc[i][h]);
        }
      }
    }
  } else {
    for (int64_t kb = 0; kb < blocks; ++kb) {
      prefetch.Block(kb);
#pragma GCC unroll 4
      for (int h = 0; h < NH; ++h) at[h] = F::Block(w, half[h], kb);
      BlockSums<F, MR, NH, kFull>(at, xq, kb, unit_bytes, mask, isum);
#pragma GCC unroll 4
      for (int h = 0; h < NH; ++h) {
        const __m256 s = F::template Scale<kFull>(at[h], mask);
        const __m256 offset = F::template Offset<kFull>(at[h], mask);
#pragma GCC unroll 4
        for (int i = 0; i < MR; ++i) {
          const float* a = aux[i] + 2 * kb;  // the block's d and int8 sum
          // isum - offset x sum: integers below 2^17, exact in F32.
          const __m256 dot =
              _mm256_fnmadd_ps(offset, _mm256_set1_ps(a[1]), _mm256_cvtepi32_ps(isum[i][h]));
          acc[i][h] = _mm256_fmadd_ps(dot, _mm256_mul_ps(s, _mm256_set1_ps(a[0])), acc[i][h]);
        }
      }
    }
  }
  panels::StoreTile<MR, NH, kFull>(t, r0, h0, acc, mask);
}

// Up to 4 rows of x on one half-panel (each unpacked weight register serves every row; the x
// broadcasts are used at once, so 16 registers hold it), or one row on four half-panels (four
// accumulator chains): panels::TileTables.
template <class F>
struct Kernel {
  template <int MR, int NH, bool kFull>
  static void Tile(const QuantLinearTask& t, int64_t r0, int64_t h0) {
    PanelTile<F, MR, NH, kFull>(t, r0, h0);
  }
};

}  // namespace

bool Int8PanelsSupports(const QuantTensor& w, const CpuFeatures& f) {
  if (!f.avx2) return false;
  if (w.type == QuantType::kAwq4)
    return w.group_size == int8_panels::kGroup && w.cols % int8_panels::kGroup == 0;
  return w.type == QuantType::kQ4_0 && w.cols % 32 == 0;
}

Layout Int8PanelsLayout(QuantType type) { return int8_panels::LayoutOf(type); }

void QuantLinearInt8Panels(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0,
                           int64_t n1) {
  int8_panels::CheckPlaced(*t.w);
  if (t.w->type == QuantType::kAwq4) return panels::RunPanels<Kernel<AwqPanels>>(t, t0, t1, n0, n1);
  panels::RunPanels<Kernel<Q4_0Panels>>(t, t0, t1, n0, n1);
}

}  // namespace xinfer::cpu::avx2

#pragma GCC pop_options

#endif  // defined(__x86_64__)
