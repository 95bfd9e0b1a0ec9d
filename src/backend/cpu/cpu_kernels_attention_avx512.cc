// Paged attention kernels (AVX-512), compiled for that ISA with `#pragma GCC target` like
// cpu_kernels_avx512.cc. FastCpuOps::PagedAttention owns the threading: one call here is one
// query row against one KV head's keys, in position order.
//
// Batch invariance: a head's scores, softmax and weighted sum depend only on its query, the keys
// and d, never on the other heads of the call or on the batch: reductions go through
// ReduceAdd4, which sums each lane group in one fixed tree.
#if defined(__x86_64__)  // x86 only; cpu_kernels_avx512_absent.cc elsewhere

#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "backend/cpu/cpu_kernels.h"
#include "base/check.h"

// GCC 12's AVX-512 headers build results from _mm256_undefined_*(); see cpu_kernels_avx512.cc.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma,f16c,bmi2")

#include "backend/cpu/tile_avx512.h"

namespace xinfer::cpu::avx512 {
namespace {

// 16 cache elements widened to F32: F32 as is, BF16 bits shifted into the high half (exact).
inline __m512 LoadKv(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 LoadKv(const uint16_t* p) {
  return WidenBf16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Softmax-weighted sum of V rows with the output kept in D16 registers (D16 = d / 16).
template <int D16, class T>
void WeightedSumFixed(const T* v_base, const int64_t* off, const float* e, int64_t n,
                      float inv_denom, float* out) {
  constexpr int64_t ahead = KvPrefetchKeys<T>(16 * D16);
  __m512 o[D16];
#pragma GCC unroll 16
  for (int c = 0; c < D16; ++c) o[c] = _mm512_setzero_ps();
  PrefetchFirstRows(v_base, off, n, 16 * D16, ahead);
  for (int64_t p = 0; p < n; ++p) {
    PrefetchRowAhead(v_base, off, p, n, 16 * D16, ahead);
    const __m512 wp = _mm512_set1_ps(e[p]);
    const T* vr = v_base + off[p];
#pragma GCC unroll 16
    for (int c = 0; c < D16; ++c) o[c] = _mm512_fmadd_ps(wp, LoadKv(vr + 16 * c), o[c]);
  }
  const __m512 s = _mm512_set1_ps(inv_denom);
#pragma GCC unroll 16
  for (int c = 0; c < D16; ++c) _mm512_storeu_ps(out + 16 * c, _mm512_mul_ps(o[c], s));
}

template <class T>
void WeightedSumAny(const T* v_base, const int64_t* off, const float* e, int64_t n, int64_t d,
                    float inv_denom, float* out) {
  const int64_t ahead = KvPrefetchKeys<T>(d);
  PrefetchFirstRows(v_base, off, n, d, ahead);
  for (int64_t c = 0; c < d; c += 16) {
    __m512 o = _mm512_setzero_ps();
    for (int64_t p = 0; p < n; ++p) {
      if (c == 0) PrefetchRowAhead(v_base, off, p, n, d, ahead);
      o = _mm512_fmadd_ps(_mm512_set1_ps(e[p]), LoadKv(v_base + off[p] + c), o);
    }
    _mm512_storeu_ps(out + c, _mm512_mul_ps(o, _mm512_set1_ps(inv_denom)));
  }
}

// q . k for D16 x 16 elements, one 16-lane accumulator in element order.
template <int D16, class T>
inline __m512 DotFixed(const __m512 (&qv)[D16], const T* kr) {
  __m512 acc = _mm512_mul_ps(qv[0], LoadKv(kr));
#pragma GCC unroll 16
  for (int c = 1; c < D16; ++c) acc = _mm512_fmadd_ps(qv[c], LoadKv(kr + 16 * c), acc);
  return acc;
}

// Scores of 4 keys at a time: ReduceAdd4 sums each key's accumulator in the same tree as a
// separate reduction would, so a score does not depend on its neighbours (or on n).
template <int D16, class T>
float ScoresFixed(const float* q, const T* k_base, const int64_t* off, int64_t n, float scale,
                  float* scores) {
  constexpr int64_t ahead = KvPrefetchKeys<T>(16 * D16);
  __m512 qv[D16];
#pragma GCC unroll 16
  for (int c = 0; c < D16; ++c) qv[c] = _mm512_loadu_ps(q + 16 * c);
  const __m128 sc = _mm_set1_ps(scale);
  __m128 mx = _mm_set1_ps(-INFINITY);
  PrefetchFirstRows(k_base, off, n, 16 * D16, ahead);
  int64_t p = 0;
  for (; p + 4 <= n; p += 4) {
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) PrefetchRowAhead(k_base, off, p + j, n, 16 * D16, ahead);
    const __m128 s =
        _mm_mul_ps(ReduceAdd4(DotFixed(qv, k_base + off[p]), DotFixed(qv, k_base + off[p + 1]),
                              DotFixed(qv, k_base + off[p + 2]), DotFixed(qv, k_base + off[p + 3])),
                   sc);
    _mm_storeu_ps(scores + p, s);
    mx = _mm_max_ps(s, mx);
  }
  if (p < n) {
    const int64_t r = n - p;
    const __m512 zero = _mm512_setzero_ps();
    const __m128 s = _mm_mul_ps(
        ReduceAdd4(DotFixed(qv, k_base + off[p]), r > 1 ? DotFixed(qv, k_base + off[p + 1]) : zero,
                   r > 2 ? DotFixed(qv, k_base + off[p + 2]) : zero, zero),
        sc);
    const __mmask8 m = static_cast<__mmask8>((1u << r) - 1);
    _mm_mask_storeu_ps(scores + p, m, s);
    mx = _mm_mask_max_ps(mx, m, s, mx);
  }
  mx = _mm_max_ps(mx, _mm_permute_ps(mx, 0x4E));
  mx = _mm_max_ps(mx, _mm_permute_ps(mx, 0xB1));
  return _mm_cvtss_f32(mx);
}

template <class T>
float ScoresAny(const float* q, const T* k_base, const int64_t* off, int64_t n, int64_t d,
                float scale, float* scores) {
  const int64_t ahead = KvPrefetchKeys<T>(d);
  float mx = -INFINITY;
  PrefetchFirstRows(k_base, off, n, d, ahead);
  for (int64_t p = 0; p < n; ++p) {
    PrefetchRowAhead(k_base, off, p, n, d, ahead);
    const T* kr = k_base + off[p];
    __m512 acc = _mm512_mul_ps(_mm512_loadu_ps(q), LoadKv(kr));
    for (int64_t c = 16; c < d; c += 16)
      acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + c), LoadKv(kr + c), acc);
    const float s = _mm512_reduce_add_ps(acc) * scale;
    scores[p] = s;
    mx = s > mx ? s : mx;
  }
  return mx;
}

// Up to MaxHeads(D16) query heads sharing one KV head (GQA), d = 16 * D16: each K and V row is
// loaded once for all of them. e: scratch of 4 * (n rounded up to 4) floats, key p's 4 heads at
// 4p. At d = 128 two heads (their queries, a K row and the accumulators fill the registers).
template <int D16>
constexpr int MaxHeads() {
  return D16 <= 4 ? 4 : 2;
}

template <int D16, class T>
void AttentionGroupFixed(const float* q, int64_t q_stride, int heads, const T* k_base,
                         const T* v_base, const int64_t* off, int64_t n, float scale, float* e,
                         float* out, int64_t out_stride) {
  constexpr int64_t ahead = KvPrefetchKeys<T>(16 * D16);
  constexpr int kH = MaxHeads<D16>();
  const __m512 zero = _mm512_setzero_ps();
  __m512 qv[kH][D16];
#pragma GCC unroll 4
  for (int h = 0; h < kH; ++h)
#pragma GCC unroll 8
    for (int c = 0; c < D16; ++c)
      qv[h][c] = h < heads ? _mm512_loadu_ps(q + h * q_stride + 16 * c) : zero;
  // Scores: lane h of key p's vector is head h's (scaled) q . k.
  PrefetchFirstRows(k_base, off, n, 16 * D16, ahead);
  auto dot_key = [&](int64_t p, __m512* acc) {
    PrefetchRowAhead(k_base, off, p, n, 16 * D16, ahead);
    const T* kr = k_base + off[p];
    __m512 kv[D16];
#pragma GCC unroll 8
    for (int c = 0; c < D16; ++c) kv[c] = LoadKv(kr + 16 * c);
#pragma GCC unroll 4
    for (int h = 0; h < kH; ++h) {
      acc[h] = _mm512_mul_ps(qv[h][0], kv[0]);
#pragma GCC unroll 8
      for (int c = 1; c < D16; ++c) acc[h] = _mm512_fmadd_ps(qv[h][c], kv[c], acc[h]);
    }
  };
  const __m128 mx = GroupScores<kH>(n, scale, e, dot_key);
  // Softmax numerators in place, 4 keys x 4 heads per vector; denominators per head.
  const __m512 mv = _mm512_broadcast_f32x4(mx);
  __m512 sum = zero;
  for (int64_t p = 0; p < n; p += 4) {
    const __mmask16 m = n - p >= 4 ? 0xFFFF : TailMask16(4 * (n - p));
    const __m512 ex =
        _mm512_maskz_mov_ps(m, Exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, e + 4 * p), mv)));
    _mm512_mask_storeu_ps(e + 4 * p, m, ex);
    sum = _mm512_add_ps(sum, ex);
  }
  const __m128 denom = SumBlocks4(sum);
  alignas(16) float inv[4];
  _mm_store_ps(inv, _mm_div_ps(_mm_set1_ps(1.f), denom));
  // Weighted sum of V rows, each loaded once for the heads.
  __m512 o[kH][D16];
#pragma GCC unroll 4
  for (int h = 0; h < kH; ++h)
#pragma GCC unroll 8
    for (int c = 0; c < D16; ++c) o[h][c] = zero;
  PrefetchFirstRows(v_base, off, n, 16 * D16, ahead);
  for (int64_t p = 0; p < n; ++p) {
    PrefetchRowAhead(v_base, off, p, n, 16 * D16, ahead);
    const T* vr = v_base + off[p];
    __m512 vv[D16];
#pragma GCC unroll 8
    for (int c = 0; c < D16; ++c) vv[c] = LoadKv(vr + 16 * c);
#pragma GCC unroll 4
    for (int h = 0; h < kH; ++h) {
      const __m512 wp = _mm512_set1_ps(e[4 * p + h]);
#pragma GCC unroll 8
      for (int c = 0; c < D16; ++c) o[h][c] = _mm512_fmadd_ps(wp, vv[c], o[h][c]);
    }
  }
#pragma GCC unroll 4
  for (int h = 0; h < kH; ++h) {
    if (h >= heads) break;
    const __m512 iv = _mm512_set1_ps(inv[h]);
#pragma GCC unroll 8
    for (int c = 0; c < D16; ++c)
      _mm512_storeu_ps(out + h * out_stride + 16 * c, _mm512_mul_ps(o[h][c], iv));
  }
}

template <class T>
void AttentionRowImpl(const float* q, const T* k_base, const T* v_base, const int64_t* row_off,
                      int64_t n_keys, int64_t d, float scale, float* scores, float* out) {
  float mx;
  switch (d) {
    case 32:
      mx = ScoresFixed<2>(q, k_base, row_off, n_keys, scale, scores);
      break;
    case 64:
      mx = ScoresFixed<4>(q, k_base, row_off, n_keys, scale, scores);
      break;
    case 128:
      mx = ScoresFixed<8>(q, k_base, row_off, n_keys, scale, scores);
      break;
    default:
      mx = ScoresAny(q, k_base, row_off, n_keys, d, scale, scores);
  }
  // Softmax numerators in place; the denominator summed in 16 lanes in key order.
  const __m512 mv = _mm512_set1_ps(mx);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t p = 0; p < n_keys; p += 16) {
    const __mmask16 m = n_keys - p >= 16 ? 0xFFFF : TailMask16(n_keys - p);
    const __m512 e =
        _mm512_maskz_mov_ps(m, Exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, scores + p), mv)));
    _mm512_mask_storeu_ps(scores + p, m, e);
    sum = _mm512_add_ps(sum, e);
  }
  const float inv = 1.f / _mm512_reduce_add_ps(sum);
  switch (d) {
    case 32:
      return WeightedSumFixed<2>(v_base, row_off, scores, n_keys, inv, out);
    case 64:
      return WeightedSumFixed<4>(v_base, row_off, scores, n_keys, inv, out);
    case 128:
      return WeightedSumFixed<8>(v_base, row_off, scores, n_keys, inv, out);
    default:
      return WeightedSumAny(v_base, row_off, scores, n_keys, d, inv, out);
  }
}

template <class T>
void AttentionGroupImpl(const float* q, int64_t q_stride, int heads, const T* k_base,
                        const T* v_base, const int64_t* row_off, int64_t n_keys, int64_t d,
                        float scale, float* scratch, float* out, int64_t out_stride) {
  XI_CHECK_MSG(
      AttentionGroupSupports(d) && heads >= 1 && heads <= AttentionGroupMaxHeads(d) && n_keys >= 1,
      "AttentionGroup: unsupported head dim, head count or no keys");
  if (d == 32)
    return AttentionGroupFixed<2>(q, q_stride, heads, k_base, v_base, row_off, n_keys, scale,
                                  scratch, out, out_stride);
  if (d == 64)
    return AttentionGroupFixed<4>(q, q_stride, heads, k_base, v_base, row_off, n_keys, scale,
                                  scratch, out, out_stride);
  AttentionGroupFixed<8>(q, q_stride, heads, k_base, v_base, row_off, n_keys, scale, scratch, out,
                         out_stride);
}

}  // namespace

void AttentionRow(const float* q, const float* k_base, const float* v_base, const int64_t* row_off,
                  int64_t n_keys, int64_t d, float scale, float* scores, float* out) {
  AttentionRowImpl(q, k_base, v_base, row_off, n_keys, d, scale, scores, out);
}
void AttentionRow(const float* q, const uint16_t* k_base, const uint16_t* v_base,
                  const int64_t* row_off, int64_t n_keys, int64_t d, float scale, float* scores,
                  float* out) {
  AttentionRowImpl(q, k_base, v_base, row_off, n_keys, d, scale, scores, out);
}

bool AttentionGroupSupports(int64_t d) { return d == 32 || d == 64 || d == 128; }

int AttentionGroupMaxHeads(int64_t d) { return d == 128 ? MaxHeads<8>() : MaxHeads<4>(); }

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

}  // namespace xinfer::cpu::avx512

#pragma GCC pop_options

#endif  // defined(__x86_64__)
