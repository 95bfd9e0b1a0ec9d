// 4-bit Linear (AWQ4 with group size 128, Q4_0) with vdpbf16ps, for CPUs with AVX512-BF16 (and
// AVX512-VBMI for Q4_0).
// AWQ4 g128 comes here only under XINFER_W4A16_PANELS=0 (FastCpuOps places it for the W4A16 panel
// kernel, cpu_kernels_w4a16_panels_avx512.cc: at T >= 16 ~1.7x this kernel on Zen 4); Q4_0 with
// F32 activations (--no-int8-activations) still does.
//
// Why: the F32 nibble kernel (cpu_kernels_quant_avx512.cc) spends 5 integer ops and 2 FMAs per 32
// weights and is compute-bound at ~12 GB/s of weights per Zen 4 core, below the DRAM stream.
// Here a row's nibbles of 128 consecutive weights ("a group") come into one register (AWQ: one
// 64-byte load; Q4_0: the 16 nibble bytes of 4 blocks picked out of 72 bytes with one vpermt2b);
// each 16-bit word holds 4 nibbles, and one shift + one vpternlogd turns nibble n of all 32 words
// into 32 BF16 values m = 1 + q/16 (exact: 4 mantissa bits). vdpbf16ps then multiplies 32 weights
// per instruction.
//
// Activations stay (nearly) F32: each x is split into two BF16 values, hi = bf16(x) and
// lo = bf16(x - hi), and every weight meets both, so x is represented to 2^-17 of its magnitude
// (BF16 activations alone moved the golden logits past their tolerance). Products of BF16 values
// are exact in F32 and accumulate in F32. Per 32 weights: 2 integer ops + 2 vdpbf16ps, against 7
// ops for the F32 kernel. The values stored are those of 16 x (exact: a power of two), so that the
// 16 of m = 1 + q/16 needs no multiply per group and row (below).
//
// Layout (NibbleBf16PrepareX): word w of a group holds 4 elements, nibble n (bits 4n..4n+3) being
// element E(n, w) of the group: AWQ (byte 2w: elements 4w, 4w+1; byte 2w+1: 4w+2, 4w+3):
// E = 4w + n; Q4_0 (block b = w/8 of the group, byte j = 2(w%8) + n/2 of its qs; low nibble =
// element j, high = j + 16): E = 32b + j + 16(n%2). The kernel needs x[E(n, w)] in lane w, so a
// group of x is stored as 4 vectors of 32 hi values then 4 of 32 lo values (512 bytes).
// vdpbf16ps lane l sums words 2l and 2l+1, so xsum lane l is the sum of hi + lo over the 8
// elements of those two words, and xsum16 the same of the stored (16 x) values; for Q4_0 the lane
// lies in one block (l/4), whose scale d is broadcast to that lane. Per group xsum then xsum16,
// 16 floats each.
//
// Per group g and weight row: a = -(z * xsum_g) - xsum16_g (one FMA; tiles of several rows of x
// compute the same value as xsum16_g * -(1 + z/16), one product; z: the AWQ zero point, 8 for
// Q4_0), b = 0; for n = 0, 1: a = dpbf16(a, hi_n, m_n); a = dpbf16(a, lo_n, m_n), and b likewise
// over n = 2, 3 (two chains: vdpbf16ps latency); acc = fma(scale, a + b, acc). Every value is 16
// times that of the same sequence on x itself with 16 x scale at the end, i.e. the same bits (the
// scaling commutes with each rounding) except where vdpbf16ps flushes denormals (or 16 x overflows,
// |x| >= 2^124); the zero point and the scale are broadcast from memory, not computed per group and
// row (135 -> 118 instructions per 4 rows x 128 weights in the decode tile, which is bound by its
// instruction count; AWQ W4A16 16-sequence decode +18 %, prefill +24 %). That sequence depends on K
// only, not on the tile, the batch or the threads (batch invariance), like every kernel here.
#if defined(__x86_64__)  // x86 only; cpu_kernels_avx512_absent.cc elsewhere

#include <immintrin.h>

#include <array>
#include <cstdint>

#include "backend/cpu/cpu_kernels.h"

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,avx512vbmi,fma,f16c,bmi2")

#include "backend/cpu/tile_avx512.h"

namespace xinfer::cpu::avx512 {
namespace {

constexpr int64_t kGroup = 128;
constexpr int64_t kGroupXElems = 2 * kGroup;  // hi and lo values of one group of x

// m_n = BF16(1 + q/16) for nibble n of each word of `v`.
inline void UnpackGroup(__m512i v, __m512bh m[4]) {
  const __m512i mask = _mm512_set1_epi16(0x0078);  // BF16 mantissa bits 3..6
  const __m512i one = _mm512_set1_epi16(0x3F80);   // BF16 1.0
  // 0xEA: (a & b) | c
  m[0] = AsBh(_mm512_ternarylogic_epi32(_mm512_slli_epi16(v, 3), mask, one, 0xEA));
  m[1] = AsBh(_mm512_ternarylogic_epi32(_mm512_srli_epi16(v, 1), mask, one, 0xEA));
  m[2] = AsBh(_mm512_ternarylogic_epi32(_mm512_srli_epi16(v, 5), mask, one, 0xEA));
  m[3] = AsBh(_mm512_ternarylogic_epi32(_mm512_srli_epi16(v, 9), mask, one, 0xEA));
}

// Where the tiles find a row's group of nibbles and its per-lane multipliers.
template <QuantType QT>
struct NibbleGroupFormat;

template <>
struct NibbleGroupFormat<QuantType::kAwq4> {
  using Row = AwqRow;
  static Row RowOf(const PreparedQuant& p, int64_t r) { return AwqRowOf(p, r); }
  static constexpr int64_t kGroupBytes = 64;
  static __m512i Nibbles(const Row& row, int64_t g) { return _mm512_loadu_si512(row.q + g * 64); }
  static __m512 Scale(const Row& row, int64_t g) { return _mm512_set1_ps(row.scales[g]); }
  // -(z * xsum) - xsum16.
  static __m512 ZeroTerm(const Row& row, int64_t g, __m512 xsum, __m512 xsum16) {
    return _mm512_fnmsub_ps(_mm512_set1_ps(row.zeros[g]), xsum, xsum16);
  }
  // -(1 + z/16), exact for the integer zero points: xsum16 times it is the same value, for tiles
  // with several rows of x (computed once per weight row, used for each).
  static __m512 NegOnePlusZ16(const Row& row, int64_t g) {
    return _mm512_set1_ps(-(1.f + row.zeros[g] * 0.0625f));
  }
};

template <>
struct NibbleGroupFormat<QuantType::kQ4_0> {
  struct Row {
    const uint8_t* q;
  };
  static Row RowOf(const PreparedQuant& p, int64_t r) { return {p.q + r * p.row_bytes}; }
  static constexpr int64_t kGroupBytes = 72;  // 4 blocks of f16 d + 16 bytes of nibbles
  // Bytes 0..63 and 8..71 of the group; vpermt2b picks the 4 x 16 nibble bytes (block b's byte j
  // at 18b + 2 + j) and vpermw the 4 scales (words 0, 9, 18, 27 of the first load).
  static __m512i Nibbles(const Row& row, int64_t g) {
    const uint8_t* p = row.q + g * 72;
    return _mm512_permutex2var_epi8(_mm512_loadu_si512(p), NibbleIndex(),
                                    _mm512_loadu_si512(p + 8));
  }
  static __m512 Scale(const Row& row, int64_t g) {
    const __m512i scales =
        _mm512_permutexvar_epi16(ScaleIndex(), _mm512_loadu_si512(row.q + g * 72));
    return _mm512_cvtph_ps(_mm512_castsi512_si256(scales));
  }
  // -(8 * xsum) - xsum16 = -1.5 * xsum16 (exact).
  static __m512 ZeroTerm(const Row&, int64_t, __m512, __m512 xsum16) {
    return _mm512_mul_ps(xsum16, _mm512_set1_ps(-1.5f));
  }
  static __m512 NegOnePlusZ16(const Row&, int64_t) { return _mm512_set1_ps(-1.5f); }
  static __m512i NibbleIndex() { return _mm512_load_si512(kQ4_0NibbleIndex.data()); }
  static __m512i ScaleIndex() {
    // Lane l (of 16 words) takes block l / 4's d (word 9 * block); the upper half is unused.
    return _mm512_setr_epi32(0, 0, 9 | 9 << 16, 9 | 9 << 16, 18 | 18 << 16, 18 | 18 << 16,
                             27 | 27 << 16, 27 | 27 << 16, 0, 0, 0, 0, 0, 0, 0, 0);
  }
};

// kHiOnly (BF16 activations): the lo halves are zero, so their vdpbf16ps are skipped.
// kOnce (one pass of x: decode): the weight bytes are read once, prefetched with the read-once
// hint (cpu_kernels.h: non-temporal on AMD, into L2 elsewhere).
template <QuantType QT, bool kHiOnly, int MR, int NR, bool kOnce>
void TileNibbleBf16(const QuantLinearTask& t, const PreparedQuant& p, int64_t r0, int64_t n) {
  using F = NibbleGroupFormat<QT>;
  typename F::Row rows[NR];
#pragma GCC unroll 8
  for (int j = 0; j < NR; ++j) rows[j] = F::RowOf(p, n + j);
  const uint16_t* x = t.xs + r0 * t.ldxs;
  const float* xs = t.xsum + r0 * t.ldxsum;
  __m512 acc[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
  const bool non_temporal = DetectCpuFeatures().read_once_non_temporal;
  for (int64_t g = 0; g < p.groups; ++g) {
    if constexpr (kOnce)
      PrefetchLines(rows[0].q + kReadOncePrefetchBytes + g * NR * F::kGroupBytes,
                    NR * F::kGroupBytes, non_temporal);
    else
      PrefetchRange(rows[0].q + kQuantPrefetchBytes + g * NR * F::kGroupBytes, NR * F::kGroupBytes);
    if constexpr (MR == 1) {
      // One row of x: its 8 vectors stay in registers; NR independent chains.
      __m512bh xv[8];
#pragma GCC unroll 8
      for (int v = 0; v < (kHiOnly ? 4 : 8); ++v)
        xv[v] = AsBh(_mm512_loadu_si512(x + g * kGroupXElems + v * 32));
      const __m512 xsb = _mm512_loadu_ps(xs + g * 32), xsb16 = _mm512_loadu_ps(xs + g * 32 + 16);
      // Two chains per weight row (nibbles 0-1 and 2-3) halve the vdpbf16ps latency chain.
      __m512 ta[NR], tb[NR];
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) {
        ta[j] = F::ZeroTerm(rows[j], g, xsb, xsb16);
        tb[j] = _mm512_setzero_ps();
      }
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) {
        __m512bh m[4];
        UnpackGroup(F::Nibbles(rows[j], g), m);
#pragma GCC unroll 2
        for (int nb = 0; nb < 2; ++nb) {
          ta[j] = _mm512_dpbf16_ps(ta[j], xv[nb], m[nb]);
          if constexpr (!kHiOnly) ta[j] = _mm512_dpbf16_ps(ta[j], xv[4 + nb], m[nb]);
          tb[j] = _mm512_dpbf16_ps(tb[j], xv[2 + nb], m[2 + nb]);
          if constexpr (!kHiOnly) tb[j] = _mm512_dpbf16_ps(tb[j], xv[6 + nb], m[2 + nb]);
        }
      }
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j)
        acc[0][j] = _mm512_fmadd_ps(F::Scale(rows[j], g), _mm512_add_ps(ta[j], tb[j]), acc[0][j]);
      continue;
    }
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      __m512bh m[4];
      UnpackGroup(F::Nibbles(rows[j], g), m);
      const __m512 scale = F::Scale(rows[j], g);
      const __m512 nzz = F::NegOnePlusZ16(rows[j], g);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const uint16_t* xg = x + i * t.ldxs + g * kGroupXElems;
        // ZeroTerm's value: one rounding of the same product.
        __m512 ta = _mm512_mul_ps(_mm512_loadu_ps(xs + i * t.ldxsum + g * 32 + 16), nzz);
        __m512 tb = _mm512_setzero_ps();
#pragma GCC unroll 2
        for (int nb = 0; nb < 2; ++nb) {
          ta = _mm512_dpbf16_ps(ta, AsBh(_mm512_loadu_si512(xg + nb * 32)), m[nb]);
          if constexpr (!kHiOnly)
            ta = _mm512_dpbf16_ps(ta, AsBh(_mm512_loadu_si512(xg + (4 + nb) * 32)), m[nb]);
          tb = _mm512_dpbf16_ps(tb, AsBh(_mm512_loadu_si512(xg + (2 + nb) * 32)), m[2 + nb]);
          if constexpr (!kHiOnly)
            tb = _mm512_dpbf16_ps(tb, AsBh(_mm512_loadu_si512(xg + (6 + nb) * 32)), m[2 + nb]);
        }
        const __m512 tmp = _mm512_add_ps(ta, tb);
        acc[i][j] = _mm512_fmadd_ps(scale, tmp, acc[i][j]);
      }
    }
  }
  StoreTile(acc, t.bias != nullptr ? t.bias + n : nullptr, t.out + r0 * t.ldo + n, t.ldo);
}

constexpr int kMr = 4;
constexpr int kNr = 4;
using TileFn = void (*)(const QuantLinearTask&, const PreparedQuant&, int64_t, int64_t);
template <QuantType QT, bool H, int MR, bool O>
constexpr TileFn kRow[kNr] = {TileNibbleBf16<QT, H, MR, 1, O>, TileNibbleBf16<QT, H, MR, 2, O>,
                              TileNibbleBf16<QT, H, MR, 3, O>, TileNibbleBf16<QT, H, MR, 4, O>};
template <QuantType QT, bool H, bool O>
constexpr const TileFn* kTiles[kMr] = {kRow<QT, H, 1, O>, kRow<QT, H, 2, O>, kRow<QT, H, 3, O>,
                                       kRow<QT, H, 4, O>};

// Element of the group that nibble n of word w holds (see the top of the file).
int ElementOf(QuantType type, int n, int w) {
  if (type == QuantType::kAwq4) return 4 * w + n;
  return 32 * (w / 8) + 2 * (w % 8) + n / 2 + 16 * (n % 2);
}

template <QuantType QT, bool kHiOnly>
void QuantLinearNibbleBf16Impl(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0,
                               int64_t n1) {
  const QuantTensor& w = *t.w;
  PreparedQuant p = PrepareQuant(w);
  p.groups = w.cols / kGroup;  // the tiles' loop count: AWQ groups of 128, or 4 Q4_0 blocks
  int64_t nb = (256 << 10) / p.row_bytes / kNr * kNr;
  if (nb < kNr) nb = kNr;
  // One pass of x (decode) reads each weight byte once; more rows of x pass over each L2 block.
  const TileFn* const* tiles =
      t1 - t0 <= kMr ? kTiles<QT, kHiOnly, true> : kTiles<QT, kHiOnly, false>;
  ForEachTile<kMr, kNr>(t0, t1, n0, n1, nb, [&](int64_t r, int64_t mr, int64_t n, int64_t nr) {
    tiles[mr - 1][nr - 1](t, p, r, n);
  });
}

}  // namespace

bool NibbleBf16Supports(const QuantTensor& w, const CpuFeatures& f) {
  if (!f.avx512_bf16 || w.cols % kGroup != 0) return false;
  if (w.type == QuantType::kAwq4) return w.group_size == kGroup;
  return w.type == QuantType::kQ4_0 && f.avx512_vbmi;
}

void NibbleBf16PrepareX(QuantType type, const float* x, int64_t rows, int64_t ldx, int64_t k,
                        uint16_t* xs, int64_t ldxs, float* xsum, int64_t ldxsum, bool hi_only) {
  // Word index (into the concatenation of two 32-word vectors) of element E(n, w), w = 0..15;
  // words 16..31 take E(n, w) - 64 from the group's last 64 elements.
  __m512i idx[4];
  for (int n = 0; n < 4; ++n) {
    alignas(64) uint16_t v[32];
    for (int w = 0; w < 32; ++w) v[w] = static_cast<uint16_t>(ElementOf(type, n, w) % 64);
    idx[n] = _mm512_load_si512(v);
  }
  const __m512i hi_mask = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  const __m512 sixteen = _mm512_set1_ps(16.f), sixteenth = _mm512_set1_ps(0.0625f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < k / kGroup; ++g) {
      const float* xg = x + r * ldx + g * kGroup;
      uint16_t* out = xs + r * ldxs + g * kGroupXElems;
      // hi and lo of the group's 128 elements in natural order, 32 per vector.
      __m512i hi[4], lo[4];
      for (int v = 0; v < 4; ++v) {
        const __m512 a = _mm512_mul_ps(_mm512_loadu_ps(xg + 32 * v), sixteen);
        const __m512 b = _mm512_mul_ps(_mm512_loadu_ps(xg + 32 * v + 16), sixteen);
        const __m256bh ha = _mm512_cvtneps_pbh(a), hb = _mm512_cvtneps_pbh(b);
        const __m512 ra =
            _mm512_sub_ps(a, _mm512_castsi512_ps(_mm512_slli_epi32(
                                 _mm512_cvtepu16_epi32(reinterpret_cast<const __m256i&>(ha)), 16)));
        const __m512 rb =
            _mm512_sub_ps(b, _mm512_castsi512_ps(_mm512_slli_epi32(
                                 _mm512_cvtepu16_epi32(reinterpret_cast<const __m256i&>(hb)), 16)));
        const __m256bh la = _mm512_cvtneps_pbh(ra), lb = _mm512_cvtneps_pbh(rb);
        hi[v] = _mm512_inserti64x4(_mm512_castsi256_si512(reinterpret_cast<const __m256i&>(ha)),
                                   reinterpret_cast<const __m256i&>(hb), 1);
        lo[v] = _mm512_inserti64x4(_mm512_castsi256_si512(reinterpret_cast<const __m256i&>(la)),
                                   reinterpret_cast<const __m256i&>(lb), 1);
      }
      __m512 sum = _mm512_setzero_ps();
      // BF16 activations: no lo half at all (the tiles never read it; xsum sums hi only).
      for (int part = 0; part < (hi_only ? 1 : 2); ++part) {
        const __m512i* src = part == 0 ? hi : lo;
        for (int n = 0; n < 4; ++n) {
          // Lanes 0..15: from the first 64 elements (vectors 0, 1); 16..31: from the last 64.
          const __m512i first = _mm512_permutex2var_epi16(src[0], idx[n], src[1]);
          const __m512i second = _mm512_permutex2var_epi16(src[2], idx[n], src[3]);
          const __m512i vec = _mm512_inserti64x4(first, _mm512_castsi512_si256(second), 1);
          _mm512_storeu_si512(out + (part * 4 + n) * 32, vec);
          // Lane l of the dot product covers words 2l (even) and 2l + 1 (odd).
          sum = _mm512_add_ps(sum, _mm512_castsi512_ps(_mm512_slli_epi32(vec, 16)));
          sum = _mm512_add_ps(sum, _mm512_castsi512_ps(_mm512_and_si512(vec, hi_mask)));
        }
      }
      // `sum` adds the 16 x values: xsum16; xsum is that / 16 (exact).
      _mm512_storeu_ps(xsum + r * ldxsum + g * 32, _mm512_mul_ps(sum, sixteenth));
      _mm512_storeu_ps(xsum + r * ldxsum + g * 32 + 16, sum);
    }
  }
}

void QuantLinearNibbleBf16(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0,
                           int64_t n1) {
  if (t.w->type == QuantType::kAwq4) {
    if (t.hi_only) return QuantLinearNibbleBf16Impl<QuantType::kAwq4, true>(t, t0, t1, n0, n1);
    return QuantLinearNibbleBf16Impl<QuantType::kAwq4, false>(t, t0, t1, n0, n1);
  }
  if (t.hi_only) return QuantLinearNibbleBf16Impl<QuantType::kQ4_0, true>(t, t0, t1, n0, n1);
  return QuantLinearNibbleBf16Impl<QuantType::kQ4_0, false>(t, t0, t1, n0, n1);
}

}  // namespace xinfer::cpu::avx512

#pragma GCC pop_options

#endif  // defined(__x86_64__)
