// Paged attention on AVX2 CPUs without AVX-512 (Hygon C86, Zen 1-3, Intel's without AVX-512):
// the query heads that share one KV head (GQA), up to 4 per call, each K and V row loaded once
// for all of them. FastCpuOps::PagedAttention owns the threading (one call: one query row, one
// KV head's keys in position order, up to 4 of its query heads).
//
// Why: the portable kernel (cpu_kernels_hwy_ops.cc, AttentionRow) runs one head at a time, so
// Qwen2.5's 7 heads per KV head read every K/V row 7 times, and each of its scores ends in a
// horizontal sum (~6 ops for the 8 FMAs of a d = 64 dot product). Here a key's 4 heads' dot
// products are summed together (3 hadds and an add for 4 scores), and the weighted sum reads a
// V row once for the 4 heads' accumulators.
//
// Arithmetic (batch invariance, cpu_kernels.h): head h's score for key p is its 8 lane sums
// a_l = sum over chunks c of q[8c + l] * k[8c + l] (fma, c ascending), then
// ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)), times the scale; the softmax numerators are
// Highway's exp (simd::Exp) of score - max, the denominator their double sum over keys in order;
// output element c is o = fma(e_p, v_p[c], o) over the keys in order from 0, times
// float(1 / denominator). None of it depends on the other heads of the call, the batch or the
// thread (the bits differ from AttentionRow's, which sums lanes in Highway's tree).
#if defined(__x86_64__)  // x86 only; cpu_kernels_avx512_absent.cc elsewhere

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "backend/cpu/cpu_kernels.h"
#include "base/check.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma")

namespace xinfer::cpu::avx2 {
namespace {

// 8 cache elements widened to F32: F32 as is, BF16 bits shifted into the high half (exact).
inline __m256 LoadKv(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 LoadKv(const uint16_t* p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(
      _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}

// Lane h of the result: the sum of a_h's 8 lanes in the tree above, whatever the other inputs.
inline __m128 ReduceAdd4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  const __m256 t0 = _mm256_hadd_ps(a0, a1);  // a0: l0+l1, l2+l3; a1: ..; high lanes alike
  const __m256 t1 = _mm256_hadd_ps(a2, a3);
  const __m256 u = _mm256_hadd_ps(t0, t1);  // (l0+l1)+(l2+l3) of a0..a3, then (l4+l5)+(l6+l7)
  return _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
}

// The scaled scores of key `kr` for kHeads heads (q[h], d = 8 * d8), lane h; lanes >= kHeads 0.
template <int kHeads, int kD8, class T>
inline void ScorePair(const float* const* q, const T* k0, const T* k1, int64_t d8, __m128 scale,
                      __m128& s0, __m128& s1) {
  const int64_t chunks = kD8 > 0 ? kD8 : d8;
  __m256 a0[4], a1[4];
#pragma GCC unroll 4
  for (int h = 0; h < 4; ++h) a0[h] = a1[h] = _mm256_setzero_ps();
#pragma GCC unroll 16
  for (int64_t c = 0; c < chunks; ++c) {
    const __m256 kv0 = LoadKv(k0 + 8 * c), kv1 = LoadKv(k1 + 8 * c);
#pragma GCC unroll 4
    for (int h = 0; h < kHeads; ++h) {
      const __m256 qv = _mm256_loadu_ps(q[h] + 8 * c);
      a0[h] = _mm256_fmadd_ps(qv, kv0, a0[h]);
      a1[h] = _mm256_fmadd_ps(qv, kv1, a1[h]);
    }
  }
  s0 = _mm_mul_ps(ReduceAdd4(a0[0], a0[1], a0[2], a0[3]), scale);
  s1 = _mm_mul_ps(ReduceAdd4(a1[0], a1[1], a1[2], a1[3]), scale);
}

// out_h[c .. c + 8 kVecs) = sum over keys of e[4p + h] * v_p[c ..], for kHeads heads at once.
template <int kHeads, int kVecs, class T>
inline void WeightedSumBlock(const T* v_base, const int64_t* off, const float* e, int64_t n,
                             int64_t c, const float* inv, float* const* out) {
  __m256 o[4][kVecs];
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h)
#pragma GCC unroll 2
    for (int j = 0; j < kVecs; ++j) o[h][j] = _mm256_setzero_ps();
  for (int64_t p = 0; p < n; ++p) {
    const T* vr = v_base + off[p] + c;
    __m256 vv[kVecs];
#pragma GCC unroll 2
    for (int j = 0; j < kVecs; ++j) vv[j] = LoadKv(vr + 8 * j);
#pragma GCC unroll 4
    for (int h = 0; h < kHeads; ++h) {
      const __m256 w = _mm256_broadcast_ss(e + 4 * p + h);
#pragma GCC unroll 2
      for (int j = 0; j < kVecs; ++j) o[h][j] = _mm256_fmadd_ps(w, vv[j], o[h][j]);
    }
  }
#pragma GCC unroll 4
  for (int h = 0; h < kHeads; ++h) {
    const __m256 iv = _mm256_set1_ps(inv[h]);
#pragma GCC unroll 2
    for (int j = 0; j < kVecs; ++j)
      _mm256_storeu_ps(out[h] + c + 8 * j, _mm256_mul_ps(o[h][j], iv));
  }
}

template <int kHeads, int kD8, class T>
void Group(const float* q, int64_t q_stride, const T* k_base, const T* v_base, const int64_t* off,
           int64_t n, int64_t d, float scale, float* e, float* out, int64_t out_stride) {
  const float* qh[4];
  float* oh[4];
  for (int h = 0; h < 4; ++h) {
    qh[h] = q + (h < kHeads ? h : 0) * q_stride;
    oh[h] = out + (h < kHeads ? h : 0) * out_stride;
  }
  const int64_t d8 = d / 8;
  constexpr int64_t ahead = kKvPrefetchKeys;  // AVX2 hosts: not re-measured with KvPrefetchKeys
  // Scores: e[4p + h] is head h's for key p; two keys per pass for more FMA chains (a key's
  // score is the same in a pair or alone).
  const __m128 sc = _mm_set1_ps(scale);
  __m128 mx = _mm_set1_ps(-INFINITY);
  PrefetchFirstRows(k_base, off, n, d, ahead);
  PrefetchFirstRows(v_base, off, n, d, ahead);
  int64_t p = 0;
  for (; p + 2 <= n; p += 2) {
    PrefetchRowAhead(k_base, off, p, n, d, ahead);
    PrefetchRowAhead(v_base, off, p, n, d, ahead);
    PrefetchRowAhead(k_base, off, p + 1, n, d, ahead);
    PrefetchRowAhead(v_base, off, p + 1, n, d, ahead);
    __m128 s0, s1;
    ScorePair<kHeads, kD8>(qh, k_base + off[p], k_base + off[p + 1], d8, sc, s0, s1);
    _mm_storeu_ps(e + 4 * p, s0);
    _mm_storeu_ps(e + 4 * p + 4, s1);
    mx = _mm_max_ps(mx, _mm_max_ps(s0, s1));
  }
  if (p < n) {
    __m128 s0, s1;
    ScorePair<kHeads, kD8>(qh, k_base + off[p], k_base + off[p], d8, sc, s0, s1);
    _mm_storeu_ps(e + 4 * p, s0);
    mx = _mm_max_ps(mx, s0);
  }
  // Softmax numerators in place (4 heads per key, exp as the portable kernels'), denominators in
  // double per head, keys in order.
  const __m256 mv = _mm256_set_m128(mx, mx);
  int64_t i = 0;
  for (; i + 8 <= 4 * n; i += 8) _mm256_storeu_ps(e + i, _mm256_sub_ps(_mm256_loadu_ps(e + i), mv));
  if (i < 4 * n) _mm_storeu_ps(e + i, _mm_sub_ps(_mm_loadu_ps(e + i), mx));
  simd::Exp(e, 4 * n, e);
  double denom[4] = {0, 0, 0, 0};
  for (int64_t j = 0; j < n; ++j)
#pragma GCC unroll 4
    for (int h = 0; h < 4; ++h) denom[h] += e[4 * j + h];
  float inv[4];
  for (int h = 0; h < 4; ++h) inv[h] = static_cast<float>(1.0 / denom[h]);
  // Weighted sum of V rows, 16 output elements of every head per pass over the keys.
  int64_t c = 0;
  for (; c + 16 <= d; c += 16) WeightedSumBlock<kHeads, 2>(v_base, off, e, n, c, inv, oh);
  if (c < d) WeightedSumBlock<kHeads, 1>(v_base, off, e, n, c, inv, oh);
}

template <int kD8, class T>
void GroupOfHeads(int heads, const float* q, int64_t q_stride, const T* k_base, const T* v_base,
                  const int64_t* off, int64_t n, int64_t d, float scale, float* e, float* out,
                  int64_t out_stride) {
  switch (heads) {
    case 1:
      return Group<1, kD8>(q, q_stride, k_base, v_base, off, n, d, scale, e, out, out_stride);
    case 2:
      return Group<2, kD8>(q, q_stride, k_base, v_base, off, n, d, scale, e, out, out_stride);
    case 3:
      return Group<3, kD8>(q, q_stride, k_base, v_base, off, n, d, scale, e, out, out_stride);
    default:
      return Group<4, kD8>(q, q_stride, k_base, v_base, off, n, d, scale, e, out, out_stride);
  }
}

template <class T>
void AttentionGroupImpl(const float* q, int64_t q_stride, int heads, const T* k_base,
                        const T* v_base, const int64_t* row_off, int64_t n_keys, int64_t d,
                        float scale, float* scratch, float* out, int64_t out_stride) {
  XI_CHECK(heads >= 1 && heads <= 4 && n_keys >= 1 && d > 0 && d % 8 == 0);
  switch (d) {
    case 32:
      return GroupOfHeads<4>(heads, q, q_stride, k_base, v_base, row_off, n_keys, d, scale, scratch,
                             out, out_stride);
    case 64:
      return GroupOfHeads<8>(heads, q, q_stride, k_base, v_base, row_off, n_keys, d, scale, scratch,
                             out, out_stride);
    case 128:
      return GroupOfHeads<16>(heads, q, q_stride, k_base, v_base, row_off, n_keys, d, scale,
                              scratch, out, out_stride);
    default:
      return GroupOfHeads<0>(heads, q, q_stride, k_base, v_base, row_off, n_keys, d, scale, scratch,
                             out, out_stride);
  }
}

}  // namespace

bool AttentionGroupSupports(int64_t d) { return d > 0 && d % 8 == 0; }

void AttentionGroup(const float* q, int64_t q_stride, int heads, const float* k_base,
                    const float* v_base, const int64_t* row_off, int64_t n_keys, int64_t d,
                    float scale, float* scratch, float* out, int64_t out_stride) {
  AttentionGroupImpl(q, q_stride, heads, k_base, v_base, row_off, n_keys, d, scale, scratch, out,
                     out_stride);
}
void AttentionGroup(const float* q, int64_t q_stride, int heads, const uint16_t* k_base,
                    const uint16_t* v_base, const int64_t* row_off, int64_t n_keys, int64_t d,
                    float scale, float* scratch, float* out, int64_t out_stride) {
  AttentionGroupImpl(q, q_stride, heads, k_base, v_base, row_off, n_keys, d, scale, scratch, out,
                     out_stride);
}

}  // namespace xinfer::cpu::avx2

#pragma GCC pop_options

#endif  // defined(__x86_64__)
