// GGUF Q4_0 / Q8_0 and AWQ g128 weights meeting int8 activations with vpdpbusd (AVX512-VNNI):
// llama.cpp's arithmetic for GGUF files and vLLM's for AWQ on CPU (IPEX's INT8 "lowp mode", x
// quantized per input block), opt-in (`--int8-activations`, CpuBackendOptions).
//
// Why: with F32 (or BF16) activations a 4-bit weight costs a nibble-to-float conversion before
// its multiply; the vdpbf16ps kernel (cpu_kernels_nibble_bf16.cc) spends ~19 vector ops per 128
// Q4_0 weights and is compute-bound at ~31 GB/s on 2 Zen 4 cores. Here the nibbles are used as
// unsigned bytes as they are (one AND, or a shift and an AND) and vpdpbusd multiplies 64 of them
// with 64 int8 activations per instruction: ~11 ops per 128 weights, ~2x the Q8_0 rate too.
//
// Activations (Int8PrepareX, once per call and row): each block of 32 x values becomes
// d = max|x| / 127 (F32) and q = round-to-nearest-even(x * (1 / d)), |q| <= 127, as llama.cpp's
// Q8_0 activations (which keep d in F16; here it stays F32). A row is stored per "step" of the
// weight format — Q4_0 and AWQ: 128 elements (Q4_0: 4 blocks, 72 bytes; AWQ: one group, 64
// bytes); Q8_0: 64 (2 blocks, 68 bytes):
//   xq: the step's int8 values in the order the weights' bytes come in. Q4_0: 64 bytes of the
//       blocks' first halves (block b's elements 0..15 at bytes 16b..16b+15: the low nibbles)
//       then 64 bytes of their second halves (the high nibbles); AWQ: the 64 even elements (low
//       nibbles), then the 64 odd ones; Q8_0: natural order.
//   aux: 16 F32 lane scales — lane l's x block scale d (vpdpbusd lane l sums bytes 4l..4l+3;
//       Q4_0 and AWQ: block l / 4, Q8_0: block l / 8) — then 16 lane values for the weights'
//       offset: Q4_0 (q - 8) and Q8_0 (bytes made unsigned by XOR 0x80: q + 128) take int32
//       corrections, minus the offset times the lane's int8 x sum, which start the dot; AWQ's
//       zero point belongs to the weight row, so it keeps the plain lane sums (F32) and applies
//       float(dot) - z * sum.
//
// Per step and weight row: a = correction (or 0); a = vpdpbusd(a, u_v, xq_v) over the step's
// weight vectors v (Q4_0 and AWQ: 2, Q8_0: 1); acc = fma(float(a) [- z * sum], dw * dx, acc), dw
// being the lane's weight scale (F16 block scale, or the AWQ group's). The integer sums are
// exact; the F32 sequence per output element depends on K only — not on the tile, the batch or
// the threads (batch invariance), like every kernel here.
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

#include "backend/cpu/tile_avx512.h"

namespace xinfer::cpu::avx512 {
namespace {

// Where a weight row's step lies and how it unpacks to unsigned bytes and lane scales.
template <QuantType QT>
struct Int8StepFormat;

// vpermt2b indices over (bytes 0..63, bytes 8..71) of 4 Q4_0 blocks: output byte 16b + j is
// block b's nibble byte j, at 18b + 2 + j.
alignas(64) constexpr std::array<uint8_t, 64> kQ4_0NibbleIndex = [] {
  std::array<uint8_t, 64> idx{};
  for (int b = 0; b < 4; ++b)
    for (int j = 0; j < 16; ++j) {
      const int at = 18 * b + 2 + j;
      idx[16 * b + j] = static_cast<uint8_t>(at < 64 ? at : 64 + at - 8);
    }
  return idx;
}();

template <>
struct Int8StepFormat<QuantType::kQ4_0> {
  static constexpr int64_t kElems = 128;
  static constexpr int64_t kBytes = 72;
  static constexpr int kVecs = 2;
  struct Row {
    const uint8_t* q;
  };
  static Row RowOf(const PreparedQuant& p, int64_t r) { return {p.q + r * p.row_bytes}; }
  // Lane l (of 16 words, the lower half) takes block l / 4's d (word 9b of the step).
  static __m512i ScaleIndex() {
    return _mm512_setr_epi32(0, 0, 9 | 9 << 16, 9 | 9 << 16, 18 | 18 << 16, 18 | 18 << 16,
                             27 | 27 << 16, 27 | 27 << 16, 0, 0, 0, 0, 0, 0, 0, 0);
  }
  struct Scales {
    __m512 dw;
  };
  static void Unpack(const Row& row, int64_t s, __m512i u[2], Scales& sc) {
    const uint8_t* p = row.q + s * kBytes;
    const __m512i v =
        _mm512_permutex2var_epi8(_mm512_loadu_si512(p), _mm512_load_si512(kQ4_0NibbleIndex.data()),
                                 _mm512_loadu_si512(p + 8));
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    u[0] = _mm512_and_si512(v, low4);
    u[1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
    sc.dw = _mm512_cvtph_ps(
        _mm512_castsi512_si256(_mm512_permutexvar_epi16(ScaleIndex(), _mm512_loadu_si512(p))));
  }
  // aux: lane scales, then int32 corrections (-8 x the lane's x sum) that start the dot.
  static __m512i DotStart(const float* aux) { return _mm512_loadu_si512(aux + 16); }
  static __m512 Update(__m512 acc, __m512i a, const Scales& sc, const float* aux) {
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(a), _mm512_mul_ps(sc.dw, _mm512_loadu_ps(aux)), acc);
  }
};

template <>
struct Int8StepFormat<QuantType::kQ8_0> {
  static constexpr int64_t kElems = 64;
  static constexpr int64_t kBytes = 68;
  static constexpr int kVecs = 1;
  struct Row {
    const uint8_t* q;
  };
  static Row RowOf(const PreparedQuant& p, int64_t r) { return {p.q + r * p.row_bytes}; }
  // Lanes 0..7 take block 0's d (word 0), lanes 8..15 block 1's (word 17).
  static __m512i ScaleIndex() {
    return _mm512_setr_epi32(0, 0, 0, 0, 17 | 17 << 16, 17 | 17 << 16, 17 | 17 << 16, 17 | 17 << 16,
                             0, 0, 0, 0, 0, 0, 0, 0);
  }
  struct Scales {
    __m512 dw;
  };
  static void Unpack(const Row& row, int64_t s, __m512i u[1], Scales& sc) {
    const uint8_t* p = row.q + s * kBytes;
    const __m512i q = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2))),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 36)), 1);
    u[0] = _mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80)));
    // The 64 bytes from p lie inside the step's 68.
    sc.dw = _mm512_cvtph_ps(
        _mm512_castsi512_si256(_mm512_permutexvar_epi16(ScaleIndex(), _mm512_loadu_si512(p))));
  }
  // aux: lane scales, then int32 corrections (-128 x the lane's x sum) that start the dot.
  static __m512i DotStart(const float* aux) { return _mm512_loadu_si512(aux + 16); }
  static __m512 Update(__m512 acc, __m512i a, const Scales& sc, const float* aux) {
    return Int8StepFormat<QuantType::kQ4_0>::Update(acc, a, {sc.dw}, aux);
  }
};

// AWQ g128: a step is one group (64 bytes; byte i holds element 2i in its low nibble, 2i + 1 in
// its high one), with one scale s and zero point z per row. x comes as its 64 even elements, then
// its 64 odd ones; lane l meets elements 8l..8l+7 (x block l / 4). The zero point depends on the
// weight row, so it is applied in F32: float(dot) - z * (lane's x sum, kept in aux as F32).
template <>
struct Int8StepFormat<QuantType::kAwq4> {
  static constexpr int64_t kElems = 128;
  static constexpr int64_t kBytes = 64;
  static constexpr int kVecs = 2;
  struct Row {
    const uint8_t* q;
    const float* scales;
    const float* zeros;
  };
  static Row RowOf(const PreparedQuant& p, int64_t r) {
    return {p.q + r * p.row_bytes, p.scales + r * p.groups, p.zeros + r * p.groups};
  }
  struct Scales {
    __m512 dw, z;
  };
  static void Unpack(const Row& row, int64_t s, __m512i u[2], Scales& sc) {
    const __m512i v = _mm512_loadu_si512(row.q + s * kBytes);
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    u[0] = _mm512_and_si512(v, low4);
    u[1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
    sc.dw = _mm512_set1_ps(row.scales[s]);
    sc.z = _mm512_set1_ps(row.zeros[s]);
  }
  static __m512i DotStart(const float*) { return _mm512_setzero_si512(); }
  // aux: lane scales, then the lanes' x sums (F32).
  static __m512 Update(__m512 acc, __m512i a, const Scales& sc, const float* aux) {
    const __m512 dot = _mm512_fnmadd_ps(sc.z, _mm512_loadu_ps(aux + 16), _mm512_cvtepi32_ps(a));
    return _mm512_fmadd_ps(dot, _mm512_mul_ps(sc.dw, _mm512_loadu_ps(aux)), acc);
  }
};

// Q5_0 (22 bytes per block of 32: F16 d, 32 bits qh, 16 nibble bytes; value (q | h << 4) - 16):
// Q4_0's step of 4 blocks (88 bytes) and x layout; the 5th bits come from the blocks' qh words as
// two 64-bit masks (bit 16b + j: block b's element j, or j + 16), OR-ed in as 16 per byte.
// Loads: bytes 0..63 and 24..87 of the step (vpermt2b index 64 + i - 24 for byte i >= 64).
constexpr uint8_t Q5At(int i) { return static_cast<uint8_t>(i < 64 ? i : 64 + i - 24); }
alignas(64) constexpr std::array<uint8_t, 64> kQ5_0NibbleIndex = [] {
  std::array<uint8_t, 64> idx{};
  for (int b = 0; b < 4; ++b)
    for (int j = 0; j < 16; ++j) idx[16 * b + j] = Q5At(22 * b + 6 + j);
  return idx;
}();
// Bytes 0..7: the low 16 bits of qh of blocks 0..3 (mask of the low nibbles); 8..15: the high.
alignas(64) constexpr std::array<uint8_t, 64> kQ5_0HighBitIndex = [] {
  std::array<uint8_t, 64> idx{};
  for (int b = 0; b < 4; ++b)
    for (int j = 0; j < 2; ++j) {
      idx[2 * b + j] = Q5At(22 * b + 2 + j);
      idx[8 + 2 * b + j] = Q5At(22 * b + 4 + j);
    }
  return idx;
}();

template <>
struct Int8StepFormat<QuantType::kQ5_0> {
  static constexpr int64_t kElems = 128;
  static constexpr int64_t kBytes = 88;
  static constexpr int kVecs = 2;
  using Row = Int8StepFormat<QuantType::kQ4_0>::Row;
  using Scales = Int8StepFormat<QuantType::kQ4_0>::Scales;
  static Row RowOf(const PreparedQuant& p, int64_t r) { return {p.q + r * p.row_bytes}; }
  static void Unpack(const Row& row, int64_t s, __m512i u[2], Scales& sc) {
    const uint8_t* p = row.q + s * kBytes;
    const __m512i a = _mm512_loadu_si512(p), b = _mm512_loadu_si512(p + 24);
    const __m512i v = _mm512_permutex2var_epi8(a, _mm512_load_si512(kQ5_0NibbleIndex.data()), b);
    const __m128i qh = _mm512_castsi512_si128(
        _mm512_permutex2var_epi8(a, _mm512_load_si512(kQ5_0HighBitIndex.data()), b));
    const __m512i low4 = _mm512_set1_epi8(0x0F), bit4 = _mm512_set1_epi8(0x10);
    u[0] = _mm512_or_si512(_mm512_and_si512(v, low4),
                           _mm512_maskz_mov_epi8(_cvtu64_mask64(_mm_cvtsi128_si64(qh)), bit4));
    u[1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), low4),
                           _mm512_maskz_mov_epi8(_cvtu64_mask64(_mm_extract_epi64(qh, 1)), bit4));
    // Lane l takes block l / 4's d: word 11b (block 3's, byte 66, is word 21 of the second load).
    const __m512i scale_index =
        _mm512_setr_epi32(0, 0, 11 | 11 << 16, 11 | 11 << 16, 22 | 22 << 16, 22 | 22 << 16,
                          53 | 53 << 16, 53 | 53 << 16, 0, 0, 0, 0, 0, 0, 0, 0);
    sc.dw = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi16(a, scale_index, b)));
  }
  // aux: lane scales, then int32 corrections (-16 x the lane's x sum) that start the dot.
  static __m512i DotStart(const float* aux) { return _mm512_loadu_si512(aux + 16); }
  static __m512 Update(__m512 acc, __m512i a, const Scales& sc, const float* aux) {
    return Int8StepFormat<QuantType::kQ4_0>::Update(acc, a, sc, aux);
  }
};

// Q4_K (144 bytes per 256: F16 d, F16 dmin, 12 bytes of 6-bit scales and mins, 128 nibble
// bytes; value d * sc * q - dmin * m per sub-block of 32). A step is half a super-block: 64 nibble
// bytes, whose low nibbles are sub-blocks 0 and 2 of the half (bytes 0..31, 32..63) and high
// nibbles sub-blocks 1 and 3. The 128-bit quarters are regrouped so that lane group g (lanes
// 4g..4g+3) of both vectors is sub-block kQ4KOrder[g] — the first vector its elements 0..15, the
// second 16..31 — and the lane's scale and min are that sub-block's. x comes in the same order.
constexpr int kQ4KOrder[4] = {0, 2, 1, 3};
template <>
struct Int8StepFormat<QuantType::kQ4_K> {
  static constexpr int64_t kElems = 128;
  static constexpr int64_t kBytes = 72;  // half of a 144-byte super-block
  static constexpr int kVecs = 2;
  using Row = Int8StepFormat<QuantType::kQ4_0>::Row;
  struct Scales {
    __m512 dsc, dmm;  // per lane: d * sc and dmin * m of its sub-block
  };
  static Row RowOf(const PreparedQuant& p, int64_t r) { return {p.q + r * p.row_bytes}; }
  static void Unpack(const Row& row, int64_t s, __m512i u[2], Scales& sc) {
    const uint8_t* block = row.q + (s / 2) * 144;
    const int half = static_cast<int>(s % 2);
    const __m512i v = _mm512_loadu_si512(block + 16 + 64 * half);
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i lo = _mm512_and_si512(v, low4);
    const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
    u[0] = _mm512_shuffle_i64x2(lo, hi, 0x88);  // quarters lo 0, lo 2, hi 0, hi 2
    u[1] = _mm512_shuffle_i64x2(lo, hi, 0xDD);  // lo 1, lo 3, hi 1, hi 3
    // The 6-bit scales (bytes sc) and mins (bytes m) of sub-blocks 4 half .. 4 half + 3.
    uint32_t w[3];
    __builtin_memcpy(w, block + 4, 12);
    uint32_t scs, mins;
    if (half == 0) {
      scs = w[0] & 0x3F3F3F3F;
      mins = w[1] & 0x3F3F3F3F;
    } else {
      scs = (w[2] & 0x0F0F0F0F) | (((w[0] >> 6) & 0x03030303) << 4);
      mins = ((w[2] >> 4) & 0x0F0F0F0F) | (((w[1] >> 6) & 0x03030303) << 4);
    }
    uint16_t d16, dmin16;
    __builtin_memcpy(&d16, block, 2);
    __builtin_memcpy(&dmin16, block + 2, 2);
    const __m128 dd = _mm_cvtph_ps(_mm_set1_epi32(d16 | static_cast<uint32_t>(dmin16) << 16));
    const __m128 sc4 =
        _mm_mul_ps(_mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(scs)))),
                   _mm_shuffle_ps(dd, dd, 0x00));
    const __m128 m4 =
        _mm_mul_ps(_mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(mins)))),
                   _mm_shuffle_ps(dd, dd, 0x55));
    const __m512i groups = _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 1, 1, 1, 1, 3, 3, 3, 3);
    sc.dsc = _mm512_permutexvar_ps(groups, _mm512_castps128_ps512(sc4));
    sc.dmm = _mm512_permutexvar_ps(groups, _mm512_castps128_ps512(m4));
  }
  static __m512i DotStart(const float*) { return _mm512_setzero_si512(); }
  // aux: lane scales dx, then dx x the lane's x sum (F32).
  static __m512 Update(__m512 acc, __m512i a, const Scales& sc, const float* aux) {
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a), _mm512_mul_ps(sc.dsc, _mm512_loadu_ps(aux)), acc);
    return _mm512_fnmadd_ps(sc.dmm, _mm512_loadu_ps(aux + 16), acc);
  }
};

// Q6_K (210 bytes per 256: 128 bytes ql, 64 bytes qh, 16 int8 scales, F16 d; value
// d * scale[16-element group] * (q - 32), q 6 bits). A step is half a super-block (128 elements):
// element r's low 4 bits are in ql[r % 64] (low nibble for r < 64, high for r >= 64), its top 2
// bits in qh[r % 32] at bit 2 (r / 32). The 6-bit values are built in element order (elements
// 0..63, then 64..127) and dealt out by dwords: the first vector takes dwords 0, 2, 4, ..., the
// second 1, 3, 5, ..., so that lane l sees elements 8l..8l+7 — one 16-element scale group (l / 2)
// and one x block (l / 4). x comes dealt out the same way.
template <>
struct Int8StepFormat<QuantType::kQ6_K> {
  static constexpr int64_t kElems = 128;
  static constexpr int64_t kBytes = 105;  // half of a 210-byte super-block
  static constexpr int kVecs = 2;
  using Row = Int8StepFormat<QuantType::kQ4_0>::Row;
  using Scales = Int8StepFormat<QuantType::kQ4_0>::Scales;
  static Row RowOf(const PreparedQuant& p, int64_t r) { return {p.q + r * p.row_bytes}; }
  static void Unpack(const Row& row, int64_t s, __m512i u[2], Scales& sc) {
    const uint8_t* block = row.q + (s / 2) * 210;
    const int half = static_cast<int>(s % 2);
    const __m512i ql = _mm512_loadu_si512(block + 64 * half);
    const __m512i qh = _mm512_broadcast_i64x4(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 128 + 32 * half)));
    const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
    // Elements 0..63 (byte r: element r): qh bits 0-1 for r < 32, bits 2-3 above; 64..127: bits
    // 4-5 and 6-7. The word shifts move no bit of one byte into bits 4-5 of another.
    const __m512i shift_lo = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
    const __m512i shift_hi = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1);
    // 0xEA: (a & b) | c
    const __m512i first =
        _mm512_ternarylogic_epi32(_mm512_slli_epi16(_mm512_srlv_epi16(qh, shift_lo), 4), bits45,
                                  _mm512_and_si512(ql, low4), 0xEA);
    const __m512i second =
        _mm512_ternarylogic_epi32(_mm512_slli_epi16(_mm512_srlv_epi16(qh, shift_hi), 4), bits45,
                                  _mm512_and_si512(_mm512_srli_epi16(ql, 4), low4), 0xEA);
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    u[0] = _mm512_permutex2var_epi32(first, even, second);
    u[1] = _mm512_permutex2var_epi32(first, _mm512_add_epi32(even, _mm512_set1_epi32(1)), second);
    uint16_t d16;
    __builtin_memcpy(&d16, block + 208, 2);
    const __m256 scales = _mm256_mul_ps(
        _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 192 + 8 * half)))),
        _mm256_set1_ps(_cvtsh_ss(d16)));
    const __m512i pairs = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    sc.dw = _mm512_permutexvar_ps(pairs, _mm512_castps256_ps512(scales));
  }
  // aux: lane scales, then int32 corrections (-32 x the lane's x sum) that start the dot.
  static __m512i DotStart(const float* aux) { return _mm512_loadu_si512(aux + 16); }
  static __m512 Update(__m512 acc, __m512i a, const Scales& sc, const float* aux) {
    return Int8StepFormat<QuantType::kQ4_0>::Update(acc, a, sc, aux);
  }
};

// The tiles stream a linear range (4 short rows side by side) and do ~2x less work per byte than
// the F32/BF16-activation quantized tiles, so the kQuantPrefetchBytes scheme (4 KiB ahead into
// L1) left them waiting on DRAM: perf put the stalls on each step's first load. 8 KiB ahead into
// L2 (prefetcht1): pure Q4_0 decode of the 0.5B shape 104-108 -> 111-116 tok/s at ~36 GB/s
// (interleaved runs; 6-12 KiB alike, 16 KiB worse), docs/performance.md.
constexpr int64_t kInt8PrefetchBytes = 8192;
inline void PrefetchRangeL2(const void* p, int64_t bytes) {
  for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(static_cast<const char*>(p) + o, 0, 2);
}

template <QuantType QT, int MR, int NR>
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
  const int64_t steps = p.row_bytes / F::kBytes;
  for (int64_t s = 0; s < steps; ++s) {
    PrefetchRangeL2(rows[0].q + kInt8PrefetchBytes + s * NR * F::kBytes, NR * F::kBytes);
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
template <QuantType QT, int MR>
constexpr TileFn kRow[kNr] = {TileInt8<QT, MR, 1>, TileInt8<QT, MR, 2>, TileInt8<QT, MR, 3>,
                              TileInt8<QT, MR, 4>};
template <QuantType QT>
constexpr const TileFn* kTiles[kMr] = {kRow<QT, 1>, kRow<QT, 2>, kRow<QT, 3>, kRow<QT, 4>};

template <QuantType QT>
void QuantLinearInt8Impl(const QuantLinearTask& t, int64_t t0, int64_t t1, int64_t n0, int64_t n1) {
  const PreparedQuant p = PrepareQuant(*t.w);
  // Weight rows in blocks that stay in L2 while every row of x passes over them.
  int64_t nb = (256 << 10) / p.row_bytes / kNr * kNr;
  if (nb < kNr) nb = kNr;
  ForEachTile<kMr, kNr>(t0, t1, n0, n1, nb, [&](int64_t r, int64_t mr, int64_t n, int64_t nr) {
    kTiles<QT>[mr - 1][nr - 1](t, p, r, n);
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
      return f.avx512_vbmi && w.cols % 128 == 0;
    case QuantType::kAwq4:
      return w.group_size == 128 && w.cols % 128 == 0;
    case QuantType::kQ8_0:
      return w.cols % 64 == 0;
    case QuantType::kQ4_K:
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
             q4k = type == QuantType::kQ4_K;
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
      } else if (q4k) {
        _mm512_storeu_ps(as + 16, _mm512_mul_ps(dx, _mm512_cvtepi32_ps(sum)));
      } else {
        _mm512_storeu_si512(as + 16, _mm512_sub_epi32(_mm512_setzero_si512(), sum));
      }
    }
  }
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
  if (t.w->type == QuantType::kQ6_K)
    return QuantLinearInt8Impl<QuantType::kQ6_K>(t, t0, t1, n0, n1);
  return QuantLinearInt8Impl<QuantType::kQ8_0>(t, t0, t1, n0, n1);
}

}  // namespace xinfer::cpu::avx512

#pragma GCC pop_options

#endif  // defined(__x86_64__)
