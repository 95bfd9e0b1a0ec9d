// Dense Linear on AVX-512 CPUs, broadcast-x form over 16-row weight panels: one output row per
// 32-bit lane of a 512-bit register, so a panel's k-step is one register, and x is broadcast.
// Two families of tiles share the tables and the loop order below:
// - F32 activations (F32, BF16, F16 weights): the same panels as the AVX2 kernel
//   (cpu_kernels_dense_panels_avx2.cc; tensor.h: kDwordTiles for F32, kWordTiles for BF16/F16)
//   and the same bits.
// - BF16 activations (`--dtype bfloat16`, AVX512-BF16 CPUs): BF16 weights in kDwordTiles over
//   their k-pairs, x rounded to BF16, vdpbf16ps.
//
// Why, measured on a 2-core Zen 5 (two 512-bit FMA pipes; docs/performance.md, session 14): the
// row-tile kernels (cpu_kernels_avx512.cc) keep 16 partial sums per output row and reduce them at
// the end, reload x for every 6 weight rows and, for one row of x, read a tile's 6 rows as one
// stream; here a tile of up to 8 rows of x meets up to 6 panels with one FMA (or vdpbf16ps) per
// (row of x, panel) per k-step — no reduction, no permuted copy of x.
//
// Arithmetic (batch invariance, as cpu_kernels.h asks), output element (t, n):
// - F32 activations: acc = 0; for k in 0..K-1: acc = fma(x[t, k], w[n, k], acc)
// - BF16 activations: acc = 0; for kk in 0..K/2-1:
//     acc = vdpbf16ps(acc, x[t, 2kk..2kk+1], w[n, 2kk..2kk+1])
// then out = acc (+ bias[n]), in F32: one lane of one instruction sequence whatever the tile, the
// rows of x in the call or the threads.
#if defined(__x86_64__)  // x86 only; cpu_kernels_avx512_absent.cc elsewhere

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "base/check.h"
#include "tensor/dtype.h"

// ---- ISA-neutral: tile tables and the order tiles run in (no vector code here) ----
namespace xinfer::cpu::avx512 {
namespace {

constexpr int64_t kRows = kDwordTileRows;  // weight rows per panel: one register of 16 lanes
constexpr int kMr = 8;                     // rows of x per tile

// A tile: MR rows of x (ldx elements apart) times NP consecutive full panels of `steps` k-steps
// each (a panel's steps are contiguous), into out (ldo apart), bias added where given.
// prefetch_ahead != 0 (the streamed order below): the tile also prefetches, line by line as it
// reads its panels, the bytes that far past them (the next block's panels) into L2.
using PanelTileFn = void (*)(const void* x, int64_t ldx, const void* panels, int64_t steps,
                             const float* bias, float* out, int64_t ldo, int64_t prefetch_ahead);

// Panels per tile for MR rows of x: MR x NP accumulators + NP weight registers + a broadcast
// within the 32 registers. One or two rows of x (decode) take one panel at a time, so that the
// panels, which lie one after another, are a single sequential stream per thread: four panels
// side by side (four streams, restarted every tile) made one-sequence BF16 decode of the 0.5B
// shape 5-9 % slower (2-core Zen 5, whole model, 42-44 against 45-46 tok/s), and the FMA chain
// of one panel still reads 150-175 GB/s from L3.
constexpr int MaxPanels(int mr) { return mr <= 2 ? 1 : mr <= 4 ? 6 : 3; }

// Family::Tile<MR, NP> by [MR - 1][NP - 1], null past MaxPanels(MR).
template <class Family, int MR, int NP>
constexpr PanelTileFn TileOrNull() {
  if constexpr (NP <= MaxPanels(MR)) {
    return &Family::template Tile<MR, NP>;
  } else {
    return nullptr;
  }
}
template <class Family, int MR>
constexpr PanelTileFn kRow[6] = {TileOrNull<Family, MR, 1>(), TileOrNull<Family, MR, 2>(),
                                 TileOrNull<Family, MR, 3>(), TileOrNull<Family, MR, 4>(),
                                 TileOrNull<Family, MR, 5>(), TileOrNull<Family, MR, 6>()};
template <class Family>
constexpr const PanelTileFn* kTiles[kMr] = {kRow<Family, 1>, kRow<Family, 2>, kRow<Family, 3>,
                                            kRow<Family, 4>, kRow<Family, 5>, kRow<Family, 6>,
                                            kRow<Family, 7>, kRow<Family, 8>};

// One panel Linear call's operands, in bytes where the two families differ.
struct PanelOperands {
  const uint8_t* x;     // row r at x + r * x_row_bytes
  int64_t x_row_bytes;  // and ldx elements apart, as the tiles take it
  int64_t ldx;
  const uint8_t* w;  // panel j (rows 16j..16j+15) at w + j * panel_bytes
  int64_t panel_bytes;
  int64_t steps;  // k-steps per panel
  const float* bias;
  float* out;
  int64_t ldo;
};

// The line at `at` in each of NP panels (`stride` elements apart), `ahead` bytes further on.
template <int NP, class T>
inline void PrefetchPanels(const T* at, int64_t stride, int64_t ahead) {
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p)
    __builtin_prefetch(reinterpret_cast<const char*>(at + p * stride) + ahead, 0, 2);
}

// The full panels in rows [n0, full_end) against rows [t0, t1) of x. Each panel is read from
// memory once:
// - a decode-sized x (one tile) meets each panel as it streams in;
// - an x of up to 256 KiB (batched decode: "streamed") stays in L1/L2 while every tile of it
//   passes over one tile's width of panels, and every tile prefetches the next such block into
//   L2 as it goes, so that DRAM streams while the FMAs run. (An L2-sized block, read from DRAM
//   by the first tile of x at half the FMA rate and then computed from L2 by the others, ran the
//   151936-row lm_head at T = 16 ~25 % slower; the prefetch took it from 520-545 to 655-695
//   GFLOP/s with vdpbf16ps, 2-core Zen 5, where row tiles run 525-655.)
// - a larger x (prefill) meets blocks of panels of about 256 KiB that stay in L2 while every
//   tile of x passes over them.
template <class Family>
void RunFullPanels(const PanelOperands& o, int64_t t0, int64_t t1, int64_t n0, int64_t full_end) {
  const int64_t rows = t1 - t0;
  const bool streamed = rows > kMr && rows * o.x_row_bytes <= 256 << 10;
  const int64_t block =
      rows <= kMr ? std::max<int64_t>(full_end - n0, kRows)
      : streamed  ? MaxPanels(kMr) * kRows
                  : std::max<int64_t>(MaxPanels(kMr), (256 << 10) / o.panel_bytes) * kRows;
  for (int64_t bs = n0; bs < full_end; bs += block) {
    const int64_t be = std::min(full_end, bs + block);
    for (int64_t r = t0; r < t1; r += kMr) {
      const int mr = static_cast<int>(std::min<int64_t>(kMr, t1 - r));
      const int64_t prefetch_ahead =
          streamed && be + block <= full_end ? block / kRows * o.panel_bytes : 0;
      for (int64_t p = bs; p < be;) {
        const int np = static_cast<int>(std::min<int64_t>(MaxPanels(mr), (be - p) / kRows));
        kTiles<Family>[mr - 1][np - 1](
            o.x + r * o.x_row_bytes, o.ldx, o.w + p / kRows * o.panel_bytes, o.steps,
            o.bias != nullptr ? o.bias + p : nullptr, o.out + r * o.ldo + p, o.ldo, prefetch_ahead);
        p += np * kRows;
      }
    }
  }
}

}  // namespace
}  // namespace xinfer::cpu::avx512

// ---- F32 activations: F32 FMA over F32 / BF16 / F16 weights ----
// GCC 12 reports the intrinsics' _mm512_undefined_* pass-through operands as maybe-uninitialized.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c")

namespace xinfer::cpu::avx512 {
namespace {

// The 16 weights of one k of a panel, in row order, as F32.
struct F32Panel {
  using T = float;
  static __m512 Load(const float* p) { return _mm512_loadu_ps(p); }
};
struct F16Panel {
  using T = uint16_t;
  static __m512 Load(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
};
struct Bf16Panel {
  using T = uint16_t;
  static __m512 Load(const uint16_t* p) {
    const __m512i v =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
  }
};

// Both families' epilogue (the BF16 one inlines it too: its target is a superset of this one).
template <int MR, int NP>
inline void StoreTile(const __m512* acc, const float* bias, float* out, int64_t ldo) {
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) {
      __m512 v = acc[i * NP + p];
      if (bias != nullptr) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + p * kRows));
      _mm512_storeu_ps(out + i * ldo + p * kRows, v);
    }
}

template <class P>
struct FmaFamily {
  template <int MR, int NP>
  __attribute__((noinline)) static void Tile(const void* xv, int64_t ldx, const void* panels,
                                             int64_t k, const float* bias, float* out, int64_t ldo,
                                             int64_t prefetch_ahead) {
    static_assert(MR >= 1 && NP >= 1 && MR * NP + NP < 32);
    const float* x = static_cast<const float*>(xv);
    const typename P::T* panel = static_cast<const typename P::T*>(panels);
    __m512 acc[MR * NP];
#pragma GCC unroll 48
    for (int i = 0; i < MR * NP; ++i) acc[i] = _mm512_setzero_ps();
    const int64_t panel_stride = k * kRows;
    // A k-step of a panel is 32 (16-bit weights) or 64 bytes: one prefetch per 64-byte line.
    constexpr int64_t kStepsPerLine = 64 / (kRows * sizeof(typename P::T));
    const int64_t prefetch_mask = prefetch_ahead != 0 ? kStepsPerLine - 1 : -1;
    for (int64_t kk = 0; kk < k; ++kk) {
      __m512 w[NP];
      if ((kk & prefetch_mask) == 0)
        PrefetchPanels<NP>(panel + kk * kRows, panel_stride, prefetch_ahead);
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) w[p] = P::Load(panel + p * panel_stride + kk * kRows);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const __m512 xb = _mm512_set1_ps(x[i * ldx + kk]);
#pragma GCC unroll 8
        for (int p = 0; p < NP; ++p) acc[i * NP + p] = _mm512_fmadd_ps(xb, w[p], acc[i * NP + p]);
      }
    }
    StoreTile<MR, NP>(acc, bias, out, ldo);
  }
};

template <class P>
void LinearPanelsTyped(const LinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  const int64_t full_end = std::min(n1, t.ldo / kRows * kRows);  // the weight has ldo rows
  const PanelOperands o{reinterpret_cast<const uint8_t*>(t.x),
                        t.ldx * static_cast<int64_t>(sizeof(float)),
                        t.ldx,
                        static_cast<const uint8_t*>(t.w),
                        t.k * kRows * static_cast<int64_t>(sizeof(typename P::T)),
                        t.k,
                        t.bias,
                        t.out,
                        t.ldo};
  RunFullPanels<FmaFamily<P>>(o, t0, t1, n0, full_end);
  if (n1 > full_end) LinearPartialPanel(t, t0, t1, std::max(n0, full_end));
}

}  // namespace

void LinearPanels(const LinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  XI_CHECK_MSG(n0 % kRows == 0 && (n1 % kRows == 0 || n1 == t.ldo),
               "a panel Linear range must start and end at a panel");
  switch (t.wdtype) {
    case DType::kF32:
      return LinearPanelsTyped<F32Panel>(t, t0, t1, n0, n1);
    case DType::kBF16:
      return LinearPanelsTyped<Bf16Panel>(t, t0, t1, n0, n1);
    case DType::kF16:
      return LinearPanelsTyped<F16Panel>(t, t0, t1, n0, n1);
    default:
      XI_CHECK_MSG(false, "no panel kernel for this weight dtype");
  }
}

}  // namespace xinfer::cpu::avx512

#pragma GCC pop_options

// ---- BF16 activations (`--dtype bfloat16`): BF16 k-pair panels, vdpbf16ps ----
// The weight is kDwordTiles over its BF16 k-pairs (tensor.h; K even): per pair kk, the 16 rows'
// (w[n, 2kk], w[n, 2kk + 1]) side by side, one register. x is rounded to BF16 (RoundRowsToBf16)
// and its pair broadcast as a dword.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma")

namespace xinfer::cpu::avx512 {
namespace {

inline __m512bh DwordsAsBh(__m512i v) { return reinterpret_cast<__m512bh&>(v); }
inline __m512bh BroadcastPair(const uint16_t* p) {
  uint32_t pair;
  std::memcpy(&pair, p, sizeof(pair));
  return DwordsAsBh(_mm512_set1_epi32(static_cast<int>(pair)));
}

struct Bf16DotFamily {
  // x: BF16 rows (ldxb apart); panels: k2 pair-steps of 16 dwords each.
  template <int MR, int NP>
  __attribute__((noinline)) static void Tile(const void* xv, int64_t ldxb, const void* panels,
                                             int64_t k2, const float* bias, float* out, int64_t ldo,
                                             int64_t prefetch_ahead) {
    static_assert(MR >= 1 && NP >= 1 && MR * NP + NP < 32);
    const uint16_t* xb = static_cast<const uint16_t*>(xv);
    const uint32_t* panel = static_cast<const uint32_t*>(panels);
    __m512 acc[MR * NP];
#pragma GCC unroll 48
    for (int i = 0; i < MR * NP; ++i) acc[i] = _mm512_setzero_ps();
    const int64_t panel_stride = k2 * kRows;
    for (int64_t kk = 0; kk < k2; ++kk) {
      __m512bh w[NP];
      if (prefetch_ahead != 0) PrefetchPanels<NP>(panel + kk * kRows, panel_stride, prefetch_ahead);
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p)
        w[p] = DwordsAsBh(_mm512_loadu_si512(panel + p * panel_stride + kk * kRows));
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i) {
        const __m512bh xv2 = BroadcastPair(xb + i * ldxb + 2 * kk);
#pragma GCC unroll 8
        for (int p = 0; p < NP; ++p) acc[i * NP + p] = _mm512_dpbf16_ps(acc[i * NP + p], xv2, w[p]);
      }
    }
    StoreTile<MR, NP>(acc, bias, out, ldo);
  }
};

// The last panel when the weight's rows are not a multiple of 16 (nr rows: per pair, nr dwords
// side by side): copied into a zero-padded full panel, then the same tiles, so its elements get
// the same instruction sequence as every other. Runs once per such matrix and call.
void Bf16DotPartialPanel(const LinearTask& t, int64_t t0, int64_t t1, int64_t p) {
  const int64_t k2 = t.k / 2, nr = t.ldo - p;
  const uint32_t* group = static_cast<const uint32_t*>(t.w) + p * k2;
  thread_local std::vector<uint32_t> padded;  // grows to the largest K seen, then stays
  padded.assign(static_cast<size_t>(k2 * kRows), 0);
  for (int64_t kk = 0; kk < k2; ++kk)
    std::memcpy(&padded[kk * kRows], group + kk * nr, nr * sizeof(uint32_t));
  float bias[kRows] = {}, out[kMr * kRows];
  if (t.bias != nullptr) std::memcpy(bias, t.bias + p, nr * sizeof(float));
  for (int64_t r = t0; r < t1; r += kMr) {
    const int mr = static_cast<int>(std::min<int64_t>(kMr, t1 - r));
    kTiles<Bf16DotFamily>[mr - 1][0](t.xb + r * t.ldxb, t.ldxb, padded.data(), k2,
                                     t.bias != nullptr ? bias : nullptr, out, kRows, 0);
    for (int i = 0; i < mr; ++i)
      std::memcpy(t.out + (r + i) * t.ldo + p, out + i * kRows, nr * sizeof(float));
  }
}

}  // namespace

void LinearPanelsBf16Dot(const LinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  XI_CHECK_MSG(t.wdtype == DType::kBF16 && t.k % 2 == 0 && t.xb != nullptr,
               "the BF16-dot panel kernel takes BF16 weights of even K and BF16 activations");
  XI_CHECK_MSG(n0 % kRows == 0 && (n1 % kRows == 0 || n1 == t.ldo),
               "a panel Linear range must start and end at a panel");
  const int64_t k2 = t.k / 2;
  const int64_t full_end = std::min(n1, t.ldo / kRows * kRows);
  const PanelOperands o{reinterpret_cast<const uint8_t*>(t.xb),
                        t.ldxb * static_cast<int64_t>(sizeof(uint16_t)),
                        t.ldxb,
                        static_cast<const uint8_t*>(t.w),
                        k2 * kRows * static_cast<int64_t>(sizeof(uint32_t)),
                        k2,
                        t.bias,
                        t.out,
                        t.ldo};
  RunFullPanels<Bf16DotFamily>(o, t0, t1, n0, full_end);
  if (n1 > full_end) Bf16DotPartialPanel(t, t0, t1, std::max(n0, full_end));
}

}  // namespace xinfer::cpu::avx512

#pragma GCC pop_options

#endif  // defined(__x86_64__)
