// Paged attention over a BF16 K/V cache with BF16 products (vdpbf16ps), for `--dtype bfloat16`
// on AVX512-BF16 CPUs: the query, split into two BF16 parts, meets each K row's BF16 pairs as
// they lie in the cache (no widening), and the softmax numerators rounded to BF16 meet two V rows
// at a time interleaved into pairs (BF16 operands and F32 sums, as vLLM's BF16 attention for the
// weighted sum). The F32 kernels (cpu_kernels_attention_avx512.cc) widen every cached element
// and run one FMA per element and head in both halves; here the weighted sum takes half the
// multiply instructions and the scores the same number without the widening (kernel_bench
// BM_PagedAttention bf16:2 vs 1: 16 rows of 256 keys from cache -31 %, a 512-token prefill's
// attention -29 %; docs/performance.md, session 28). FastCpuOps::PagedAttention owns the threading.
//
// Arithmetic of head h of a call (H heads sharing a KV head), d = 32 * D32:
//   qh = bf16(q_h), ql = bf16(q_h - qh) (round to nearest even);
//   s_p = ReduceAdd4's sum of head h's accumulator (per 32 elements c: vdpbf16ps with qh_c, then
//         ql_c, against K_p's pairs, one chain) * scale — each lane of ReduceAdd4 is its own
//         accumulator's fixed tree, so two keys share one reduction when H <= 2;
//   e_p = Exp512(s_p - max_p s_p); eb_p = bf16(e_p);
//   o = for each pair (2j, 2j + 1) of keys: vdpbf16ps(o, (eb_2j, eb_2j+1), (V_2j, V_2j+1))
//       (a missing last key of an odd count: weight 0 and a zero row);
//   out = o * (1 / sum_p f32(eb_p)) (normalized by the rounded weights, so a constant V comes
//   back as itself).
// Each step is per lane or per ReduceAdd4 lane, so a head's result depends on its query, the keys
// and d only, never on the other heads of the call, the batch or the threads.
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
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma")

#include "backend/cpu/tile_avx512.h"

namespace xinfer::cpu::avx512 {
namespace {

// 32 elements of a query row rounded to BF16, in element order (cvtne2ps puts its second
// operand in the low half).
inline __m512bh RoundToBf16(const float* x) {
  return _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + 16), _mm512_loadu_ps(x));
}

template <int H, int D32>
void AttentionGroupBf16Fixed(const float* q, int64_t q_stride, const uint16_t* k_base,
                             const uint16_t* v_base, const int64_t* off, int64_t n, float scale,
                             float* scratch, float* out, int64_t out_stride) {
  constexpr int64_t ahead = KvPrefetchKeys<uint16_t>(32 * D32);
  static_assert(H >= 1 && H <= 4 && H * 2 * D32 <= 16, "accumulators must fit the registers");
  const __m512 zero = _mm512_setzero_ps();
  // The query as two BF16 vectors per 32 elements, hi = bf16(q) and lo = bf16(q - hi): hi + lo
  // is q to ~2^-17, so the scores keep nearly F32 precision (the rounded query alone moved the
  // tiny Qwen3's logits by 0.042 from the reference where the F32 kernels' are 0.032 off; with
  // hi + lo, 0.033).
  __m512bh qh[H][D32], ql[H][D32];
#pragma GCC unroll 4
  for (int h = 0; h < H; ++h)
#pragma GCC unroll 4
    for (int c = 0; c < D32; ++c) {
      const float* x = q + h * q_stride + 32 * c;
      qh[h][c] = RoundToBf16(x);
      const __m512i hi = reinterpret_cast<const __m512i&>(qh[h][c]);
      ql[h][c] = _mm512_cvtne2ps_pbh(
          _mm512_sub_ps(_mm512_loadu_ps(x + 16), WidenBf16(_mm512_extracti64x4_epi64(hi, 1))),
          _mm512_sub_ps(_mm512_loadu_ps(x), WidenBf16(_mm512_castsi512_si256(hi))));
    }

  // Scores: key p's 4 lanes at e + 4p (lane h for head h; lanes >= H zero).
  float* e = scratch;
  PrefetchFirstRows(k_base, off, n, 32 * D32, ahead);
  auto dot_key = [&](int64_t p, __m512* acc) {
    PrefetchRowAhead(k_base, off, p, n, 32 * D32, ahead);
    const uint16_t* kr = k_base + off[p];
    __m512bh kv[D32];
#pragma GCC unroll 4
    for (int c = 0; c < D32; ++c) kv[c] = AsBh(_mm512_loadu_si512(kr + 32 * c));
#pragma GCC unroll 4
    for (int h = 0; h < H; ++h) {
#pragma GCC unroll 4
      for (int c = 0; c < D32; ++c) {
        acc[h] = _mm512_dpbf16_ps(acc[h], qh[h][c], kv[c]);
        acc[h] = _mm512_dpbf16_ps(acc[h], ql[h][c], kv[c]);
      }
    }
  };
  const __m128 mx = GroupScores<H>(n, scale, e, dot_key);

  // Softmax numerators, 4 keys x 4 heads per vector, rounded to BF16 and stored as the pairs
  // the weighted sum broadcasts: dword 4j + h of ep = (eb_2j, eb_2j+1) of head h. A 128-bit
  // lane of the rounded vector holds keys 2j and 2j + 1 (4 words each): interleaving its two
  // halves' words gives those pairs in head order. Denominators sum the rounded weights.
  uint32_t* ep = reinterpret_cast<uint32_t*>(e + 4 * ((n + 3) / 4 * 4));
  const __m512 mv = _mm512_broadcast_f32x4(mx);
  const __m256i pair_words = _mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15,
                                              0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15);
  __m512 sum = zero;
  for (int64_t p = 0; p < n; p += 4) {
    const __mmask16 m = n - p >= 4 ? 0xFFFF : TailMask16(4 * (n - p));
    const __m512 ex =
        _mm512_maskz_mov_ps(m, Exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, e + 4 * p), mv)));
    const __m256bh eb = _mm512_cvtneps_pbh(ex);
    const __m256i ebi = reinterpret_cast<const __m256i&>(eb);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(ep + 2 * p),
                        _mm256_shuffle_epi8(ebi, pair_words));
    // The rounded weights back in F32 (exact: a BF16 is the high half of its F32).
    sum = _mm512_add_ps(sum, WidenBf16(ebi));
  }
  const __m128 denom = SumBlocks4(sum);
  alignas(16) float inv[4];
  _mm_store_ps(inv, _mm_div_ps(_mm_set1_ps(1.f), denom));

  // Weighted sum, two keys per step: V rows a and b interleaved word by word. unpacklo / unpackhi
  // work per 128-bit lane, so accumulator 2c holds dims 32c + {0-3, 8-11, 16-19, 24-27} and
  // 2c + 1 dims 32c + {4-7, 12-15, 20-23, 28-31}; the stores put them back in order.
  __m512 o[H][2 * D32];
#pragma GCC unroll 4
  for (int h = 0; h < H; ++h)
#pragma GCC unroll 8
    for (int c = 0; c < 2 * D32; ++c) o[h][c] = zero;
  auto step = [&](int64_t j, const uint16_t* va, const uint16_t* vb) {
#pragma GCC unroll 4
    for (int c = 0; c < D32; ++c) {
      const __m512i a = _mm512_loadu_si512(va + 32 * c);
      const __m512i b = vb != nullptr ? _mm512_loadu_si512(vb + 32 * c) : _mm512_setzero_si512();
      const __m512bh lo = AsBh(_mm512_unpacklo_epi16(a, b));
      const __m512bh hi = AsBh(_mm512_unpackhi_epi16(a, b));
#pragma GCC unroll 4
      for (int h = 0; h < H; ++h) {
        const __m512bh w = AsBh(_mm512_set1_epi32(static_cast<int>(ep[4 * j + h])));
        o[h][2 * c] = _mm512_dpbf16_ps(o[h][2 * c], w, lo);
        o[h][2 * c + 1] = _mm512_dpbf16_ps(o[h][2 * c + 1], w, hi);
      }
    }
  };
  const int64_t pairs = n / 2;
  PrefetchFirstRows(v_base, off, n, 32 * D32, ahead);
  for (int64_t j = 0; j < pairs; ++j) {
    PrefetchRowAhead(v_base, off, 2 * j, n, 32 * D32, ahead);
    PrefetchRowAhead(v_base, off, 2 * j + 1, n, 32 * D32, ahead);
    step(j, v_base + off[2 * j], v_base + off[2 * j + 1]);
  }
  if (n % 2 != 0) step(pairs, v_base + off[n - 1], nullptr);
  const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
  const __m512i second =
      _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
#pragma GCC unroll 4
  for (int h = 0; h < H; ++h) {
    const __m512 iv = _mm512_set1_ps(inv[h]);
#pragma GCC unroll 4
    for (int c = 0; c < D32; ++c) {
      float* dst = out + h * out_stride + 32 * c;
      _mm512_storeu_ps(
          dst, _mm512_mul_ps(_mm512_permutex2var_ps(o[h][2 * c], first, o[h][2 * c + 1]), iv));
      _mm512_storeu_ps(
          dst + 16,
          _mm512_mul_ps(_mm512_permutex2var_ps(o[h][2 * c], second, o[h][2 * c + 1]), iv));
    }
  }
}

using GroupBf16Kernel = void (*)(const float*, int64_t, const uint16_t*, const uint16_t*,
                                 const int64_t*, int64_t, float, float*, float*, int64_t);

template <int D32>
GroupBf16Kernel KernelFor(int heads) {
  if constexpr (D32 == 4) {
    return heads == 1 ? AttentionGroupBf16Fixed<1, 4> : AttentionGroupBf16Fixed<2, 4>;
  } else {
    switch (heads) {
      case 1:
        return AttentionGroupBf16Fixed<1, D32>;
      case 2:
        return AttentionGroupBf16Fixed<2, D32>;
      case 3:
        return AttentionGroupBf16Fixed<3, D32>;
      default:
        return AttentionGroupBf16Fixed<4, D32>;
    }
  }
}

}  // namespace

bool AttentionGroupBf16Supports(int64_t d) { return d == 32 || d == 64 || d == 128; }

int AttentionGroupBf16MaxHeads(int64_t d) { return d == 128 ? 2 : 4; }

void AttentionGroupBf16(const float* q, int64_t q_stride, int heads, const uint16_t* k_base,
                        const uint16_t* v_base, const int64_t* row_off, int64_t n_keys, int64_t d,
                        float scale, float* scratch, float* out, int64_t out_stride) {
  XI_CHECK_MSG(AttentionGroupBf16Supports(d) && heads >= 1 &&
                   heads <= AttentionGroupBf16MaxHeads(d) && n_keys >= 1,
               "AttentionGroupBf16: unsupported head dim, head count or no keys");
  const GroupBf16Kernel kernel = d == 32   ? KernelFor<1>(heads)
                                 : d == 64 ? KernelFor<2>(heads)
                                           : KernelFor<4>(heads);
  kernel(q, q_stride, k_base, v_base, row_off, n_keys, scale, scratch, out, out_stride);
}

}  // namespace xinfer::cpu::avx512

#pragma GCC pop_options

#endif  // defined(__x86_64__)
