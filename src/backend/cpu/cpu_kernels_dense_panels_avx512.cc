// Dense Linear on AVX-512 CPUs, broadcast-x form over 64-row weight groups (tensor.h:
// kDwordTiles64 / kWordPairTiles64 / kWordTiles64): one output row per 32-bit lane, a group's
// k-step four 16-lane registers one after another, x broadcast. Two families of tiles
// (dense_panel_tile_avx512.inc, compiled once for each ISA) share the loop order below:
// - F32 activations (F32, BF16, F16 weights: kDwordTiles64, kWordPairTiles64, kWordTiles64), the
//   AVX2 panel kernel's arithmetic (cpu_kernels_dense_panels_avx2.cc) and so its bits;
// - BF16 activations (`--dtype bfloat16`, AVX512-BF16 CPUs): BF16 weights in kDwordTiles64 over
//   their k-pairs, x rounded to BF16 (RoundRowsToBf16), vdpbf16ps.
//
// Why, measured on a 2-core Zen 5 (docs/performance.md, session 14): the row-tile kernels
// (cpu_kernels_avx512.cc) keep 16 partial sums per output row and reduce them at the end and
// reload x for every 6 weight rows; here a tile of up to 6 rows of x meets a group's 64 rows with
// one FMA (or vdpbf16ps) per (row of x, 16 weight rows) per k-step, no reduction: batched decode
// +10-25 %, prefill +10-20 %. Groups of 64 rows rather than the AVX2 kernel's 16-row panels:
// one row of x then runs four FMA chains on one sequential stream. (One 16-row panel at a time
// is one chain, ~31 GB/s per core from L3 against ~95 for row tiles; four 16-row panels side by
// side are four streams, restarted every tile: one-sequence decode 5-9 % slower.)
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

// ---- ISA-neutral: the order tiles run in, and the partial last group (no vector code) ----
namespace xinfer::cpu::avx512 {
namespace {

constexpr int64_t kGroup = kWideTileRows;  // weight rows per group: four registers of 16 lanes
constexpr int kMr = 6;                     // rows of x per tile: 24 accumulators + 4 w + 1 x

// What a tile prefetches as it reads its group: per k-step kk, the `step_bytes` bytes (0: a
// k-step's own bytes) from group + ahead + kk x step_bytes (ahead 0: nothing); `non_temporal`:
// with prefetchnta (bytes no later tile reads again, on CPUs where
// CpuFeatures::read_once_non_temporal), else into L2 (prefetcht1).
struct TilePrefetch {
  int64_t ahead = 0;
  int64_t step_bytes = 0;
  bool non_temporal = false;
};

// A tile (dense_panel_tile_avx512.inc): MR rows of x times one full group.
using GroupTileFn = void (*)(const void* x, int64_t ldx, const void* group, int64_t steps,
                             const float* bias, float* out, int64_t ldo, TilePrefetch prefetch,
                             bool accumulate);

// One panel Linear call's operands, in bytes where the two families differ.
struct PanelOperands {
  const uint8_t* x;      // row r at x + r * x_row_bytes
  int64_t x_row_bytes;   // and ldx elements apart, as the tiles take it
  int64_t x_step_bytes;  // of x per k-step (one F32, or one BF16 pair)
  int64_t ldx;
  const uint8_t* w;    // the weight, groups of kGroup rows
  int64_t elem_bytes;  // of one k-step element (a value, or a BF16 pair)
  int64_t steps;       // k-steps per row
  const float* bias;
  float* out;
  int64_t ldo;         // = the weight's rows
  bool pairs = false;  // full groups in kWordPairTiles64's row order (BF16 under the FMA tiles)
};

// A decode-sized x's tiles prefetch DecodePrefetchBytes (cpu_kernels.h) ahead of the group
// stream they read, with the read-once hint (prefetchnta on AMD, prefetcht1 on Intel, where
// prefetchnta halved the stream; cpu_kernels.h): 8 KiB, none on Zen 4. On AMD: into L2
// (prefetcht1), 4 KiB ahead had taken the 151936-row BF16 lm_head at T = 1 from the hardware
// prefetcher's 43-48 GB/s to 51-54 (1 KiB 47-49, 16 KiB 45-49; session 14). Non-temporal and 8 KiB
// ahead streams more still, most in the host's fast minutes: against a plain read of the same bytes
// in the same round (2-core Zen 5, 2 threads, medians of 61 rounds of ~80 GB/s / 228 of ~45 GB/s),
// one group stream 0.92 -> 0.99 / 1.03 -> 1.06 and the decode step's 97 GEMVs one after another
// 0.90 -> 0.95 / 1.03 -> 1.04 (12 KiB about the same, 2 and 4 KiB less); the whole one-sequence
// BF16 decode 0.81 -> 0.90 of its paired roofline in the fast minutes, ~0.92 either way in the slow
// ones (docs/performance.md, session 16).

// Batched decode ("streamed" x: more than one tile of rows, at most 256 KiB): x stays in L1/L2
// while every tile of it passes over one block of a group's k-steps, and every tile prefetches
// its own share of the next block into L2 as it goes (the tiles of x share it so that DRAM streams
// while each of them computes: with every tile prefetching all of it, the next group came in
// during the first tile only, and the 151936-row BF16 lm_head at T = 16 ran at 11 GB/s and half
// the FMA rate on a 2-core Xeon). A block is a whole group where the group is small, else about
// kStreamBlockBytes of its k-steps (the tiles carry their sums from one block to the next in out):
// a whole group of the 896 x 4864 down projection is 608 KiB in BF16, and it together with the
// next one prefetched overflowed a 1 MiB L2 — at T = 16 from DRAM on a 2-core Zen 4 with BF16
// activations, 316 GFLOP/s against 391 for the 9728 x 896 gate/up; in blocks 355
// (kernel_bench BM_LinearFromDram; docs/performance.md, session 22).
constexpr int64_t kStreamBlockBytes = 64 << 10;

void RunStreamedGroups(const GroupTileFn* tiles, const PanelOperands& o, int64_t t0, int64_t t1,
                       int64_t g0, int64_t g1) {
  const int64_t rows = t1 - t0;
  const int64_t step_bytes = kGroup * o.elem_bytes;
  const int64_t group_bytes = o.steps * step_bytes;
  const int64_t blocks = std::max<int64_t>(1, group_bytes / kStreamBlockBytes);
  const int64_t block_steps = (o.steps + blocks - 1) / blocks;
  const int64_t tiles_of_x = (rows + kMr - 1) / kMr;
  const int64_t share_bytes = (step_bytes + tiles_of_x - 1) / tiles_of_x;
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* group = o.w + g * group_bytes;
    for (int64_t k0 = 0; k0 < o.steps; k0 += block_steps) {
      const int64_t steps = std::min(block_steps, o.steps - k0);
      const bool last_block = k0 + steps == o.steps;
      const bool prefetch_next = !(last_block && g + 1 == g1);
      for (int64_t r = t0; r < t1; r += kMr) {
        const int mr = static_cast<int>(std::min<int64_t>(kMr, t1 - r));
        // The next block starts where this one ends (the next group follows this one).
        const TilePrefetch prefetch =
            prefetch_next ? TilePrefetch{steps * step_bytes + (r - t0) / kMr * steps * share_bytes,
                                         share_bytes}
                          : TilePrefetch{};
        tiles[mr - 1](o.x + r * o.x_row_bytes + k0 * o.x_step_bytes, o.ldx, group + k0 * step_bytes,
                      steps, last_block && o.bias != nullptr ? o.bias + g * kGroup : nullptr,
                      o.out + r * o.ldo + g * kGroup, o.ldo, prefetch, /*accumulate=*/k0 != 0);
      }
    }
  }
}

// Full groups [g0, g1) against rows [t0, t1) of x. Each group is read from memory once:
// - a decode-sized x (one tile) meets each group as it streams in, prefetched a little ahead;
// - an x of more than one tile and up to 256 KiB (batched decode) is streamed: RunStreamedGroups.
//   (Blocks of ~256 KiB of groups, read from DRAM by the first tile of x at a fraction of the FMA
//   rate and then computed from L2 by the others, had run the 151936-row lm_head at T = 16 ~25 %
//   slower than row tiles; prefetching the next block as the tiles go made up for it.)
// - a larger x (prefill) meets blocks of groups of about 256 KiB (at least one) that stay in L2
//   while every tile of x passes over them.
void RunFullGroups(const GroupTileFn* tiles, const PanelOperands& o, int64_t t0, int64_t t1,
                   int64_t g0, int64_t g1) {
  const int64_t rows = t1 - t0;
  const int64_t group_bytes = kGroup * o.steps * o.elem_bytes;
  static const int64_t decode_prefetch_bytes = DecodePrefetchBytes(DetectCpuFeatures());
  static const bool decode_non_temporal = DetectCpuFeatures().read_once_non_temporal;
  const bool streamed = rows > kMr && rows * o.x_row_bytes <= 256 << 10;
  if (streamed) {
    RunStreamedGroups(tiles, o, t0, t1, g0, g1);
    return;
  }
  const int64_t block = rows <= kMr ? g1 - g0 : std::max<int64_t>(1, (256 << 10) / group_bytes);
  const TilePrefetch prefetch =
      rows <= kMr ? TilePrefetch{decode_prefetch_bytes, 0, decode_non_temporal} : TilePrefetch{};
  for (int64_t bs = g0; bs < g1; bs += block) {
    const int64_t be = std::min(g1, bs + block);
    for (int64_t r = t0; r < t1; r += kMr) {
      const int mr = static_cast<int>(std::min<int64_t>(kMr, t1 - r));
      for (int64_t g = bs; g < be; ++g) {
        tiles[mr - 1](o.x + r * o.x_row_bytes, o.ldx, o.w + g * group_bytes, o.steps,
                      o.bias != nullptr ? o.bias + g * kGroup : nullptr,
                      o.out + r * o.ldo + g * kGroup, o.ldo, prefetch, /*accumulate=*/false);
      }
    }
  }
}

// The last group when the weight's rows are not a multiple of 64 (nr rows: per k-step nr values
// side by side): copied into a zero-padded full group, then the same tiles, so its elements get
// the same instruction sequence as every other (lanes are independent). Runs once per such
// matrix and call; the scratch grows to the largest group seen, then stays.
void RunPartialGroup(const GroupTileFn* tiles, const PanelOperands& o, int64_t t0, int64_t t1,
                     int64_t g) {
  const int64_t nr = o.ldo - g * kGroup;
  const uint8_t* src = o.w + g * kGroup * o.steps * o.elem_bytes;
  thread_local std::vector<uint8_t> padded;
  padded.assign(static_cast<size_t>(kGroup * o.steps * o.elem_bytes), 0);
  for (int64_t kk = 0; kk < o.steps; ++kk) {
    if (!o.pairs) {
      std::memcpy(&padded[kk * kGroup * o.elem_bytes], src + kk * nr * o.elem_bytes,
                  nr * o.elem_bytes);
      continue;
    }
    for (int64_t j = 0; j < nr; ++j)  // the short group is stored in plain order (tensor.h)
      std::memcpy(&padded[(kk * kGroup + WordPairSlot(j)) * o.elem_bytes],
                  src + (kk * nr + j) * o.elem_bytes, o.elem_bytes);
  }
  float bias[kGroup] = {}, out[kMr * kGroup];
  if (o.bias != nullptr) std::memcpy(bias, o.bias + g * kGroup, nr * sizeof(float));
  for (int64_t r = t0; r < t1; r += kMr) {
    const int mr = static_cast<int>(std::min<int64_t>(kMr, t1 - r));
    tiles[mr - 1](o.x + r * o.x_row_bytes, o.ldx, padded.data(), o.steps,
                  o.bias != nullptr ? bias : nullptr, out, kGroup, TilePrefetch{},
                  /*accumulate=*/false);
    for (int i = 0; i < mr; ++i)
      std::memcpy(o.out + (r + i) * o.ldo + g * kGroup, out + i * kGroup, nr * sizeof(float));
  }
}

// Weight rows [n0, n1) of a panel Linear: n0 a multiple of 64, n1 one too or the last row.
void RunPanelLinear(const GroupTileFn* tiles, const PanelOperands& o, int64_t t0, int64_t t1,
                    int64_t n0, int64_t n1) {
  XI_CHECK_MSG(n0 % kGroup == 0 && (n1 % kGroup == 0 || n1 == o.ldo),
               "a panel Linear range must start and end at a 64-row group");
  const int64_t full = o.ldo / kGroup;  // full groups of the weight
  const int64_t g0 = n0 / kGroup, g1 = std::min(n1 / kGroup, full);
  if (g1 > g0) RunFullGroups(tiles, o, t0, t1, g0, g1);
  if (n1 > full * kGroup) RunPartialGroup(tiles, o, t0, t1, full);
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

// x[t, k] broadcast, acc = fma(x, w, acc); Load gives 16 rows' weights of one k as F32.
struct FmaSteps {
  using X = float;
  using V = __m512;
  static V Broadcast(const float* row, int64_t kk) { return _mm512_set1_ps(row[kk]); }
  static __m512 Madd(__m512 acc, V x, V w) { return _mm512_fmadd_ps(x, w, acc); }
};
struct F32Weights : FmaSteps {
  using T = float;
  static void LoadStep(const float* s, V w[4]) {
    for (int p = 0; p < 4; ++p) w[p] = _mm512_loadu_ps(s + 16 * p);
  }
};
struct F16Weights : FmaSteps {
  using T = uint16_t;
  static void LoadStep(const uint16_t* s, V w[4]) {
    for (int p = 0; p < 4; ++p)
      w[p] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + 16 * p)));
  }
};
// kWordPairTiles64: a 64-byte vector's dword i holds rows i (low word) and 16 + i (high word) of
// its 32-row half; shifting the low word up and masking the high word each give a BF16 value's
// exact F32, two ALU ops per 32 weights where a zero-extension and a shift per 16 took four
// (the 64 FMAs of a 16-row tile shared the two vector ports with them on Intel: at T = 16, 2-core
// Xeon, 203-228 -> 288-292 GFLOP/s from L3; docs/performance.md, session 21).
struct Bf16Weights : FmaSteps {
  using T = uint16_t;
  static void LoadStep(const uint16_t* s, V w[4]) {
    const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
    for (int h = 0; h < 2; ++h) {
      const __m512i v = _mm512_loadu_si512(s + 32 * h);
      w[2 * h] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
      w[2 * h + 1] = _mm512_castsi512_ps(_mm512_and_si512(v, high));
    }
  }
};

namespace fma_tiles {
#include "backend/cpu/dense_panel_tile_avx512.inc"
}  // namespace fma_tiles

}  // namespace

void LinearPanels(const LinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  const GroupTileFn* tiles = nullptr;
  switch (t.wdtype) {
    case DType::kF32:
      tiles = fma_tiles::kGroupTiles<F32Weights>;
      break;
    case DType::kBF16:
      tiles = fma_tiles::kGroupTiles<Bf16Weights>;
      break;
    case DType::kF16:
      tiles = fma_tiles::kGroupTiles<F16Weights>;
      break;
    default:
      XI_CHECK_MSG(false, "no panel kernel for this weight dtype");
  }
  const PanelOperands o{reinterpret_cast<const uint8_t*>(t.x),
                        t.ldx * static_cast<int64_t>(sizeof(float)),
                        sizeof(float),
                        t.ldx,
                        static_cast<const uint8_t*>(t.w),
                        static_cast<int64_t>(DTypeSize(t.wdtype)),
                        t.k,
                        t.bias,
                        t.out,
                        t.ldo,
                        /*pairs=*/t.wdtype == DType::kBF16};
  RunPanelLinear(tiles, o, t0, t1, n0, n1);
}

}  // namespace xinfer::cpu::avx512

#pragma GCC pop_options

// ---- BF16 activations (`--dtype bfloat16`): BF16 k-pair groups, vdpbf16ps ----
// Per pair kk, the group's 64 rows' (w[n, 2kk], w[n, 2kk + 1]) side by side; x's pair broadcast
// as a dword.
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma")

namespace xinfer::cpu::avx512 {
namespace {

struct Bf16Pairs {
  using T = uint32_t;
  using X = uint16_t;
  using V = __m512bh;
  static V AsBh(__m512i v) { return reinterpret_cast<V&>(v); }
  static void LoadStep(const uint32_t* s, V w[4]) {
    for (int p = 0; p < 4; ++p) w[p] = AsBh(_mm512_loadu_si512(s + 16 * p));
  }
  static V Broadcast(const uint16_t* row, int64_t kk) {
    uint32_t pair;
    std::memcpy(&pair, row + 2 * kk, sizeof(pair));
    return AsBh(_mm512_set1_epi32(static_cast<int>(pair)));
  }
  static __m512 Madd(__m512 acc, V x, V w) { return _mm512_dpbf16_ps(acc, x, w); }
};

namespace bf16_tiles {
#include "backend/cpu/dense_panel_tile_avx512.inc"
}  // namespace bf16_tiles

}  // namespace

void LinearPanelsBf16Dot(const LinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  XI_CHECK_MSG(t.wdtype == DType::kBF16 && t.k % 2 == 0 && t.xb != nullptr,
               "the BF16-dot panel kernel takes BF16 weights of even K and BF16 activations");
  const PanelOperands o{reinterpret_cast<const uint8_t*>(t.xb),
                        t.ldxb * static_cast<int64_t>(sizeof(uint16_t)),
                        2 * sizeof(uint16_t),
                        t.ldxb,
                        static_cast<const uint8_t*>(t.w),
                        static_cast<int64_t>(sizeof(uint32_t)),
                        t.k / 2,
                        t.bias,
                        t.out,
                        t.ldo};
  RunPanelLinear(bf16_tiles::kGroupTiles<Bf16Pairs>, o, t0, t1, n0, n1);
}

}  // namespace xinfer::cpu::avx512

#pragma GCC pop_options

#endif  // defined(__x86_64__)
