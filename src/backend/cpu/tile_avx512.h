// Pieces shared by the AVX-512 tile kernels (cpu_kernels_*avx512.cc, cpu_kernels_nibble_bf16.cc).
// Include it after the file's `#pragma GCC target(...)` so that it compiles for that ISA.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>

namespace xinfer::cpu::avx512 {

inline __mmask16 TailMask16(int64_t r) { return static_cast<__mmask16>((1u << r) - 1); }

// 32 BF16 values' bits as the vdpbf16ps operand type (a reinterpretation, no instruction).
inline __m512bh AsBh(__m512i v) { return reinterpret_cast<__m512bh&>(v); }

// exp(x) for softmax and SiLU: Cephes expf polynomial after range reduction by ln 2, scaled by
// 2^n with vscalefps (which also gives 0 / inf at the ends of the range). About 1 ulp.
inline __m512 Exp512(__m512 x) {
  x = _mm512_min_ps(x, _mm512_set1_ps(88.7228f));
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
  p = _mm512_add_ps(p, _mm512_set1_ps(1.f));
  return _mm512_scalef_ps(p, n);
}

// 16 BF16 values (bits) widened to F32, exactly: a BF16 is the high half of its F32.
inline __m512 WidenBf16(__m256i bits) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
}

// Lane i of the result: the sum of lanes i, 4 + i, 8 + i and 12 + i (the four 128-bit blocks
// added 0+2, 1+3, then those two), e.g. per-head softmax denominators kept 4 keys x 4 heads per
// vector.
inline __m128 SumBlocks4(__m512 v) {
  const __m256 half = _mm256_add_ps(
      _mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  return _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
}

// Horizontal sums of four accumulators, lane i of the result for accumulator i. Each sum is
// added in exactly the tree _mm512_reduce_add_ps uses (128-bit blocks 0+2 and 1+3, then those
// two, then lanes 0+2 and 1+3 of the block, then those two), so results are bitwise those of
// four separate reductions, at about a third of the instructions: the reduction was ~20 % of a
// K = 896 tile's work.
inline __m128 ReduceAdd4(__m512 a, __m512 b, __m512 c, __m512 d) {
  // [a0+a2 | a1+a3 | b0+b2 | b1+b3] in 128-bit blocks, likewise for c, d.
  const __m512 ab =
      _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  const __m512 cd =
      _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
  // Block q holds accumulator q's (b0+b2) + (b1+b3).
  __m512 s = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
  s = _mm512_add_ps(s, _mm512_permute_ps(s, 0x4E));  // lanes 0+2, 1+3
  s = _mm512_add_ps(s, _mm512_permute_ps(s, 0xB1));  // then those two: every lane has the sum
  const __m512i first_lanes = _mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castps512_ps128(_mm512_permutexvar_ps(first_lanes, s));
}

// The score pass of the grouped attention kernels: dot_key(p, acc) sets acc[0 .. H) to key p's
// accumulators of the call's H heads (acc[H .. 4) stay zero); lane h of key p's 4 floats at
// e + 4p becomes head h's score * scale (lanes >= H zero). With H <= 2 two keys share one
// ReduceAdd4 — each lane is its own accumulator's fixed tree, so the scores are the same as one
// key per reduction: half the reductions, two keys' chains in flight. Returns the per-lane max.
template <int H, class DotKey>
inline __m128 GroupScores(int64_t n, float scale, float* e, DotKey&& dot_key) {
  const __m512 zero = _mm512_setzero_ps();
  const __m128 sc = _mm_set1_ps(scale);
  __m128 mx = _mm_set1_ps(-INFINITY);
  int64_t p = 0;
  if constexpr (H <= 2) {
    const __m128 z4 = _mm_setzero_ps();
    for (; p + 2 <= n; p += 2) {
      __m512 acc[4] = {zero, zero, zero, zero};
      dot_key(p, acc);
      dot_key(p + 1, acc + 2);
      const __m128 s = _mm_mul_ps(ReduceAdd4(acc[0], acc[1], acc[2], acc[3]), sc);
      // Key p's scores in lanes 0, 1 and key p + 1's in 2, 3, stored apart.
      const __m128 first = _mm_movelh_ps(s, z4);
      const __m128 second = _mm_movehl_ps(z4, s);
      _mm_storeu_ps(e + 4 * p, first);
      _mm_storeu_ps(e + 4 * p + 4, second);
      mx = _mm_max_ps(mx, _mm_max_ps(first, second));
    }
  }
  for (; p < n; ++p) {
    __m512 acc[4] = {zero, zero, zero, zero};
    dot_key(p, acc);
    const __m128 s = _mm_mul_ps(ReduceAdd4(acc[0], acc[1], acc[2], acc[3]), sc);
    _mm_storeu_ps(e + 4 * p, s);
    mx = _mm_max_ps(s, mx);
  }
  return mx;
}

// The end of every tile: out[i * ldo + j] = horizontal sum of acc[i][j] + bias[j] (bias may be
// null: + 0). The fixed reduction is part of each output element's one instruction sequence, the
// same for every tile shape (a missing accumulator of a group of four is a zero one).
template <int MR, int NR>
inline void StoreTile(const __m512 (&acc)[MR][NR], const float* bias, float* out, int64_t ldo) {
  const __m512 zero = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int g = 0; g < NR; g += 4) {
    const int n = NR - g < 4 ? NR - g : 4;
    const __mmask8 m = static_cast<__mmask8>((1u << n) - 1);
    const __m128 b = bias != nullptr ? _mm_maskz_loadu_ps(m, bias + g) : _mm_setzero_ps();
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m128 s =
          ReduceAdd4(acc[i][g], g + 1 < NR ? acc[i][g + 1] : zero,
                     g + 2 < NR ? acc[i][g + 2] : zero, g + 3 < NR ? acc[i][g + 3] : zero);
      _mm_mask_storeu_ps(out + i * ldo + g, m, _mm_add_ps(s, b));
    }
  }
}

}  // namespace xinfer::cpu::avx512
