// AVX-512 kernels for quantized weights (tensor/quant.h) with F32 activations. Compiled for
// AVX-512 with `#pragma GCC target` like cpu_kernels_avx512.cc; callers check DetectCpuFeatures()
// first.
//
// Weight rows are consumed in chunks of 32 elements, each unpacked into two 16-lane vectors: for
// the GGML formats elements [0,16) and [16,32) of the chunk (the order of the bytes / nibbles in
// a block); for AWQ4 (byte k/2, low nibble = even k) the even and the odd elements, so AWQ callers
// pass x permuted the same way (PermuteEvenOdd).
//
// Two schemes, each giving every output element one fixed instruction sequence that depends only
// on K — never on the number of rows of x, the tile, or the thread count (batch invariance):
//
// Q8_0 (bandwidth-bound: 34 bytes per 32 weights): dequantize a chunk to F32 (w = d * q) and
//   acc = fma(x[32c..+16), w0, acc); acc = fma(x[32c+16..+32), w1, acc)  for c = 0, 1, ...
//   then _mm512_reduce_add_ps + bias: the sequence TileF32Acc runs over a dequantized panel, so
//   few rows of x dequantize in registers (QuantLinearQ8Direct) and many go through a panel
//   (DequantizeRowsQ8 + LinearF32Acc) with the same bits.
//
// Q4_0 and AWQ4 (4-bit: compute-bound with a plain dequantize-and-FMA, which spends two
//   int->float conversions and two FMAs per chunk on the FMA ports before the two FMAs of the
//   product): a nibble q becomes the float m = 1 + q/16 with integer ops only (the nibble shifted
//   into the top mantissa bits, OR 1.0f: one shift + one vpternlogd), and per scale block b
//     tmp = -(1 + z/16) * xs_b;  tmp = fma(x, m, tmp) over the block's chunks;
//     acc = fma(16 * scale, tmp, acc)
//   where xs_b is the lane-wise sum of x over the block (QuantBlockSums, once per call) and z the
//   zero point (8 for Q4_0): x*(q - z)*s summed exactly as the weight's dequantized value would,
//   to within a few ulp of the row's magnitude. Two FMAs per chunk plus one per block.
#if defined(__x86_64__)  // x86 only; cpu_kernels_avx512_absent.cc elsewhere

#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/cpu_kernels.h"

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c,bmi2")

#include "backend/cpu/tile_avx512.h"

namespace xinfer::cpu::avx512 {
namespace {

// F16 block scales are looked up instead of converted: a broadcast from memory costs a load, not
// the two vector ops (vpbroadcastw + vcvtph2ps) of a conversion. Entry h holds F16ToF32(h) and
// 16 * F16ToF32(h) (the 4-bit scheme's block multiplier). Built once (QuantKernelTablesInit);
// 512 KiB, of which a layer touches only the lines of the scale values it uses.
struct F16Tables {
  float value[65536];
  float times16[65536];
};
const F16Tables* g_f16_tables = nullptr;

inline uint16_t LoadU16(const uint8_t* p) {
  uint16_t h;
  __builtin_memcpy(&h, p, 2);
  return h;
}

// ---- Q8_0 ----

constexpr int64_t kQ8Bytes = 34;

inline void DequantQ8Chunk(const uint8_t* row, int64_t c, __m512& w0, __m512& w1) {
  const uint8_t* b = row + c * kQ8Bytes;
  const __m512 d = _mm512_set1_ps(g_f16_tables->value[LoadU16(b)]);
  w0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2)))),
                     d);
  w1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                         _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 18)))),
                     d);
}

template <int MR, int NR>
void TileQ8Direct(const float* x, int64_t ldx, const QuantTensor& w, int64_t n, const float* bias,
                  float* out, int64_t ldo) {
  const uint8_t* rows[NR];
#pragma GCC unroll 8
  for (int j = 0; j < NR; ++j) rows[j] = w.row(n + j);
  __m512 acc[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  const int64_t chunks = w.cols / 32;
  for (int64_t c = 0; c < chunks; ++c) {
    PrefetchRange(rows[0] + kQuantPrefetchBytes + c * NR * kQ8Bytes, NR * kQ8Bytes);
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      __m512 w0, w1;
      DequantQ8Chunk(rows[j], c, w0, w1);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        acc[i][j] = _mm512_fmadd_ps(_mm512_loadu_ps(x + i * ldx + c * 32), w0, acc[i][j]);
        acc[i][j] = _mm512_fmadd_ps(_mm512_loadu_ps(x + i * ldx + c * 32 + 16), w1, acc[i][j]);
      }
    }
  }
  StoreTile(acc, bias, out, ldo);
}

// ---- 4-bit (Q4_0, AWQ4) ----

// m = 1 + q/16 for the low and the high nibble of each byte of `bytes` (16 bytes -> 2 x 16).
inline void UnpackNibbles(const uint8_t* bytes, __m512& m_lo, __m512& m_hi) {
  const __m512i v = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes)));
  const __m512i mask = _mm512_set1_epi32(0x00780000);  // mantissa bits 19..22
  const __m512i one = _mm512_set1_epi32(0x3F800000);   // 1.0f
  // 0xEA: (a & b) | c
  m_lo = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_slli_epi32(v, 19), mask, one, 0xEA));
  m_hi = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_slli_epi32(v, 15), mask, one, 0xEA));
}

// Where the 4-bit tiles find a row's chunks and block scales.
template <QuantType QT>
struct NibbleFormat;

template <>
struct NibbleFormat<QuantType::kQ4_0> {
  // Per weight row: the row's bytes (blocks of 2-byte d + 16 bytes of nibbles).
  struct Row {
    const uint8_t* q;
  };
  static constexpr int64_t kChunkBytes = 18;
  static Row RowOf(const PreparedQuant& p, int64_t r) { return {p.q + r * p.row_bytes}; }
  static const uint8_t* Nibbles(const Row& row, int64_t c) { return row.q + c * 18 + 2; }
  // 16 * d of block b (one chunk).
  static float Scale16(const Row& row, int64_t b) {
    return g_f16_tables->times16[LoadU16(row.q + b * 18)];
  }
};

template <>
struct NibbleFormat<QuantType::kAwq4> {
  using Row = AwqRow;
  static Row RowOf(const PreparedQuant& p, int64_t r) { return AwqRowOf(p, r); }
  static constexpr int64_t kChunkBytes = 16;
  static const uint8_t* Nibbles(const Row& row, int64_t c) { return row.q + c * 16; }
  static float Scale16(const Row& row, int64_t b) { return 16.f * row.scales[b]; }
  // -(1 + z/16) of block b: exact for the integer zero points 0..15.
  static float NegOnePlusZ16(const Row& row, int64_t b) { return -(1.f + row.zeros[b] * 0.0625f); }
};

// MR rows of x times NR weight rows, one scale block (CPB chunks) at a time: the block's chunks of
// weight row j are unpacked once into registers and used for all MR rows.
template <QuantType QT, int CPB, int MR, int NR>
void TileNibble(const QuantLinearTask& t, const PreparedQuant& p, int64_t blocks, int64_t r0,
                int64_t n) {
  using F = NibbleFormat<QT>;
  typename F::Row rows[NR];
#pragma GCC unroll 8
  for (int j = 0; j < NR; ++j) rows[j] = F::RowOf(p, n + j);
  const float* x = t.x + r0 * t.ldx;
  const float* xs = t.xsum + r0 * t.ldxsum;
  __m512 acc[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    if constexpr (MR == 1) {
      // One row of x: the NR weight rows' block sums are interleaved chunk by chunk, so that NR
      // independent FMA chains hide each other's latency (the same operations, in the same order
      // per element, as the MR > 1 branch).
      const __m512 xsb = _mm512_loadu_ps(xs + b * 16);
      __m512 tmp[NR];
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) {
        if constexpr (QT == QuantType::kAwq4) {
          tmp[j] = _mm512_mul_ps(xsb, _mm512_set1_ps(F::NegOnePlusZ16(rows[j], b)));
        } else {
          tmp[j] = xsb;
        }
      }
      const float* xc = x + b * CPB * 32;
      PrefetchRange(rows[0].q + kQuantPrefetchBytes + b * NR * CPB * F::kChunkBytes,
                    NR * CPB * F::kChunkBytes);
#pragma GCC unroll 8
      for (int c = 0; c < CPB; ++c) {
        const __m512 x0 = _mm512_loadu_ps(xc + c * 32);
        const __m512 x1 = _mm512_loadu_ps(xc + c * 32 + 16);
#pragma GCC unroll 8
        for (int j = 0; j < NR; ++j) {
          __m512 m0, m1;
          UnpackNibbles(F::Nibbles(rows[j], b * CPB + c), m0, m1);
          tmp[j] = _mm512_fmadd_ps(x0, m0, tmp[j]);
          tmp[j] = _mm512_fmadd_ps(x1, m1, tmp[j]);
        }
      }
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j)
        acc[0][j] = _mm512_fmadd_ps(_mm512_set1_ps(F::Scale16(rows[j], b)), tmp[j], acc[0][j]);
      continue;
    }
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      __m512 m[2 * CPB];
      if (j == 0)
        PrefetchRange(rows[0].q + kQuantPrefetchBytes + b * NR * CPB * F::kChunkBytes,
                      NR * CPB * F::kChunkBytes);
#pragma GCC unroll 8
      for (int c = 0; c < CPB; ++c)
        UnpackNibbles(F::Nibbles(rows[j], b * CPB + c), m[2 * c], m[2 * c + 1]);
      const __m512 s16 = _mm512_set1_ps(F::Scale16(rows[j], b));
      __m512 nzz;
      if constexpr (QT == QuantType::kAwq4) nzz = _mm512_set1_ps(F::NegOnePlusZ16(rows[j], b));
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        // Q4_0's block multiplier -(1 + 8/16) is folded into xsum by the caller.
        const __m512 xsb = _mm512_loadu_ps(xs + i * t.ldxsum + b * 16);
        __m512 tmp;
        if constexpr (QT == QuantType::kAwq4) {
          tmp = _mm512_mul_ps(xsb, nzz);
        } else {
          tmp = xsb;
        }
        const float* xc = x + i * t.ldx + b * CPB * 32;
#pragma GCC unroll 8
        for (int c = 0; c < CPB; ++c) {
          tmp = _mm512_fmadd_ps(_mm512_loadu_ps(xc + c * 32), m[2 * c], tmp);
          tmp = _mm512_fmadd_ps(_mm512_loadu_ps(xc + c * 32 + 16), m[2 * c + 1], tmp);
        }
        acc[i][j] = _mm512_fmadd_ps(s16, tmp, acc[i][j]);
      }
    }
  }
  StoreTile(acc, t.bias != nullptr ? t.bias + n : nullptr, t.out + r0 * t.ldo + n, t.ldo);
}

constexpr int kNibbleMr = 4;
constexpr int kNibbleNr = 4;
using NibbleFn = void (*)(const QuantLinearTask&, const PreparedQuant&, int64_t, int64_t, int64_t);

template <QuantType QT, int CPB, int MR>
constexpr NibbleFn kNibbleRow[kNibbleNr] = {TileNibble<QT, CPB, MR, 1>, TileNibble<QT, CPB, MR, 2>,
                                            TileNibble<QT, CPB, MR, 3>, TileNibble<QT, CPB, MR, 4>};
template <QuantType QT, int CPB>
constexpr const NibbleFn* kNibbleTiles[kNibbleMr] = {
    kNibbleRow<QT, CPB, 1>, kNibbleRow<QT, CPB, 2>, kNibbleRow<QT, CPB, 3>, kNibbleRow<QT, CPB, 4>};

template <QuantType QT, int CPB>
void QuantLinearNibbleImpl(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0,
                           int64_t n1) {
  // Weight rows outermost within a block of rows that stays in L2, so that several MR-row tiles
  // of x reuse the same unpacked-from-L2 weights.
  const PreparedQuant p = PrepareQuant(*t.w);
  const int64_t blocks = t.w->cols / (32 * CPB);
  int64_t nb = (256 << 10) / (p.row_bytes > 0 ? p.row_bytes : 1) / kNibbleNr * kNibbleNr;
  if (nb < kNibbleNr) nb = kNibbleNr;
  ForEachTile<kNibbleMr, kNibbleNr>(t0, t1, n0, n1, nb,
                                    [&](int64_t r, int64_t mr, int64_t n, int64_t nr) {
                                      kNibbleTiles<QT, CPB>[mr - 1][nr - 1](t, p, blocks, r, n);
                                    });
}

}  // namespace

void QuantKernelTablesInit() {
  static const F16Tables* tables = [] {
    auto* t = new F16Tables;  // lives for the process
    for (uint32_t h = 0; h < 65536; ++h) {
      t->value[h] = F16ToF32(static_cast<uint16_t>(h));
      t->times16[h] = 16.f * t->value[h];
    }
    return t;
  }();
  g_f16_tables = tables;
}

bool QuantKernelSupports(const QuantTensor& w) {
  if (w.cols % 32 != 0) return false;
  switch (w.type) {
    case QuantType::kQ8_0:
    case QuantType::kQ4_0:
      return true;
    case QuantType::kAwq4:
      return w.group_size == 32 || w.group_size == 64 || w.group_size == 128;
    default:
      return false;
  }
}

int64_t QuantBlockElemsForSums(const QuantTensor& w) {
  return w.type == QuantType::kAwq4 ? w.group_size : 32;
}

void QuantBlockSums(const float* x, int64_t rows, int64_t ldx, int64_t k, int64_t block,
                    float scale, float* out, int64_t ldout) {
  const __m512 sv = _mm512_set1_ps(scale);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * ldx;
    float* o = out + r * ldout;
    for (int64_t b = 0; b < k / block; ++b) {
      const float* xb = xr + b * block;
      __m512 s = _mm512_add_ps(_mm512_loadu_ps(xb), _mm512_loadu_ps(xb + 16));
      for (int64_t c = 32; c < block; c += 32)
        s = _mm512_add_ps(s, _mm512_add_ps(_mm512_loadu_ps(xb + c), _mm512_loadu_ps(xb + c + 16)));
      _mm512_storeu_ps(o + b * 16, _mm512_mul_ps(s, sv));
    }
  }
}

void QuantLinearQ8Direct(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  using Fn =
      void (*)(const float*, int64_t, const QuantTensor&, int64_t, const float*, float*, int64_t);
  static constexpr Fn kTiles[kQ8DirectMaxRows][4] = {
      {TileQ8Direct<1, 1>, TileQ8Direct<1, 2>, TileQ8Direct<1, 3>, TileQ8Direct<1, 4>},
      {TileQ8Direct<2, 1>, TileQ8Direct<2, 2>, TileQ8Direct<2, 3>, TileQ8Direct<2, 4>},
      {TileQ8Direct<3, 1>, TileQ8Direct<3, 2>, TileQ8Direct<3, 3>, TileQ8Direct<3, 4>}};
  ForEachTile<kQ8DirectMaxRows, 4>(
      t0, t1, n0, n1, n1 - n0, [&](int64_t r, int64_t mr, int64_t n, int64_t nr) {
        kTiles[mr - 1][nr - 1](t.x + r * t.ldx, t.ldx, *t.w, n,
                               t.bias != nullptr ? t.bias + n : nullptr, t.out + r * t.ldo + n,
                               t.ldo);
      });
}

void DequantizeRowsQ8(const QuantTensor& w, int64_t n0, int64_t n1, float* panel) {
  const int64_t chunks = w.cols / 32;
  for (int64_t r = n0; r < n1; ++r) {
    const uint8_t* row = w.row(r);
    float* o = panel + (r - n0) * w.cols;
    for (int64_t c = 0; c < chunks; ++c) {
      __m512 w0, w1;
      DequantQ8Chunk(row, c, w0, w1);
      _mm512_storeu_ps(o + c * 32, w0);
      _mm512_storeu_ps(o + c * 32 + 16, w1);
    }
  }
}

void QuantLinearNibble(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  if (t.w->type == QuantType::kQ4_0)
    return QuantLinearNibbleImpl<QuantType::kQ4_0, 1>(t, t0, t1, n0, n1);
  switch (t.w->group_size) {
    case 32:
      return QuantLinearNibbleImpl<QuantType::kAwq4, 1>(t, t0, t1, n0, n1);
    case 64:
      return QuantLinearNibbleImpl<QuantType::kAwq4, 2>(t, t0, t1, n0, n1);
    default:
      return QuantLinearNibbleImpl<QuantType::kAwq4, 4>(t, t0, t1, n0, n1);
  }
}

}  // namespace xinfer::cpu::avx512

#pragma GCC pop_options

#endif  // defined(__x86_64__)
