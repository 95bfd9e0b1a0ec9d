// The weight formats of the int8-activation kernels (cpu_kernels_int8_avx512.cc, whose top
// comment describes the scheme): for each, where a weight row's step of 64 or 128 elements lies,
// how it unpacks to unsigned bytes in the order the prepared x comes in, and the per-lane F32
// epilogue. Include it after the including file's `#pragma GCC target(...)` (AVX512-VNNI/VBMI),
// inside namespace xinfer::cpu::avx512, like tile_avx512.h.
#pragma once

#include <immintrin.h>

#include <array>
#include <cstdint>

#include "backend/cpu/cpu_kernels.h"

namespace xinfer::cpu::avx512::int8_formats {

// Where a weight row's step lies and how it unpacks to unsigned bytes and lane scales.
template <QuantType QT>
struct Int8StepFormat;

// A GGUF row: its bytes only (the block scales are inside).
struct BlockRow {
  struct Row {
    const uint8_t* q;
  };
  static Row RowOf(const PreparedQuant& p, int64_t r) { return {p.q + r * p.row_bytes}; }
};

// The epilogue of the formats with a fixed offset (Q4_0: q - 8, Q5_0: - 16, Q6_K: - 32, Q8_0's
// bytes XOR 0x80: + 128): x's aux holds the lane scales, then int32 corrections (minus the offset
// times the lane's x sum) that start the dot.
struct FixedOffsetEpilogue {
  struct Scales {
    __m512 dw;  // per lane: the weight scale
  };
  static __m512i DotStart(const float* aux) { return _mm512_loadu_si512(aux + 16); }
  static __m512 Update(__m512 acc, __m512i a, const Scales& sc, const float* aux) {
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(a), _mm512_mul_ps(sc.dw, _mm512_loadu_ps(aux)), acc);
  }
};

template <>
struct Int8StepFormat<QuantType::kQ4_0> : BlockRow, FixedOffsetEpilogue {
  static constexpr int64_t kElems = 128;
  static constexpr int64_t kBytes = 72;
  static constexpr int kVecs = 2;
  // Lane l (of 16 words, the lower half) takes block l / 4's d (word 9b of the step).
  static __m512i ScaleIndex() {
    return _mm512_setr_epi32(0, 0, 9 | 9 << 16, 9 | 9 << 16, 18 | 18 << 16, 18 | 18 << 16,
                             27 | 27 << 16, 27 | 27 << 16, 0, 0, 0, 0, 0, 0, 0, 0);
  }
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
};

template <>
struct Int8StepFormat<QuantType::kQ8_0> : BlockRow, FixedOffsetEpilogue {
  static constexpr int64_t kElems = 64;
  static constexpr int64_t kBytes = 68;
  static constexpr int kVecs = 1;
  // Lanes 0..7 take block 0's d (word 0), lanes 8..15 block 1's (word 17).
  static __m512i ScaleIndex() {
    return _mm512_setr_epi32(0, 0, 0, 0, 17 | 17 << 16, 17 | 17 << 16, 17 | 17 << 16, 17 | 17 << 16,
                             0, 0, 0, 0, 0, 0, 0, 0);
  }
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
  using Row = AwqRow;
  static Row RowOf(const PreparedQuant& p, int64_t r) { return AwqRowOf(p, r); }
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
struct Int8StepFormat<QuantType::kQ5_0> : BlockRow, FixedOffsetEpilogue {
  static constexpr int64_t kElems = 128;
  static constexpr int64_t kBytes = 88;
  static constexpr int kVecs = 2;
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
};

// The epilogue of the formats whose offset is a per-block min (Q4_1, Q5_1, the K-quants): x's aux
// holds the lane scales d_x, then d_x x the lane's x sum (F32); value = dw * q + dm per lane
// (the K-quants' dm is -dmin * m).
struct MinOffsetEpilogue {
  struct Scales {
    __m512 dw, dm;
  };
  static __m512i DotStart(const float*) { return _mm512_setzero_si512(); }
  static __m512 Update(__m512 acc, __m512i a, const Scales& sc, const float* aux) {
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(a), _mm512_mul_ps(sc.dw, _mm512_loadu_ps(aux)), acc);
    return _mm512_fmadd_ps(sc.dm, _mm512_loadu_ps(aux + 16), acc);
  }
};

// Q4_1 (20 bytes per block of 32: F16 d, F16 m, 16 nibble bytes) and Q5_1 (24: d, m, 32 bits qh,
// 16 nibble bytes): value d * q + m, q unsigned (4 or 5 bits), laid out as Q4_0 / Q5_0. A step is
// 4 blocks; the min enters the epilogue as m * d_x * (the lane's x sum), like the K-quants' mins.
// Loads: bytes 0..63 and the last 64 of the step (vpermt2b index 64 + i - (step - 64) for i >= 64).
template <bool kFiveBits>
struct MinBlockFormat : BlockRow, MinOffsetEpilogue {
  static constexpr int kBlockBytes = kFiveBits ? 24 : 20;
  static constexpr int kQsAt = kFiveBits ? 8 : 4;
  static constexpr int64_t kElems = 128;
  static constexpr int64_t kBytes = 4 * kBlockBytes;
  static constexpr int kVecs = 2;
  static constexpr uint8_t At(int i) {
    return static_cast<uint8_t>(i < 64 ? i : 64 + i - (kBytes - 64));
  }
  static constexpr std::array<uint8_t, 64> kNibbleIndex = [] {
    std::array<uint8_t, 64> idx{};
    for (int b = 0; b < 4; ++b)
      for (int j = 0; j < 16; ++j) idx[16 * b + j] = At(kBlockBytes * b + kQsAt + j);
    return idx;
  }();
  // Bytes 0..7: the low 16 bits of qh of blocks 0..3; 8..15: the high (Q5_1 only).
  static constexpr std::array<uint8_t, 64> kHighBitIndex = [] {
    std::array<uint8_t, 64> idx{};
    for (int b = 0; b < 4; ++b)
      for (int j = 0; j < 2; ++j) {
        idx[2 * b + j] = At(kBlockBytes * b + 4 + j);
        idx[8 + 2 * b + j] = At(kBlockBytes * b + 6 + j);
      }
    return idx;
  }();
  // Words: lanes 0..15 take block l / 4's d (or, with +1, its m), from the two loads.
  static __m512i ScaleIndex(int plus) {
    alignas(64) uint16_t idx[32] = {};
    for (int l = 0; l < 16; ++l) {
      const int byte = kBlockBytes * (l / 4) + 2 * plus;
      idx[2 * (l / 2) + l % 2] = static_cast<uint16_t>(At(byte) / 2);
    }
    return _mm512_load_si512(idx);
  }
  static void Unpack(const Row& row, int64_t s, __m512i u[2], Scales& sc) {
    const uint8_t* p = row.q + s * kBytes;
    const __m512i a = _mm512_loadu_si512(p), b = _mm512_loadu_si512(p + kBytes - 64);
    alignas(64) static constexpr std::array<uint8_t, 64> nibble_index = kNibbleIndex;
    const __m512i v = _mm512_permutex2var_epi8(a, _mm512_load_si512(nibble_index.data()), b);
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    u[0] = _mm512_and_si512(v, low4);
    u[1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
    if constexpr (kFiveBits) {
      alignas(64) static constexpr std::array<uint8_t, 64> high_index = kHighBitIndex;
      const __m128i qh = _mm512_castsi512_si128(
          _mm512_permutex2var_epi8(a, _mm512_load_si512(high_index.data()), b));
      const __m512i bit4 = _mm512_set1_epi8(0x10);
      u[0] =
          _mm512_or_si512(u[0], _mm512_maskz_mov_epi8(_cvtu64_mask64(_mm_cvtsi128_si64(qh)), bit4));
      u[1] = _mm512_or_si512(u[1],
                             _mm512_maskz_mov_epi8(_cvtu64_mask64(_mm_extract_epi64(qh, 1)), bit4));
    }
    sc.dw = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi16(a, ScaleIndex(0), b)));
    sc.dm = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi16(a, ScaleIndex(1), b)));
  }
};

template <>
struct Int8StepFormat<QuantType::kQ4_1> : MinBlockFormat<false> {};
template <>
struct Int8StepFormat<QuantType::kQ5_1> : MinBlockFormat<true> {};

// Q4_K (144 bytes per 256: F16 d, F16 dmin, 12 bytes of 6-bit scales and mins, 128 nibble
// bytes; value d * sc * q - dmin * m per sub-block of 32). A step is half a super-block: 64 nibble
// bytes, whose low nibbles are sub-blocks 0 and 2 of the half (bytes 0..31, 32..63) and high
// nibbles sub-blocks 1 and 3. The 128-bit quarters are regrouped so that lane group g (lanes
// 4g..4g+3) of both vectors is sub-block kQ4KOrder[g] — the first vector its elements 0..15, the
// second 16..31 — and the lane's scale and min are that sub-block's. x comes in the same order.
constexpr int kQ4KOrder[4] = {0, 2, 1, 3};

// Q4_K and Q5_K share the scales, the mins and the nibble layout; Q5_K (176 bytes per 256: d,
// dmin, 12 scale bytes, 32 bytes qh, 128 nibble bytes) adds a 5th bit per element: bit 2c of
// qh[l] for element l of chunk c's first 32 (the low nibbles), bit 2c + 1 for its last 32.
template <bool kFiveBits>
struct ScaleMinKFormat : BlockRow, MinOffsetEpilogue {
  static constexpr int64_t kBlockBytes = kFiveBits ? 176 : 144;
  static constexpr int64_t kElems = 128;
  static constexpr int64_t kBytes = kBlockBytes / 2;  // a step is half a super-block
  static constexpr int kVecs = 2;
  static void Unpack(const Row& row, int64_t s, __m512i u[2], Scales& sc) {
    const uint8_t* block = row.q + (s / 2) * kBlockBytes;
    const int half = static_cast<int>(s % 2);
    const __m512i v = _mm512_loadu_si512(block + (kFiveBits ? 48 : 16) + 64 * half);
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    __m512i lo = _mm512_and_si512(v, low4);
    __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
    if constexpr (kFiveBits) {
      // Byte i of the step (chunk c = 2 half + i / 32): bit 2c of qh[i % 32] for the low nibble,
      // 2c + 1 for the high one. qh is broadcast to both halves of the register and shifted by
      // 4 half (bytes 0..31) or 4 half + 2 (bytes 32..63); word shifts of at most 6 move no bit
      // of one byte into bits 0-1 of another.
      const __m512i qh =
          _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 16)));
      const __m512i t = _mm512_srlv_epi16(
          qh, _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(4 * half)),
                                 _mm256_set1_epi16(static_cast<int16_t>(4 * half + 2)), 1));
      const __m512i bit4 = _mm512_set1_epi8(0x10);
      lo = _mm512_ternarylogic_epi32(_mm512_slli_epi16(t, 4), bit4, lo, 0xEA);  // (a & b) | c
      hi = _mm512_ternarylogic_epi32(_mm512_slli_epi16(t, 3), bit4, hi, 0xEA);
    }
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
    const __m128 m4 =  // -dmin * m
        _mm_mul_ps(_mm_cvtepi32_ps(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(mins)))),
                   _mm_sub_ps(_mm_setzero_ps(), _mm_shuffle_ps(dd, dd, 0x55)));
    const __m512i groups = _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 1, 1, 1, 1, 3, 3, 3, 3);
    sc.dw = _mm512_permutexvar_ps(groups, _mm512_castps128_ps512(sc4));
    sc.dm = _mm512_permutexvar_ps(groups, _mm512_castps128_ps512(m4));
  }
};

template <>
struct Int8StepFormat<QuantType::kQ4_K> : ScaleMinKFormat<false> {};
template <>
struct Int8StepFormat<QuantType::kQ5_K> : ScaleMinKFormat<true> {};

// Q6_K (210 bytes per 256: 128 bytes ql, 64 bytes qh, 16 int8 scales, F16 d; value
// d * scale[16-element group] * (q - 32), q 6 bits). A step is half a super-block (128 elements):
// element r's low 4 bits are in ql[r % 64] (low nibble for r < 64, high for r >= 64), its top 2
// bits in qh[r % 32] at bit 2 (r / 32). The 6-bit values are built in element order (elements
// 0..63, then 64..127) and dealt out by dwords: the first vector takes dwords 0, 2, 4, ..., the
// second 1, 3, 5, ..., so that lane l sees elements 8l..8l+7 — one 16-element scale group (l / 2)
// and one x block (l / 4). x comes dealt out the same way.
template <>
struct Int8StepFormat<QuantType::kQ6_K> : BlockRow, FixedOffsetEpilogue {
  static constexpr int64_t kElems = 128;
  static constexpr int64_t kBytes = 105;  // half of a 210-byte super-block
  static constexpr int kVecs = 2;
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
};

}  // namespace xinfer::cpu::avx512::int8_formats
