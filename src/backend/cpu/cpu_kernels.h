// The ISA-specific CPU kernels behind FastCpuOps, and how one is chosen at run time.
//
// Each kernel computes an output element with one fixed sequence of operations that depends only
// on the reduction length (K, head_dim, number of keys), never on the batch size, the row's place
// in the batch or the thread count: this is what keeps greedy decoding batch-invariant. Threads
// split rows or output columns, never a reduction.
//
// Kernels run single-threaded on the ranges they are given; FastCpuOps owns the threading.
#pragma once

#include <array>
#include <cstdint>

#include "tensor/dtype.h"
#include "tensor/quant.h"

namespace xinfer::cpu {

struct CpuFeatures {
  bool avx512 = false;        // AVX-512 F/BW/DQ/VL (+FMA, F16C)
  bool avx512_bf16 = false;   // vdpbf16ps
  bool avx512_vbmi = false;   // vpermt2b
  bool avx512_vnni = false;   // vpdpbusd
  bool avx2 = false;          // AVX2 + FMA + F16C
  bool neon_dotprod = false;  // ARM64 sdot (ARMv8.2 DotProd: Kunpeng 920, Neoverse N1)
  // AVX-512 on 256-bit units, each 512-bit op issued as two halves (AMD Zen 4: family 19h).
  bool avx512_double_pumped = false;
  // Prefetches of weight bytes read once (decode) use prefetchnta instead of prefetcht1. True on
  // AMD, where non-temporal streamed 2-10 % more of the bandwidth (Zen 5, session 16); false
  // elsewhere: on a 2-core Intel Xeon (family 6 model 207, session 21) prefetchnta streamed a
  // decode GEMV at 0.46-0.51 of the plain read against 0.82-0.86 with prefetcht1
  // (stream_prefetch_bench; docs/performance.md). XINFER_READ_ONCE_PREFETCH=nta|l2 overrides it,
  // for A/B runs on a new host.
  bool read_once_non_temporal = false;
  // Highway (cpu_kernels_hwy.cc) found a SIMD target on this CPU (SSE4, AVX2, NEON, SVE, ...):
  // FastCpuOps then runs the portable SIMD kernels where the AVX-512 ones do not apply.
  bool simd = false;
};
const CpuFeatures& DetectCpuFeatures();
// CpuFeatures::read_once_non_temporal for a CPU of that vendor and XINFER_READ_ONCE_PREFETCH's
// value (null: unset): "nta" or "l2" decide; any other value keeps the vendor's hint with a
// warning, so that a typo in an A/B run does not pass unnoticed.
bool ReadOnceNonTemporal(bool amd, const char* override_value);

// Which Linear path BF16 weights take. kWidenF32 (the default) widens the weights to F32 in
// registers and keeps F32 activations. kBf16Dot (`--dtype bfloat16`, on CPUs with AVX512-BF16)
// rounds each activation row to BF16 (RNE) and uses vdpbf16ps: twice the FP32 FMA peak, as
// llama.cpp and vLLM's BF16 models do, but logits move by ~2e-2 on the shared tiny models. Fixed
// for the life of an Ops object, so every batch size uses the same arithmetic.
enum class Bf16Path { kReference, kWidenF32, kBf16Dot };
Bf16Path SelectBf16Path(const CpuFeatures& features, bool bf16_activations);
const char* Bf16PathName(Bf16Path path);  // "bf16-dot", "widen-f32" or "reference"
// "avx512-bf16", "avx512", "simd-<Highway target>" (e.g. "simd-AVX2", "simd-NEON") or "portable".
const char* KernelIsaName();

// Linear over rows [t0, t1) of x and output columns [n0, n1): out[t, n] = x[t, :] . w[n, :] +
// bias[n]. x is F32 [T, ldx]; for the BF16-dot path `xb` is x rounded to BF16 with rows padded
// with zeros to a multiple of 32 (ldxb elements per row). bias is F32 or null.
struct LinearTask {
  const float* x = nullptr;
  int64_t ldx = 0;
  const uint16_t* xb = nullptr;
  int64_t ldxb = 0;
  // For the BF16-widen path: x with each 32-element chunk permuted to [16 even | 16 odd]
  // elements, rows zero-padded to a multiple of 32 (ldxp floats per row); see PermuteEvenOdd.
  const float* xp = nullptr;
  int64_t ldxp = 0;
  const void* w = nullptr;
  DType wdtype = DType::kF32;
  // w in row tiles (tensor.h; the AVX-512 kernels, and simd::Linear where RowTilesFit): tiles of
  // NR = kTileRows rows start at row multiples of kTileRows, so n0 of every call must be one.
  bool tiled = false;
  // Rows per group of w's layout (FastCpuOps splits the rows among threads at multiples of it).
  int64_t column_unit = 16;
  int64_t k = 0;
  const float* bias = nullptr;
  float* out = nullptr;
  int64_t ldo = 0;
};

// Linear with a quantized weight (tensor/quant.h) over rows [t0, t1) of x and weight rows
// [n0, n1). x is F32 [T, ldx]; for AWQ4 weights it must be permuted by PermuteEvenOdd (the
// kernels produce a chunk's even elements, then its odd ones). bias is F32 or null. The 4-bit
// kernels also need `xsum`: QuantBlockSums of x, [T, ldxsum] (see cpu_kernels_quant_avx512.cc).
struct QuantLinearTask {
  const float* x = nullptr;
  int64_t ldx = 0;
  const float* xsum = nullptr;
  int64_t ldxsum = 0;
  // For QuantLinearNibbleBf16 only: x split into BF16 hi + lo values (NibbleBf16PrepareX), [T,
  // ldxs]; with hi_only (BF16 activations, `--dtype bfloat16`) the lo halves are neither written
  // nor read.
  const uint16_t* xs = nullptr;
  int64_t ldxs = 0;
  bool hi_only = false;
  // For QuantLinearInt8 only: x quantized to int8 per block of 32 (Int8PrepareX): xq [T, ldxq]
  // values and xaux [T, ldxaux] lane scales and corrections.
  const int8_t* xq = nullptr;
  int64_t ldxq = 0;
  const float* xaux = nullptr;
  int64_t ldxaux = 0;
  const QuantTensor* w = nullptr;
  const float* bias = nullptr;
  float* out = nullptr;
  int64_t ldo = 0;
};
// Q8_0: up to this many rows of x dequantize in registers (QuantLinearQ8Direct); more go through
// a dequantized panel (DequantizeRowsQ8 + LinearF32Acc), which gives the same bits.
constexpr int kQ8DirectMaxRows = 3;

// Decode-sized GEMV streams weights from DRAM while doing several vector ops per byte; the core's
// out-of-order window alone then keeps too few loads in flight, so the tiles prefetch. Two schemes,
// each measured best for its kernels (151936 x 896 lm_head, 2 threads, Zen 4, medians):
// - Dense tiles read NR long rows side by side (NR x 1792 bytes for BF16 K = 896). Each k-step
//   prefetches the same bytes of the rows one tile (at least kDensePrefetchAhead bytes) further
//   on, into L2: BF16 20 -> 27 GB/s, F16 20 -> 26-28, F32 21-24 -> 28-29. A linear prefetch 4 KiB
//   past the tile's start falls behind the tile's last rows (17-21 GB/s); into L1 it is slower.
// - Quantized tiles read NR short rows (a whole tile is 2-4 KiB), so a linear prefetch 4 KiB
//   ahead, into L1, stays ahead of every row: it beat the per-row scheme by 10-20 % there.
constexpr int64_t kDensePrefetchAhead = 8192;
template <int NR>
inline int64_t PrefetchDistance(int64_t row_bytes) {
  const int64_t tile = NR * row_bytes;
  return (kDensePrefetchAhead + tile - 1) / tile * tile;
}
template <int NR>
inline void PrefetchAhead(const void* row0, int64_t distance, int64_t row_bytes, int64_t offset) {
  const char* ahead = static_cast<const char*>(row0) + distance + offset;
#pragma GCC unroll 8
  for (int j = 0; j < NR; ++j) __builtin_prefetch(ahead + j * row_bytes, 0, 2);
}
constexpr int64_t kQuantPrefetchBytes = 4096;
inline void PrefetchRange(const void* p, int64_t bytes) {
  for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(static_cast<const char*>(p) + o, 0, 3);
}
// - Bytes that one pass of x reads once (decode; none of them reused by another tile) are
//   prefetched 8 KiB ahead, with the hint CpuFeatures::read_once_non_temporal gives: on AMD
//   prefetchnta, against prefetcht0/t1 2-8 % more of the bandwidth in slow minutes and up to 10 %
//   in fast ones (2-core Zen 5, session 16); on Intel prefetcht1, as prefetchnta there streamed
//   half the bandwidth (2-core Xeon, session 21; 4 to 32 KiB ahead about the same with t1).
constexpr int64_t kReadOncePrefetchBytes = 8192;
// The decode GEMVs' software prefetch (the AVX-512 dense 64-row group tiles and int8 panel
// tiles at T = 1): kReadOncePrefetchBytes ahead, but none at all on Zen 4
// (avx512_double_pumped), whose hardware prefetcher alone streams more of the bandwidth — dense:
// the decode step's 97 GEMVs 0.98-1.00 of the plain read against 0.95-0.97 with the prefetch,
// one-sequence BF16 decode +3-6 % of its paired roofline (`stream_prefetch_bench` step_none /
// step_nta_8k; docs/performance.md, session 19); the AWQ decode step's int8 4-bit layers (with
// one range per thread) 0.81 against 0.70 in fast minutes, 0.99 against 0.92 in slow ones
// (L8_pf0_split / L8_split, session 27).
inline int64_t DecodePrefetchBytes(const CpuFeatures& f) {
  return f.avx512_double_pumped ? 0 : kReadOncePrefetchBytes;
}
// Every line of [p, p + bytes): prefetchnta if non_temporal (bytes read once, on AMD), else
// prefetcht1 (into L2).
inline void PrefetchLines(const void* p, int64_t bytes, bool non_temporal) {
  const char* c = static_cast<const char*>(p);
  if (non_temporal) {
    for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(c + o, 0, 0);
  } else {
    for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(c + o, 0, 2);
  }
}

// Paged attention reads each key's K and V rows (d floats each, where the block table puts them)
// once per query row. Decode finds them cold: a whole step of weights streamed through the caches
// since the layer last ran, so with only the core's own look-ahead the loop waits on DRAM latency
// (~4x the time it takes on cached rows). Each pass over the keys therefore prefetches the rows it
// will read `ahead` keys before it reads them, into L2 (kernel_bench BM_PagedAttention cold:1, one
// row of 512 keys: 28-37 -> 24-27 us; 16 rows of 256: -25 %). K went into L1 until session 29:
// with Qwen3's 8 KV heads of 128, 16 keys ahead were 128 lines in flight, more than L1 tracks, and
// the stream stalled at ~22 GB/s (into L2: -10-25 %). Session 30, on the AVX-512 kernels: the
// score pass prefetches K and the weighted-sum pass V (the score pass had prefetched both, so DRAM
// idled while the weighted sum read L2), and the look-ahead is 8 KiB of rows (at least 16 keys)
// instead of 16 keys whatever their size — BF16 rows of 64 (Qwen2.5) are 128 bytes, 16 of them
// only 2 KiB. Out of cache, BF16 products: Qwen3's heads 16 x 256 keys +18 %, 8 x 1024 +22 %,
// Qwen2.5's +20-25 %; the F32 kernels +10-25 % (2-core Zen 4; docs/performance.md, session 30).
// The AVX2 and Highway kernels keep session 29's scheme (16 keys, K and V in the score pass): not
// re-measured on their hosts.
constexpr int64_t kKvPrefetchKeys = 16;
constexpr int64_t kKvPrefetchBytes = 8192;
template <class T>
constexpr int64_t KvPrefetchKeys(int64_t d) {
  const int64_t keys = kKvPrefetchBytes / (d * static_cast<int64_t>(sizeof(T)));
  return keys > kKvPrefetchKeys ? keys : kKvPrefetchKeys;
}
// T: the cache's element, float or uint16_t (BF16 bits: `--kv-cache-dtype bfloat16`, half the
// bytes per row).
template <class T>
inline void PrefetchCacheRow(const T* row, int64_t d) {
  const char* c = reinterpret_cast<const char*>(row);
  const int64_t bytes = d * static_cast<int64_t>(sizeof(T));
  for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(c + o, 0, 2);
}
// Before a pass over keys [0, n) of `base` (K or V; row_off as the attention kernels take it):
// the first `ahead` (KvPrefetchKeys) keys' rows.
template <class T>
inline void PrefetchFirstRows(const T* base, const int64_t* row_off, int64_t n, int64_t d,
                              int64_t ahead) {
  for (int64_t p = 0; p < ahead && p < n; ++p) PrefetchCacheRow(base + row_off[p], d);
}
// At key p: the row of key p + ahead (the last key's again near the end).
template <class T>
inline void PrefetchRowAhead(const T* base, const int64_t* row_off, int64_t p, int64_t n, int64_t d,
                             int64_t ahead) {
  const int64_t r = p + ahead < n ? p + ahead : n - 1;
  PrefetchCacheRow(base + row_off[r], d);
}

// The loop nest every Linear kernel runs: weight rows [n0, n1) in blocks of `block_rows` (kept
// in L2 while all rows of x pass over them), within a block tiles of up to MR rows of x times NR
// weight rows; calls tile(r, mr, n, nr) for each.
template <int MR, int NR, class Tile>
inline void ForEachTile(int64_t t0, int64_t t1, int64_t n0, int64_t n1, int64_t block_rows,
                        Tile&& tile) {
  for (int64_t bs = n0; bs < n1; bs += block_rows) {
    const int64_t be = bs + block_rows < n1 ? bs + block_rows : n1;
    for (int64_t r = t0; r < t1; r += MR) {
      const int64_t mr = t1 - r < MR ? t1 - r : MR;
      for (int64_t n = bs; n < be; n += NR) tile(r, mr, n, be - n < NR ? be - n : NR);
    }
  }
}

// A quantized weight's pointers and strides, resolved once per call rather than per tile
// (Tensor::data() is an out-of-line call and the group count a division).
struct PreparedQuant {
  const uint8_t* q;
  int64_t row_bytes;
  const float* scales;  // AWQ4
  const float* zeros;   // AWQ4
  int64_t groups;       // AWQ4: scale groups per row (0 for the GGUF block formats)
};
// One AWQ4 weight row: its nibbles and its groups' scales and zero points.
struct AwqRow {
  const uint8_t* q;
  const float* scales;
  const float* zeros;
};
inline AwqRow AwqRowOf(const PreparedQuant& p, int64_t r) {
  return {p.q + r * p.row_bytes, p.scales + r * p.groups, p.zeros + r * p.groups};
}
// vpermt2b indices over (bytes 0..63, bytes 8..71) of 4 consecutive Q4_0 blocks (72 bytes): output
// byte 16b + j is block b's nibble byte j, at 18b + 2 + j (the 4-bit kernels' Q4_0 group).
alignas(64) inline constexpr std::array<uint8_t, 64> kQ4_0NibbleIndex = [] {
  std::array<uint8_t, 64> idx{};
  for (int b = 0; b < 4; ++b)
    for (int j = 0; j < 16; ++j) {
      const int at = 18 * b + 2 + j;
      idx[16 * b + j] = static_cast<uint8_t>(at < 64 ? at : 64 + at - 8);
    }
  return idx;
}();
inline PreparedQuant PrepareQuant(const QuantTensor& w) {
  PreparedQuant p{static_cast<const uint8_t*>(w.data.raw()), static_cast<int64_t>(w.row_bytes()),
                  nullptr, nullptr, 0};
  if (w.type == QuantType::kAwq4) {
    p.scales = w.scales.data<float>();
    p.zeros = w.zeros.data<float>();
    p.groups = w.cols / w.group_size;
  }
  return p;
}

namespace avx512 {
// Whether the quantized kernels below take `w`: Q8_0, Q4_0, or AWQ4 with group size 32, 64 or
// 128; cols a multiple of 32.
bool QuantKernelSupports(const QuantTensor& w);
// Builds the F16 scale tables the kernels below read; call once before using them (idempotent,
// thread-safe).
void QuantKernelTablesInit();
void QuantLinearQ8Direct(const QuantLinearTask& task, int64_t t0, int64_t t1, int64_t n0,
                         int64_t n1);
// Writes Q8_0 weight rows [n0, n1) dequantized to F32 into panel [(n1 - n0), w.cols], ready for
// LinearF32Acc with F32 weights.
void DequantizeRowsQ8(const QuantTensor& w, int64_t n0, int64_t n1, float* panel);
// Q4_0 and AWQ4, any number of rows of x.
void QuantLinearNibble(const QuantLinearTask& task, int64_t t0, int64_t t1, int64_t n0, int64_t n1);
// The block the 4-bit kernels' xsum is taken over: 32 (Q4_0) or the AWQ group size.
int64_t QuantBlockElemsForSums(const QuantTensor& w);
// out[r, b*16 + l] = scale * sum over the 32-element chunks c of block b of
// (x[r, 32c + l] + x[r, 32c + 16 + l]), in chunk order. Q4_0 passes scale -1.5, AWQ4 1.
void QuantBlockSums(const float* x, int64_t rows, int64_t ldx, int64_t k, int64_t block,
                    float scale, float* out, int64_t ldout);
// 4-bit weights with vdpbf16ps (cpu_kernels_nibble_bf16.cc): AWQ4 with group size 128 on CPUs
// with AVX512-BF16, Q4_0 on those with AVX512-BF16 and -VBMI; K a multiple of 128. The weights meet
// x as two BF16 halves (hi + lo, 2^-17 of |x|), 2 integer ops per 32 weights.
bool NibbleBf16Supports(const QuantTensor& w, const CpuFeatures& features);
// Splits rows of x [rows, k] into the kernel's layout for weights of `type`: xs [rows, ldxs >= 2k]
// BF16 values of 16 x and xsum [rows, ldxsum >= k / 4] lane sums (per group of 128: 16 of x, then
// 16 of 16 x). hi_only: x rounded to BF16, no lo half.
void NibbleBf16PrepareX(QuantType type, const float* x, int64_t rows, int64_t ldx, int64_t k,
                        uint16_t* xs, int64_t ldxs, float* xsum, int64_t ldxsum, bool hi_only);
void QuantLinearNibbleBf16(const QuantLinearTask& task, int64_t t0, int64_t t1, int64_t n0,
                           int64_t n1);
// Q4_0, Q5_0, Q8_0, Q4_K, Q5_K, Q6_K and AWQ g128 with int8 activations and vpdpbusd
// (cpu_kernels_int8_avx512.cc; llama.cpp's arithmetic, `--int8-activations`): CPUs with
// AVX512-VNNI (and -VBMI for Q4_0 / Q5_0); K a multiple of 128 (Q4_0, Q5_0, AWQ), 64 (Q8_0) or 256
// (K-quants).
bool Int8DotSupports(const QuantTensor& w, const CpuFeatures& features);
// Floats of xaux per row of x for weights of `type` with K = k.
int64_t Int8AuxPerRow(QuantType type, int64_t k);
// Quantizes rows of x [rows, k] to int8 blocks of 32 into the kernel's layout for weights of
// `type`: xq [rows, ldxq >= k], aux [rows, ldaux >= Int8AuxPerRow].
void Int8PrepareX(QuantType type, const float* x, int64_t rows, int64_t ldx, int64_t k, int8_t* xq,
                  int64_t ldxq, float* aux, int64_t ldaux);
void QuantLinearInt8(const QuantLinearTask& task, int64_t t0, int64_t t1, int64_t n0, int64_t n1);
// AWQ g128 and Q4_0 with int8 activations on AVX512-VNNI CPUs, broadcast-x over the weights
// CpuBackend placed in avx2::Int8PanelsLayout(type), x prepared by avx2::Int8PrepareX in that
// layout's Int8XLayout (cpu_kernels_int8_panels_avx512.cc): the AVX2 panel kernel's contract and
// bits. n0 (and n1 unless it is w.rows) multiples of 16.
bool Int8PanelsSupports(const QuantTensor& w, const CpuFeatures& features);
void QuantLinearInt8Panels(const QuantLinearTask& task, int64_t t0, int64_t t1, int64_t n0,
                           int64_t n1);
// AWQ g128 with F32 activations (W4A16) on AVX-512 CPUs, broadcast-x over the same placed tiles
// (cpu_kernels_w4a16_panels_avx512.cc): avx2::QuantLinearW4A16Panels' contract (x from
// avx2::W4A16PrepareX) and bits.
bool W4A16PanelsSupports(const QuantTensor& w, const CpuFeatures& features);
void QuantLinearW4A16Panels(const QuantLinearTask& task, int64_t t0, int64_t t1, int64_t n0,
                            int64_t n1);
// AWQ g128 with BF16 activations (`--dtype bfloat16`) on AVX512-BF16 CPUs, over the same placed
// tiles (cpu_kernels_w4a16_bf16_panels_avx512.cc: two codes of a row per vdpbf16ps). x from
// W4A16Bf16PrepareX: task.xs [T, ldxs >= k] x rounded to BF16 (nearest even), each chunk of 8 in
// the pair order (x0, x4), (x1, x5), (x2, x6), (x3, x7); task.xsum [T, ldxsum >= k / 128] the
// groups' sums of the rounded x. n0 (and n1 unless it is w.rows) multiples of 16.
bool W4A16Bf16PanelsSupports(const QuantTensor& w, const CpuFeatures& features);
void W4A16Bf16PrepareX(const float* x, int64_t rows, int64_t ldx, int64_t k, uint16_t* xs,
                       int64_t ldxs, float* xsum, int64_t ldxsum);
void QuantLinearW4A16Bf16Panels(const QuantLinearTask& task, int64_t t0, int64_t t1, int64_t n0,
                                int64_t n1);
void LinearF32Acc(const LinearTask& task, int64_t t0, int64_t t1, int64_t n0, int64_t n1);
void LinearBf16Dot(const LinearTask& task, int64_t t0, int64_t t1, int64_t n0, int64_t n1);
// BF16 weights widened to F32 without shuffles: a 64-byte load of 32 BF16 gives the even
// elements as (v << 16) and the odd ones as (v & 0xffff0000), multiplied with x permuted to
// match (task.xp). Lane l of the accumulator sums elements 32s+2l and 32s+2l+1, for every tile.
void LinearBf16Widen(const LinearTask& task, int64_t t0, int64_t t1, int64_t n0, int64_t n1);
void PermuteEvenOdd(const float* x, int64_t rows, int64_t k, float* xp, int64_t ldxp);
// Rounds rows of x [rows, k] to BF16 into xb [rows, ldxb], zero-padding each row's tail.
void RoundRowsToBf16(const float* x, int64_t rows, int64_t k, uint16_t* xb, int64_t ldxb);
void RmsNormRow(const float* x, const float* w, int64_t n, float eps, float* out);
void SiluMul(const float* g, const float* u, int64_t n, float* out);
void Add(const float* a, const float* b, int64_t n, float* out);
// out[i] = exp(x[i]) (the vectorized exp used by softmax and SiLU; exposed for tests).
void Exp(const float* x, int64_t n, float* out);
// One query row of paged attention: key p's K row is k_base + row_off[p] (V likewise), keys in
// position order, head_dim d a multiple of 16. scores: scratch of at least n_keys floats.
void AttentionRow(const float* q, const float* k_base, const float* v_base, const int64_t* row_off,
                  int64_t n_keys, int64_t d, float scale, float* scores, float* out);
// The same over a BF16 cache (`--kv-cache-dtype bfloat16`: K/V rows of BF16 bits): each element
// widened exactly to F32 on load, so the result is bitwise the F32 kernel's on an F32 cache that
// holds the same (rounded) values.
void AttentionRow(const float* q, const uint16_t* k_base, const uint16_t* v_base,
                  const int64_t* row_off, int64_t n_keys, int64_t d, float scale, float* scores,
                  float* out);
// Up to AttentionGroupMaxHeads(d) query heads (4; 2 at d = 128; rows q + h * q_stride, outputs
// out + h * out_stride) that share one KV head, each K/V row loaded once for all
// (cpu_kernels_attention_avx512.cc); d = 32, 64 or 128 (AttentionGroupSupports), n_keys >= 1.
// scratch: at least 4 * (n_keys + 3) floats. A head's result does not depend on the other heads
// of the call.
bool AttentionGroupSupports(int64_t d);
int AttentionGroupMaxHeads(int64_t d);
void AttentionGroup(const float* q, int64_t q_stride, int heads, const float* k_base,
                    const float* v_base, const int64_t* row_off, int64_t n_keys, int64_t d,
                    float scale, float* scratch, float* out, int64_t out_stride);
// Over a BF16 cache, bitwise the F32 kernel on the same (rounded) values, as AttentionRow's.
void AttentionGroup(const float* q, int64_t q_stride, int heads, const uint16_t* k_base,
                    const uint16_t* v_base, const int64_t* row_off, int64_t n_keys, int64_t d,
                    float scale, float* scratch, float* out, int64_t out_stride);
// Over a BF16 cache with BF16 products (AVX512-BF16 CPUs; FastCpuOps uses it under
// bf16_activations): the query in two BF16 parts and the softmax weights rounded to BF16,
// vdpbf16ps against the cached pairs (cpu_kernels_attention_bf16_avx512.cc says the arithmetic). d
// = 32, 64 or 128 (AttentionGroupBf16Supports), up to AttentionGroupBf16MaxHeads(d) heads per call
// (4; 2 at d = 128), n_keys >= 1. scratch: at least 6 * (n_keys + 3) floats. A head's result does
// not depend on the other heads of the call.
bool AttentionGroupBf16Supports(int64_t d);
int AttentionGroupBf16MaxHeads(int64_t d);
void AttentionGroupBf16(const float* q, int64_t q_stride, int heads, const uint16_t* k_base,
                        const uint16_t* v_base, const int64_t* row_off, int64_t n_keys, int64_t d,
                        float scale, float* scratch, float* out, int64_t out_stride);
// Dense Linear on 64-row panel groups (cpu_kernels_dense_panels_avx512.cc; DensePanelsLayout:
// kDwordTiles64 for F32, kWordPairTiles64 for BF16, kWordTiles64 for F16), F32 activations: the
// AVX2 panel kernel's per-element arithmetic and bits (avx2::LinearPanels below). n0 a multiple of
// 64, n1 one too or task.ldo.
void LinearPanels(const LinearTask& task, int64_t t0, int64_t t1, int64_t n0, int64_t n1);
// BF16 weights with BF16 activations (`--dtype bfloat16`, AVX512-BF16 CPUs), same file: the
// weight in kDwordTiles64 over its k-pairs (K even), x in task.xb (RoundRowsToBf16), vdpbf16ps
// with one output row per lane; n0 a multiple of 64, n1 one too or task.ldo.
void LinearPanelsBf16Dot(const LinearTask& task, int64_t t0, int64_t t1, int64_t n0, int64_t n1);
}  // namespace avx512

// Int8 activations on AVX2 CPUs without AVX512-VNNI (cpu_kernels_int8_avx2.cc, vpmaddubsw):
// GGUF Q4_0, Q5_0, Q4_1, Q5_1, Q8_0 (K a multiple of 32) and Q4_K, Q5_K, Q6_K (of 256). x is
// quantized as for the AVX-512 kernels but kept in natural order, xq [rows, ldxq >= k], with per
// block of 32 its F32 scale d and d x (the block's int8 sum) in xd [rows, ldxd >= k / 16];
// QuantLinearTask::xq / xaux carry them.
namespace avx2 {
bool Int8DotSupports(const QuantTensor& w, const CpuFeatures& features);
// How Int8PrepareX lays out x: kRowKernel for QuantLinearInt8's row-major GGUF weights (element
// order; xd per block of 32: d and d x the block's int8 sum), kQ4_0Panels / kAwqPanels for
// QuantLinearInt8Panels (xd: d and the plain int8 sum; AWQ: each 8-element chunk stored as its
// even elements, then its odd ones, and after the k / 32 block pairs one term per group of 128,
// int8_panels::AwqGroupXTerm). ldxd >= Int8AuxPerRow(layout, k).
enum class Int8XLayout { kRowKernel, kQ4_0Panels, kAwqPanels };
inline int64_t Int8AuxPerRow(Int8XLayout layout, int64_t k) {
  return k / 16 + (layout == Int8XLayout::kAwqPanels ? k / 128 : 0);
}
void Int8PrepareX(const float* x, int64_t rows, int64_t ldx, int64_t k, int8_t* xq, int64_t ldxq,
                  float* xd, int64_t ldxd, Int8XLayout layout = Int8XLayout::kRowKernel);
// Row-major GGUF weights; weights in Int8PanelsLayout go to QuantLinearInt8Panels.
void QuantLinearInt8(const QuantLinearTask& task, int64_t t0, int64_t t1, int64_t n0, int64_t n1);
// AWQ g128 and Q4_0 on AVX2 CPUs: the broadcast-x kernel (cpu_kernels_int8_panels_avx2.cc) for
// weights CpuBackend placed in Int8PanelsLayout(type) (AWQ: kDwordTiles for codes, scales and
// zero points; Q4_0: kQ4_0Tiles; tensor.h); n0 (and n1 unless it is w.rows) multiples of 16.
bool Int8PanelsSupports(const QuantTensor& w, const CpuFeatures& features);
Layout Int8PanelsLayout(QuantType type);
void QuantLinearInt8Panels(const QuantLinearTask& task, int64_t t0, int64_t t1, int64_t n0,
                           int64_t n1);
// AWQ g128 with F32 activations (W4A16) on AVX2 CPUs: the broadcast-x kernel
// (cpu_kernels_w4a16_panels_avx2.cc) over the same placed tiles as QuantLinearInt8Panels. x comes
// prescaled by W4A16PrepareX: xs [rows, ldxs >= k] (element 8c + p times 16^-p for p < 7) and xsum
// [rows, ldxsum >= k / 128] (each group's sum of x); QuantLinearTask::x / xsum carry them. n0 (and
// n1 unless it is w.rows) multiples of 16.
bool W4A16PanelsSupports(const QuantTensor& w, const CpuFeatures& features);
void W4A16PrepareX(const float* x, int64_t rows, int64_t ldx, int64_t k, float* xs, int64_t ldxs,
                   float* xsum, int64_t ldxsum);
void QuantLinearW4A16Panels(const QuantLinearTask& task, int64_t t0, int64_t t1, int64_t n0,
                            int64_t n1);
// Dense Linear (F32, BF16, F16 weights, F32 activations) on AVX2 CPUs without AVX-512: the
// broadcast-x kernel (cpu_kernels_dense_panels_avx2.cc) for weights placed in DensePanelsLayout
// (16-row panels); avx512::LinearPanels gives the same bits on AVX-512 CPUs. n0 a multiple of 16,
// n1 one too or task.ldo.
void LinearPanels(const LinearTask& task, int64_t t0, int64_t t1, int64_t n0, int64_t n1);
// Paged attention for up to 4 query heads sharing one KV head, each K/V row loaded once for all
// (cpu_kernels_attention_avx2.cc; its header says the arithmetic); d a multiple of 8
// (AttentionGroupSupports). scratch: at least 4 * n_keys floats. A head's result does not depend
// on the other heads of the call.
bool AttentionGroupSupports(int64_t d);
void AttentionGroup(const float* q, int64_t q_stride, int heads, const float* k_base,
                    const float* v_base, const int64_t* row_off, int64_t n_keys, int64_t d,
                    float scale, float* scratch, float* out, int64_t out_stride);
// Over a BF16 cache, bitwise the F32 kernel on the same (rounded) values, as AttentionRow's.
void AttentionGroup(const float* q, int64_t q_stride, int heads, const uint16_t* k_base,
                    const uint16_t* v_base, const int64_t* row_off, int64_t n_keys, int64_t d,
                    float scale, float* scratch, float* out, int64_t out_stride);
}  // namespace avx2

// Dense weights the broadcast-x panel kernels (avx2:: and avx512::LinearPanels) take on this CPU,
// and the layout CpuBackend places them in for F32 activations (tensor.h): on AVX-512 CPUs
// 64-row groups (kDwordTiles64 for F32, kWordPairTiles64 for BF16, kWordTiles64 for F16), on AVX2
// ones 16-row panels (kDwordTiles, kWordTiles). LinearPartialPanel computes output columns [p,
// task.ldo) — the AVX2 kernel's last, partial panel (fewer than 16 rows) — with the per-element FMA
// sequence.
bool DensePanelsSupport(DType dtype, const CpuFeatures& features);
Layout DensePanelsLayout(DType dtype, const CpuFeatures& features);
void LinearPartialPanel(const LinearTask& task, int64_t t0, int64_t t1, int64_t p);

// The same on ARM64 CPUs with DotProd (cpu_kernels_int8_neon.cc, sdot): the AVX2 kernel's formats
// and x layout.
namespace neon {
bool Int8DotSupports(const QuantTensor& w, const CpuFeatures& features);
void Int8PrepareX(const float* x, int64_t rows, int64_t ldx, int64_t k, int8_t* xq, int64_t ldxq,
                  float* xd, int64_t ldxd);
void QuantLinearInt8(const QuantLinearTask& task, int64_t t0, int64_t t1, int64_t n0, int64_t n1);
}  // namespace neon

// Portable SIMD kernels (Google Highway, cpu_kernels_hwy.cc), dispatched at run time to the best
// target the CPU has. Same contracts as the AVX-512 kernels of the same names. XINFER_ISA=avx2 or
// sse4 caps the targets (DetectCpuFeatures), to test these on a newer x86 CPU.
namespace simd {
bool Available();          // a SIMD target was found (not Highway's scalar/emulated fallback)
const char* TargetName();  // Highway's name of the target in use, e.g. "AVX2", "NEON"
int64_t F32Lanes();        // floats per vector of that target
// Whether Linear takes row-tiled weights (LinearTask::tiled) of this element size on this CPU.
bool RowTilesFit(int64_t dtype_bytes);
// F32, BF16 and F16 weights (task.wdtype) with F32 activations (task.x); xb/xp are not used.
void Linear(const LinearTask& task, int64_t t0, int64_t t1, int64_t n0, int64_t n1);
// Any quantized weight, F32 activations (task.x, task.xsum/xs unused): weight rows [n0, n1) are
// dequantized panel_rows at a time into `panel` (panel_rows * cols floats, the caller's scratch)
// and multiplied as F32 weights by Linear's tiles, so results are batch-invariant like Linear's.
int64_t QuantPanelRows(int64_t x_rows, int64_t k);
void QuantLinear(const QuantLinearTask& task, int64_t t0, int64_t t1, int64_t n0, int64_t n1,
                 float* panel, int64_t panel_rows);
void RmsNormRow(const float* x, const float* w, int64_t n, float eps, float* out);
void SiluMul(const float* g, const float* u, int64_t n, float* out);
void Add(const float* a, const float* b, int64_t n, float* out);
void Exp(const float* x, int64_t n, float* out);  // +inf above 88.72
// d a multiple of F32Lanes(); scores: scratch of at least n_keys floats.
bool AttentionSupports(int64_t d);
void AttentionRow(const float* q, const float* k_base, const float* v_base, const int64_t* row_off,
                  int64_t n_keys, int64_t d, float scale, float* scores, float* out);
// The same over a BF16 cache (`--kv-cache-dtype bfloat16`: K/V rows of BF16 bits): each element
// widened exactly to F32 on load, so the result is bitwise the F32 kernel's on an F32 cache that
// holds the same (rounded) values.
void AttentionRow(const float* q, const uint16_t* k_base, const uint16_t* v_base,
                  const int64_t* row_off, int64_t n_keys, int64_t d, float scale, float* scores,
                  float* out);
float ReadSum(const float* p, int64_t n);  // bandwidth probe, as avx512::ReadSum
float FmaLoop(int64_t iters);              // 12 chains of F32Lanes() FMAs per iteration
}  // namespace simd

}  // namespace xinfer::cpu

namespace xinfer::cpu::avx512 {
// Machine-limit probes for `xinfer doctor --measure` (single-threaded; callers run one per core).
// Sum of n floats read with full-width loads (memory read bandwidth).
float ReadSum(const float* p, int64_t n);
// `iters` rounds of 16 independent FMA (F32) / vdpbf16ps chains; returns a value to keep it live.
float FmaLoop(int64_t iters);
float Bf16DotLoop(int64_t iters);
// `iters` rounds of 16 independent vpdpbusd chains (AVX512-VNNI; cpu_kernels_int8_avx512.cc).
int32_t Int8DotLoop(int64_t iters);
}  // namespace xinfer::cpu::avx512
