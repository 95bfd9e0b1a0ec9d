// AVX-512 kernels (+ AVX512-BF16 for vdpbf16ps). Compiled for those ISAs with `#pragma GCC
// target` on this file's functions only, so the rest of the binary stays baseline x86-64 and
// FastCpuOps calls these only after DetectCpuFeatures() says the CPU has them. System headers
// are included before the pragma so no inline library code is compiled for AVX-512.
//
// Batch invariance: every output element is reduced by the same instruction sequence whatever
// tile (MR x NR) computes it: one 16-lane accumulator over K in steps of 16 (F32 FMA) or 32
// (vdpbf16ps), the K tail by a masked load of zeros, then the tree of _mm512_reduce_add_ps (four
// accumulators at a time, StoreTile) and the bias. Attention is in cpu_kernels_attention_avx512.cc.
#if defined(__x86_64__)  // x86 only; cpu_kernels_avx512_absent.cc elsewhere

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/cpu/cpu_kernels.h"
#include "base/check.h"

// GCC 12's AVX-512 headers build results from _mm256_undefined_*() (reductions, extracts), which
// -Wuninitialized reports at every use; the lanes are never read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c,bmi2")

#include "backend/cpu/tile_avx512.h"

namespace xinfer::cpu::avx512 {
namespace {

constexpr int kMr = 4;  // rows of x per tile
constexpr int kNr = 6;  // weight rows per tile: 24 accumulators + 4 x + 1 w of 32 registers
static_assert(kNr == kTileRows, "row tiles (tensor.h) hold one tile's weight rows");

enum WType { kWF32 = 0, kWBf16 = 1, kWF16 = 2 };

template <int WT>
inline __m512 LoadW(const uint8_t* row, int64_t i) {
  if constexpr (WT == kWF32) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + i);
  } else if constexpr (WT == kWBf16) {
    __m256i h = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(reinterpret_cast<const uint16_t*>(row) + i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  } else {
    return _mm512_cvtph_ps(_mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(reinterpret_cast<const uint16_t*>(row) + i)));
  }
}

template <int WT>
inline __m512 LoadWMasked(const uint8_t* row, int64_t i, __mmask16 m) {
  if constexpr (WT == kWF32) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + i);
  } else if constexpr (WT == kWBf16) {
    __m256i h = _mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + i);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  } else {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, reinterpret_cast<const uint16_t*>(row) + i));
  }
}

// Row tiles are laid out from row 0 in groups of kTileRows: a call must start at one.
inline void CheckTileStart(const LinearTask& t, int64_t n0) {
  XI_CHECK_MSG(!t.tiled || n0 % kTileRows == 0, "a Linear range must start at a row tile");
}

// Element kk of weight row j of a tile starting at w: row-major rows `wstride` bytes apart, or
// row tiles (tensor.h: the tile's 64-byte units of its NR rows interleaved, so the weights stream
// as one sequence).
template <int WT, int NR, bool TILED>
inline const uint8_t* WAt(const uint8_t* w, int64_t wstride, int j, int64_t kk) {
  constexpr int64_t kEsize = WT == kWF32 ? 4 : 2, kPerUnit = kTileUnitBytes / kEsize;
  if constexpr (TILED) {
    return w + (kk / kPerUnit) * (NR * kTileUnitBytes) + j * kTileUnitBytes +
           (kk % kPerUnit) * kEsize;
  } else {
    return w + j * wstride + kk * kEsize;
  }
}

// The same for 16-bit weights read 32 at a time (kk a multiple of 32).
template <int NR, bool TILED>
inline const uint16_t* W16At(const uint16_t* w, int64_t k, int j, int64_t kk) {
  return TILED ? w + kk * NR + j * 32 : w + j * k + kk;
}

// The tile's weight prefetch for the k-step at byte `offset` of a row (a multiple of 64): the
// same bytes of the NR rows `pf_dist` ahead, which in row tiles are the NR units of that step.
template <int NR, bool TILED>
inline void PrefetchStep(const void* w, int64_t pf_dist, int64_t row_bytes, int64_t offset) {
  if constexpr (TILED) {
    PrefetchAhead<NR>(static_cast<const uint8_t*>(w) + offset * NR, pf_dist, kTileUnitBytes, 0);
  } else {
    PrefetchAhead<NR>(w, pf_dist, row_bytes, offset);
  }
}

// One MR x NR tile with F32 accumulation: x rows are F32, weights widened in registers.
template <int WT, int MR, int NR, bool TILED>
void TileF32Acc(const float* x, int64_t ldx, const uint8_t* w, int64_t wstride, int64_t k,
                const float* bias, float* out, int64_t ldo, bool prefetch) {
  __m512 acc[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  int64_t kk = 0;
  constexpr int64_t kEsize = WT == kWF32 ? 4 : 2;
  const int64_t pf_dist = PrefetchDistance<NR>(wstride);
  for (; kk + 16 <= k; kk += 16) {
    // One prefetch per 64-byte line of each row: every step for F32, every other for 16 bits.
    if (prefetch && (kEsize == 4 || (kk & 31) == 0))
      PrefetchStep<NR, TILED>(w, pf_dist, wstride, kk * kEsize);
    __m512 xv[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) xv[i] = _mm512_loadu_ps(x + i * ldx + kk);
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const __m512 wv = LoadW<WT>(WAt<WT, NR, TILED>(w, wstride, j, kk), 0);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) acc[i][j] = _mm512_fmadd_ps(xv[i], wv, acc[i][j]);
    }
  }
  if (kk < k) {
    const __mmask16 m = TailMask16(k - kk);
    __m512 xv[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) xv[i] = _mm512_maskz_loadu_ps(m, x + i * ldx + kk);
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const __m512 wv = LoadWMasked<WT>(WAt<WT, NR, TILED>(w, wstride, j, kk), 0, m);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) acc[i][j] = _mm512_fmadd_ps(xv[i], wv, acc[i][j]);
    }
  }
  StoreTile(acc, bias, out, ldo);
}

using TileFn = void (*)(const float*, int64_t, const uint8_t*, int64_t, int64_t, const float*,
                        float*, int64_t, bool);

template <int WT, int MR, bool T>
constexpr TileFn kRowF32[kNr] = {TileF32Acc<WT, MR, 1, T>, TileF32Acc<WT, MR, 2, T>,
                                 TileF32Acc<WT, MR, 3, T>, TileF32Acc<WT, MR, 4, T>,
                                 TileF32Acc<WT, MR, 5, T>, TileF32Acc<WT, MR, 6, T>};
template <int WT, bool T>
constexpr const TileFn* kTilesF32[kMr] = {kRowF32<WT, 1, T>, kRowF32<WT, 2, T>, kRowF32<WT, 3, T>,
                                          kRowF32<WT, 4, T>};

// Weight rows per cache block. When the x rows of the call fit in `stream_x_bytes` (batched
// decode: 16 rows of 896 floats are 56 KiB; 64 F32 rows measured slower that way), each NR-row
// weight tile meets all of them while it is in L1, so weights stream from DRAM once, at the pace
// the per-tile prefetch keeps up with. Otherwise (prefill) a block of weight rows stays in L2 (1
// MiB per Zen 4 core) while every MR-row tile of x passes over it. Only the loop order differs:
// each output element's arithmetic is the same either way.
int64_t RowsPerBlock(int64_t row_bytes, int64_t x_rows, int64_t x_row_bytes,
                     int64_t stream_x_bytes = 64 << 10) {
  if (x_rows * x_row_bytes <= stream_x_bytes) return kNr;
  int64_t rows = (384 << 10) / row_bytes / kNr * kNr;
  return rows < kNr ? kNr : rows;
}

// Whether a tile prefetches the weights ahead of it. In L2 blocks only the first pass of x rows
// reads them from DRAM; the prefetches of the later passes are wasted issue slots (+10-20 %
// GFLOP/s at 64 and 512 rows with vdpbf16ps). Streamed tiles keep prefetching on every pass:
// prefetching on the first only measured 15 % slower there (16 x 151936 lm_head).
// Row tiles with one row of x (decode) are one sequential stream that the hardware prefetcher
// follows on its own (software prefetch measured ~5 % slower there); with more rows each tile is
// reused from L1 between its DRAM reads and needs the prefetch as row-major tiles do (16-sequence
// BF16 decode: 218 tok/s without, 297 with).
inline bool PrefetchPass(int64_t block_rows, int64_t r, int64_t t0, int64_t t1, bool tiled) {
  if (tiled && t1 - t0 == 1) return false;
  return block_rows == kNr || r == t0;
}

template <int WT>
void LinearF32AccImpl(const LinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  const int64_t esize = WT == kWF32 ? 4 : 2;
  const int64_t wstride = t.k * esize;
  const uint8_t* w = static_cast<const uint8_t*>(t.w);
  const int64_t block = RowsPerBlock(wstride, t1 - t0, t.ldx * 4);
  CheckTileStart(t, n0);
  const TileFn* const* tiles = t.tiled ? kTilesF32<WT, true> : kTilesF32<WT, false>;
  ForEachTile<kMr, kNr>(t0, t1, n0, n1, block, [&](int64_t r, int64_t mr, int64_t n, int64_t nr) {
    tiles[mr - 1][nr - 1](t.x + r * t.ldx, t.ldx, w + n * wstride, wstride, t.k,
                          t.bias != nullptr ? t.bias + n : nullptr, t.out + r * t.ldo + n, t.ldo,
                          PrefetchPass(block, r, t0, t1, t.tiled));
  });
}

// MR x NR tile of the shuffle-free BF16 widen path. Each k-step of 32 runs the even half for the
// whole tile, then the odd half (reloading the weight line from L1), so 24 accumulators + 4 x
// fit the 32 registers; every accumulator still adds even then odd in each step.
template <int MR, int NR, bool TILED>
void TileBf16Widen(const float* xp, int64_t ldxp, const uint16_t* w, int64_t k, const float* bias,
                   float* out, int64_t ldo, bool prefetch) {
  __m512 acc[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  const __m512i hi_mask = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  const int64_t pf_dist = PrefetchDistance<NR>(k * 2);
  for (int64_t kk = 0; kk < k; kk += 32) {
    if (prefetch) PrefetchStep<NR, TILED>(w, pf_dist, k * 2, kk * 2);
    const bool full = kk + 32 <= k;
    const __mmask32 m = full ? ~__mmask32{0} : static_cast<__mmask32>((1ull << (k - kk)) - 1);
    __m512 xv[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) xv[i] = _mm512_loadu_ps(xp + i * ldxp + kk);
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const uint16_t* wj = W16At<NR, TILED>(w, k, j, kk);
      const __m512i v = full ? _mm512_loadu_si512(wj) : _mm512_maskz_loadu_epi16(m, wj);
      const __m512 we = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) acc[i][j] = _mm512_fmadd_ps(xv[i], we, acc[i][j]);
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) xv[i] = _mm512_loadu_ps(xp + i * ldxp + kk + 16);
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const uint16_t* wj = W16At<NR, TILED>(w, k, j, kk);
      const __m512i v = full ? _mm512_loadu_si512(wj) : _mm512_maskz_loadu_epi16(m, wj);
      const __m512 wo = _mm512_castsi512_ps(_mm512_and_si512(v, hi_mask));
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) acc[i][j] = _mm512_fmadd_ps(xv[i], wo, acc[i][j]);
    }
  }
  StoreTile(acc, bias, out, ldo);
}

using TileWidenFn = void (*)(const float*, int64_t, const uint16_t*, int64_t, const float*, float*,
                             int64_t, bool);
template <int MR, bool T>
constexpr TileWidenFn kRowWiden[kNr] = {TileBf16Widen<MR, 1, T>, TileBf16Widen<MR, 2, T>,
                                        TileBf16Widen<MR, 3, T>, TileBf16Widen<MR, 4, T>,
                                        TileBf16Widen<MR, 5, T>, TileBf16Widen<MR, 6, T>};
template <bool T>
constexpr const TileWidenFn* kTilesWiden[kMr] = {kRowWiden<1, T>, kRowWiden<2, T>, kRowWiden<3, T>,
                                                 kRowWiden<4, T>};

}  // namespace

void LinearF32Acc(const LinearTask& task, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  switch (task.wdtype) {
    case DType::kF32:
      return LinearF32AccImpl<kWF32>(task, t0, t1, n0, n1);
    case DType::kBF16:
      return LinearF32AccImpl<kWBf16>(task, t0, t1, n0, n1);
    default:
      return LinearF32AccImpl<kWF16>(task, t0, t1, n0, n1);
  }
}

void LinearBf16Widen(const LinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  const uint16_t* w = static_cast<const uint16_t*>(t.w);
  const int64_t block = RowsPerBlock(t.k * 2, t1 - t0, t.ldxp * 4);
  CheckTileStart(t, n0);
  const TileWidenFn* const* tiles = t.tiled ? kTilesWiden<true> : kTilesWiden<false>;
  ForEachTile<kMr, kNr>(t0, t1, n0, n1, block, [&](int64_t r, int64_t mr, int64_t n, int64_t nr) {
    tiles[mr - 1][nr - 1](t.xp + r * t.ldxp, t.ldxp, w + n * t.k, t.k,
                          t.bias != nullptr ? t.bias + n : nullptr, t.out + r * t.ldo + n, t.ldo,
                          PrefetchPass(block, r, t0, t1, t.tiled));
  });
}

void PermuteEvenOdd(const float* x, int64_t rows, int64_t k, float* xp, int64_t ldxp) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * k;
    float* o = xp + r * ldxp;
    for (int64_t i = 0; i < ldxp; i += 32) {
      const int64_t l0 = k - i, l1 = k - i - 16;
      const __mmask16 m0 = l0 >= 16 ? 0xFFFF : l0 <= 0 ? 0 : TailMask16(l0);
      const __mmask16 m1 = l1 >= 16 ? 0xFFFF : l1 <= 0 ? 0 : TailMask16(l1);
      const __m512 a = _mm512_maskz_loadu_ps(m0, xr + i);
      const __m512 b = _mm512_maskz_loadu_ps(m1, xr + i + 16);
      _mm512_storeu_ps(o + i, _mm512_permutex2var_ps(a, even, b));
      _mm512_storeu_ps(o + i + 16, _mm512_permutex2var_ps(a, odd, b));
    }
  }
}

void RmsNormRow(const float* x, const float* w, int64_t n, float eps, float* out) {
  // Sum of squares in double, as the reference does, so long rows lose nothing.
  __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 v =
        n - i >= 16 ? _mm512_loadu_ps(x + i) : _mm512_maskz_loadu_ps(TailMask16(n - i), x + i);
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d hi =
        _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    a0 = _mm512_fmadd_pd(lo, lo, a0);
    a1 = _mm512_fmadd_pd(hi, hi, a1);
  }
  const double ss = _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
  const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / std::sqrt(ss / n + eps)));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xFFFF : TailMask16(n - i);
    const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    const __m512 wv = _mm512_maskz_loadu_ps(m, w + i);
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(_mm512_mul_ps(v, inv), wv));
  }
}

void SiluMul(const float* g, const float* u, int64_t n, float* out) {
  const __m512 one = _mm512_set1_ps(1.f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xFFFF : TailMask16(n - i);
    const __m512 gv = _mm512_maskz_loadu_ps(m, g + i);
    const __m512 uv = _mm512_maskz_loadu_ps(m, u + i);
    const __m512 e = Exp512(_mm512_sub_ps(_mm512_setzero_ps(), gv));
    const __m512 s = _mm512_div_ps(gv, _mm512_add_ps(one, e));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(s, uv));
  }
}

void Add(const float* a, const float* b, int64_t n, float* out) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xFFFF : TailMask16(n - i);
    _mm512_mask_storeu_ps(
        out + i, m,
        _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

void Exp(const float* x, int64_t n, float* out) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xFFFF : TailMask16(n - i);
    _mm512_mask_storeu_ps(out + i, m, Exp512(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

float ReadSum(const float* p, int64_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(p + i + 48));
  }
  float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
  for (; i < n; ++i) s += p[i];
  return s;
}

float FmaLoop(int64_t iters) {
  __m512 acc[16];
  for (int j = 0; j < 16; ++j) acc[j] = _mm512_set1_ps(static_cast<float>(j));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_fmadd_ps(acc[j], a, b);
  }
  __m512 s = acc[0];
  for (int j = 1; j < 16; ++j) s = _mm512_add_ps(s, acc[j]);
  return _mm512_reduce_add_ps(s);
}

}  // namespace xinfer::cpu::avx512

#pragma GCC pop_options

// ---- AVX512-BF16: vdpbf16ps on BF16 weights and activations rounded to BF16 ----
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma,f16c,bmi2")

namespace xinfer::cpu::avx512 {
namespace {

template <int MR, int NR, bool TILED>
void TileBf16Dot(const uint16_t* xb, int64_t ldxb, const uint16_t* w, int64_t k, const float* bias,
                 float* out, int64_t ldo, bool prefetch) {
  __m512 acc[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  int64_t kk = 0;
  const int64_t pf_dist = PrefetchDistance<NR>(k * 2);
  for (; kk + 32 <= k; kk += 32) {
    if (prefetch) PrefetchStep<NR, TILED>(w, pf_dist, k * 2, kk * 2);
    __m512bh xv[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) xv[i] = AsBh(_mm512_loadu_si512(xb + i * ldxb + kk));
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const __m512bh wv = AsBh(_mm512_loadu_si512(W16At<NR, TILED>(w, k, j, kk)));
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], xv[i], wv);
    }
  }
  if (kk < k) {
    // x rows are zero-padded to a multiple of 32; only the weight rows need a masked load.
    const __mmask32 m = static_cast<__mmask32>((1ull << (k - kk)) - 1);
    __m512bh xv[MR];
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) xv[i] = AsBh(_mm512_loadu_si512(xb + i * ldxb + kk));
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const __m512bh wv = AsBh(_mm512_maskz_loadu_epi16(m, W16At<NR, TILED>(w, k, j, kk)));
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], xv[i], wv);
    }
  }
  StoreTile(acc, bias, out, ldo);
}

using TileBf16Fn = void (*)(const uint16_t*, int64_t, const uint16_t*, int64_t, const float*,
                            float*, int64_t, bool);
template <int MR, bool T>
constexpr TileBf16Fn kRowBf16[kNr] = {TileBf16Dot<MR, 1, T>, TileBf16Dot<MR, 2, T>,
                                      TileBf16Dot<MR, 3, T>, TileBf16Dot<MR, 4, T>,
                                      TileBf16Dot<MR, 5, T>, TileBf16Dot<MR, 6, T>};
template <bool T>
constexpr const TileBf16Fn* kTilesBf16[kMr] = {kRowBf16<1, T>, kRowBf16<2, T>, kRowBf16<3, T>,
                                               kRowBf16<4, T>};

}  // namespace

void LinearBf16Dot(const LinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  const uint16_t* w = static_cast<const uint16_t*>(t.w);
  // BF16 x is half the size: 16 rows of the down projection (K = 4864, 152 KiB) still stream
  // (16-sequence decode +3 %, 64 sequences unchanged; medians of 3 interleaved runs).
  const int64_t block = RowsPerBlock(t.k * 2, t1 - t0, t.ldxb * 2, 256 << 10);
  CheckTileStart(t, n0);
  const TileBf16Fn* const* tiles = t.tiled ? kTilesBf16<true> : kTilesBf16<false>;
  ForEachTile<kMr, kNr>(t0, t1, n0, n1, block, [&](int64_t r, int64_t mr, int64_t n, int64_t nr) {
    tiles[mr - 1][nr - 1](t.xb + r * t.ldxb, t.ldxb, w + n * t.k, t.k,
                          t.bias != nullptr ? t.bias + n : nullptr, t.out + r * t.ldo + n, t.ldo,
                          PrefetchPass(block, r, t0, t1, t.tiled));
  });
}

float Bf16DotLoop(int64_t iters) {
  __m512 acc[16];
  for (int j = 0; j < 16; ++j) acc[j] = _mm512_set1_ps(static_cast<float>(j));
  const __m512bh a = AsBh(_mm512_set1_epi16(0x3f80)), b = AsBh(_mm512_set1_epi16(0x3a83));
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], a, b);
  }
  __m512 s = acc[0];
  for (int j = 1; j < 16; ++j) s = _mm512_add_ps(s, acc[j]);
  return _mm512_reduce_add_ps(s);
}

void RoundRowsToBf16(const float* x, int64_t rows, int64_t k, uint16_t* xb, int64_t ldxb) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * k;
    uint16_t* out = xb + r * ldxb;
    for (int64_t i = 0; i < ldxb; i += 16) {
      const int64_t left = k - i;
      const __mmask16 m = left >= 16 ? 0xFFFF : left <= 0 ? 0 : TailMask16(left);
      const __m256bh b = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, xr + i));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), reinterpret_cast<const __m256i&>(b));
    }
  }
}

}  // namespace xinfer::cpu::avx512

#pragma GCC pop_options

#endif  // defined(__x86_64__)
