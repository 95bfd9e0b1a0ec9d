// Quantized weights meeting int8 activations with vpdpbusd (AVX512-VNNI): GGUF Q4_0, Q5_0, Q8_0,
// Q4_K, Q5_K, Q6_K (llama.cpp's arithmetic for these files, where Q4_K_M / Q5_K_M mix them) and
// AWQ g128 (vLLM's on CPU: IPEX's INT8 "lowp mode", x quantized per input block); opt-in
// (`--int8-activations`, CpuBackendOptions).
//
// Why: with F32 (or BF16) activations a 4-bit weight costs a nibble-to-float conversion before
// its multiply; the vdpbf16ps kernel (cpu_kernels_nibble_bf16.cc) spends ~19 vector ops per 128
// Q4_0 weights and is compute-bound at ~31 GB/s on 2 Zen 4 cores, and the other GGUF formats ran
// Highway's dequantize-to-a-panel path. Here the codes are used as unsigned bytes as they are
// (an AND, a shift, the 5th/6th bits OR-ed in) and vpdpbusd multiplies 64 of them with 64 int8
// activations per instruction: ~11 ops per 128 Q4_0 weights, ~2x the Q8_0 rate too.
//
// Activations (Int8PrepareX, once per call and row): each block of 32 x values becomes
// d = max|x| / 127 (F32) and q = round-to-nearest-even(x * (1 / d)), |q| <= 127, as llama.cpp's
// Q8 activations (which keep d in F16; here it stays F32). A row is stored per "step" of the
// weight format (int8_formats_avx512.h): 128 elements (Q8_0: 64), as
//   xq: the step's int8 values in the order the weight bytes come in, two 64-byte vectors (Q8_0:
//       one): Q4_0 / Q5_0 the blocks' first halves, then their second halves (the low and high
//       nibbles); AWQ the even elements, then the odd ones; Q4_K / Q5_K the sub-blocks' halves
//       in lane-group order kQ4KOrder; Q6_K dwords dealt out alternately; Q8_0 natural order.
//   aux: 16 F32 lane scales — lane l's x block scale d (vpdpbusd lane l sums bytes 4l..4l+3 of
//       each vector, all of one x block and one weight scale) — then 16 lane values for the
//       weights' offset: formats with a fixed offset (Q4_0: q - 8, Q5_0: - 16, Q6_K: - 32, Q8_0's
//       bytes made unsigned by XOR 0x80: + 128) take int32 corrections, minus the offset times
//       the lane's int8 x sum, which start the dot; where the offset belongs to the weight row
//       (AWQ's zero point z, the K-quants' mins) the plain lane sums are kept in F32 (times d for
//       the K-quants) and the epilogue subtracts z * sum or dmin * m * d * sum.
//
// Per step and weight row: a = correction (or 0); a = vpdpbusd(a, u_v, xq_v) over the step's
// weight vectors; acc = fma(float(a), dw * dx, acc) with the format's offset term, dw being the
// lane's weight scale. The integer sums are exact; the F32 sequence per output element depends on
// K only — not on the tile, the batch or the threads (batch invariance), like every kernel here.
#if defined(__x86_64__)  // x86 only; cpu_kernels_avx512_absent.cc elsewhere

#include <immintrin.h>

#include <array>
#include <cmath>
#include <cstdint>

#include "backend/cpu/cpu_kernels.h"

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512vbmi,fma,f16c,bmi2")

#include "backend/cpu/int8_formats_avx512.h"
#include "backend/cpu/tile_avx512.h"

namespace xinfer::cpu::avx512 {
namespace {

using int8_formats::Int8StepFormat;
using int8_formats::kQ4KOrder;

// The tiles stream a linear range (4 short rows side by side) and do ~2x less work per byte than
// the F32/BF16-activation quantized tiles, so the kQuantPrefetchBytes scheme (4 KiB ahead into
// L1) left them waiting on DRAM: perf put the stalls on each step's first load. 8 KiB ahead into
// L2 (prefetcht1): pure Q4_0 decode of the 0.5B shape 104-108 -> 111-116 tok/s at ~36 GB/s
// (interleaved runs; 6-12 KiB alike, 16 KiB worse), docs/performance.md. For one pass of x
// (decode) kReadOncePrefetchBytes ahead with the read-once hint instead (cpu_kernels.h; on AMD
// prefetchnta, on Intel the same prefetcht1): with prefetchnta the Q4_K_M file's
// one-sequence decode 0.78 -> 0.84 of its paired roofline in ~45 GB/s minutes, 0.54 -> 0.61 in ~70
// GB/s ones, the Q4_0 mix (its Q8_0 lm_head runs here) 0.89 -> 0.92 (2-core Zen 5, 11-15 runs each,
// session 16).
constexpr int64_t kInt8PrefetchBytes = 8192;

template <QuantType QT, int MR, int NR, bool kOnce>
void TileInt8(const QuantLinearTask& t, const PreparedQuant& p, int64_t r0, int64_t n) {
  using F = Int8StepFormat<QT>;
  typename F::Row rows[NR];
#pragma GCC unroll 8
  for (int j = 0; j < NR; ++j) rows[j] = F::RowOf(p, n + j);
  const int8_t* xq = t.xq + r0 * t.ldxq;
  const float* aux = t.xaux + r0 * t.ldxaux;
  __m512 acc[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  const bool non_temporal = DetectCpuFeatures().read_once_non_temporal;
  const int64_t steps = p.row_bytes / F::kBytes;
  for (int64_t s = 0; s < steps; ++s) {
    if constexpr (kOnce)
      PrefetchLines(rows[0].q + kReadOncePrefetchBytes + s * NR * F::kBytes, NR * F::kBytes,
                    non_temporal);
    else
      PrefetchLines(rows[0].q + kInt8PrefetchBytes + s * NR * F::kBytes, NR * F::kBytes,
                    /*non_temporal=*/false);
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      __m512i u[F::kVecs];
      typename F::Scales sc;
      F::Unpack(rows[j], s, u, sc);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const int8_t* xs = xq + i * t.ldxq + s * F::kElems;
        const float* as = aux + i * t.ldxaux + s * 32;
        __m512i a = F::DotStart(as);
#pragma GCC unroll 2
        for (int v = 0; v < F::kVecs; ++v)
          a = _mm512_dpbusd_epi32(a, u[v], _mm512_loadu_si512(xs + 64 * v));
        acc[i][j] = F::Update(acc[i][j], a, sc, as);
      }
    }
  }
  StoreTile(acc, t.bias != nullptr ? t.bias + n : nullptr, t.out + r0 * t.ldo + n, t.ldo);
}

constexpr int kMr = 4;
constexpr int kNr = 4;
using TileFn = void (*)(const QuantLinearTask&, const PreparedQuant&, int64_t, int64_t);
template <QuantType QT, int MR, bool kOnce>
constexpr TileFn kRow[kNr] = {TileInt8<QT, MR, 1, kOnce>, TileInt8<QT, MR, 2, kOnce>,
                              TileInt8<QT, MR, 3, kOnce>, TileInt8<QT, MR, 4, kOnce>};
template <QuantType QT, bool kOnce>
constexpr const TileFn* kTiles[kMr] = {kRow<QT, 1, kOnce>, kRow<QT, 2, kOnce>, kRow<QT, 3, kOnce>,
                                       kRow<QT, 4, kOnce>};

template <QuantType QT>
void QuantLinearInt8Impl(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  const PreparedQuant p = PrepareQuant(*t.w);
  // Weight rows in blocks that stay in L2 while every row of x passes over them.
  int64_t nb = (256 << 10) / p.row_bytes / kNr * kNr;
  if (nb < kNr) nb = kNr;
  // One pass of x (decode) reads each weight byte once: prefetched non-temporal. More rows of x
  // pass over each L2 block, which the first tile's prefetch into L2 brings in for the others.
  const TileFn* const* tiles = t1 - t0 <= kMr ? kTiles<QT, true> : kTiles<QT, false>;
  ForEachTile<kMr, kNr>(t0, t1, n0, n1, nb, [&](int64_t r, int64_t mr, int64_t n, int64_t nr) {
    tiles[mr - 1][nr - 1](t, p, r, n);
  });
}

// Quantizes one block of 32 x values to int8: returns d and writes two 16-value halves, elements
// [0, 16) and [16, 32), or with even_odd the even elements and the odd ones.
inline float QuantizeBlock(const float* x, bool even_odd, __m128i& first, __m128i& second) {
  __m512 a = _mm512_loadu_ps(x), b = _mm512_loadu_ps(x + 16);
  if (even_odd) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512 e = _mm512_permutex2var_ps(a, even, b);
    b = _mm512_permutex2var_ps(a, _mm512_add_epi32(even, _mm512_set1_epi32(1)), b);
    a = e;
  }
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b)));
  const float d = amax / 127.f;
  const __m512 id = _mm512_set1_ps(d != 0.f ? 1.f / d : 0.f);
  // vcvtps2dq rounds to nearest even (the default MXCSR mode); vpmovsdb saturates.
  first = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(a, id)));
  second = _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(b, id)));
  return d;
}

}  // namespace

bool Int8DotSupports(const QuantTensor& w, const CpuFeatures& f) {
  if (!f.avx512_vnni) return false;
  switch (w.type) {
    case QuantType::kQ4_0:
    case QuantType::kQ5_0:
    case QuantType::kQ4_1:
    case QuantType::kQ5_1:
      return f.avx512_vbmi && w.cols % 128 == 0;
    case QuantType::kAwq4:
      return w.group_size == 128 && w.cols % 128 == 0;
    case QuantType::kQ8_0:
      return w.cols % 64 == 0;
    case QuantType::kQ4_K:
    case QuantType::kQ5_K:
    case QuantType::kQ6_K:
      return w.cols % 256 == 0;
    default:
      return false;
  }
}

int64_t Int8AuxPerRow(QuantType type, int64_t k) {
  return k / (type == QuantType::kQ8_0 ? 64 : 128) * 32;
}

void Int8PrepareX(QuantType type, const float* x, int64_t rows, int64_t ldx, int64_t k, int8_t* xq,
                  int64_t ldxq, float* aux, int64_t ldaux) {
  const bool q8 = type == QuantType::kQ8_0, awq = type == QuantType::kAwq4,
             q4k = type == QuantType::kQ4_K || type == QuantType::kQ5_K;
  // Formats whose offset is a per-block min (K-quants, Q4_1, Q5_1): aux keeps d_x x the lane sum.
  const bool min_sums = q4k || type == QuantType::kQ4_1 || type == QuantType::kQ5_1;
  const int64_t step = q8 ? 64 : 128;
  const int64_t blocks = step / 32;
  // vpdpbusd of the weights' offset (as unsigned bytes) with x gives offset x the lane's x sum:
  // 8 for Q4_0, 16 for Q5_0, 128 for Q8_0 (int32 corrections); AWQ and Q4_K keep the plain sum
  // (offset 1) in F32.
  const char offset_byte = q8                         ? static_cast<char>(0x80)
                           : type == QuantType::kQ4_0 ? 8
                           : type == QuantType::kQ5_0 ? 16
                           : type == QuantType::kQ6_K ? 32
                                                      : 1;
  const __m512i offset = _mm512_set1_epi8(offset_byte);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t s = 0; s < k / step; ++s) {
      const float* xs = x + r * ldx + s * step;
      int8_t* qs = xq + r * ldxq + s * step;
      float* as = aux + r * ldaux + s * 32;
      alignas(64) float lane_d[16];
      for (int64_t b = 0; b < blocks; ++b) {
        __m128i first, second;
        const float d = QuantizeBlock(xs + 32 * b, awq, first, second);
        if (type == QuantType::kQ6_K) {
          // Dwords dealt out: elements 8m..8m+3 to the first vector, 8m+4..8m+7 to the second.
          const __m128 f = _mm_castsi128_ps(first), sd = _mm_castsi128_ps(second);
          first = _mm_castps_si128(_mm_shuffle_ps(f, sd, _MM_SHUFFLE(2, 0, 2, 0)));
          second = _mm_castps_si128(_mm_shuffle_ps(f, sd, _MM_SHUFFLE(3, 1, 3, 1)));
        }
        // Q4_K: block b is lane group g with kQ4KOrder[g] == b (the order is its own inverse).
        const int64_t g = q4k ? kQ4KOrder[b] : b;
        int8_t* at_first = q8 ? qs + 32 * b : qs + 16 * g;
        int8_t* at_second = q8 ? qs + 32 * b + 16 : qs + 64 + 16 * g;
        _mm_storeu_si128(reinterpret_cast<__m128i*>(at_first), first);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(at_second), second);
        for (int64_t l = 0; l < 16 / blocks; ++l) lane_d[g * (16 / blocks) + l] = d;
      }
      const __m512 dx = _mm512_load_ps(lane_d);
      _mm512_storeu_ps(as, dx);
      __m512i sum = _mm512_setzero_si512();
      for (int v = 0; v < (q8 ? 1 : 2); ++v)
        sum = _mm512_dpbusd_epi32(sum, offset, _mm512_loadu_si512(qs + 64 * v));
      if (awq) {
        _mm512_storeu_ps(as + 16, _mm512_cvtepi32_ps(sum));
      } else if (min_sums) {
        _mm512_storeu_ps(as + 16, _mm512_mul_ps(dx, _mm512_cvtepi32_ps(sum)));
      } else {
        _mm512_storeu_si512(as + 16, _mm512_sub_epi32(_mm512_setzero_si512(), sum));
      }
    }
  }
}

int32_t Int8DotLoop(int64_t iters) {
  __m512i acc[16];
  for (int j = 0; j < 16; ++j) acc[j] = _mm512_set1_epi32(j);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-1);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], a, b);
  }
  // The lanes wrap around (vpdpbusd does not saturate); combine them with XOR, which cannot
  // overflow, to keep the chains live.
  __m512i s = acc[0];
  for (int j = 1; j < 16; ++j) s = _mm512_xor_si512(s, acc[j]);
  return _mm_cvtsi128_si32(_mm512_castsi512_si128(s));
}

void QuantLinearInt8(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  if (t.w->type == QuantType::kQ4_0)
    return QuantLinearInt8Impl<QuantType::kQ4_0>(t, t0, t1, n0, n1);
  if (t.w->type == QuantType::kAwq4)
    return QuantLinearInt8Impl<QuantType::kAwq4>(t, t0, t1, n0, n1);
  if (t.w->type == QuantType::kQ5_0)
    return QuantLinearInt8Impl<QuantType::kQ5_0>(t, t0, t1, n0, n1);
  if (t.w->type == QuantType::kQ4_K)
    return QuantLinearInt8Impl<QuantType::kQ4_K>(t, t0, t1, n0, n1);
  if (t.w->type == QuantType::kQ4_1)
    return QuantLinearInt8Impl<QuantType::kQ4_1>(t, t0, t1, n0, n1);
  if (t.w->type == QuantType::kQ5_1)
    return QuantLinearInt8Impl<QuantType::kQ5_1>(t, t0, t1, n0, n1);
  if (t.w->type == QuantType::kQ5_K)
    return QuantLinearInt8Impl<QuantType::kQ5_K>(t, t0, t1, n0, n1);
  if (t.w->type == QuantType::kQ6_K)
    return QuantLinearInt8Impl<QuantType::kQ6_K>(t, t0, t1, n0, n1);
  return QuantLinearInt8Impl<QuantType::kQ8_0>(t, t0, t1, n0, n1);
}

}  // namespace xinfer::cpu::avx512

#pragma GCC pop_options

#endif  // defined(__x86_64__)
