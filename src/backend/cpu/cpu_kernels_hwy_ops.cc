// Portable SIMD kernels besides Linear (cpu_kernels_hwy.cc): elementwise ops, RMSNorm, paged
// attention for one query row, and the probes `doctor` measures the machine with. Written once
// with Google Highway, compiled for every target it knows and chosen at run time, like Linear.
//
// Elementwise ops run their tails through the same vector code, so an element's result does not
// depend on where a thread's range starts (batch invariance, cpu_kernels.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/cpu/cpu_kernels.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/cpu_kernels_hwy_ops.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// foreach_target.h must come first.
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace xinfer::cpu {
namespace HWY_NAMESPACE {
namespace {

namespace hn = hwy::HWY_NAMESPACE;
using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);

// Runs `op` over n elements in full vectors; the tail goes through zero-padded buffers and the
// same vector code, so each element's result is independent of where the range starts.
#define XI_HWY_ELEMENTWISE(N_, IN_A, IN_B, OUT, EXPR)                        \
  {                                                                          \
    const DF df;                                                             \
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));               \
    int64_t i = 0;                                                           \
    for (; i + lanes <= (N_); i += lanes) {                                  \
      const VF va = hn::LoadU(df, (IN_A) + i);                               \
      const VF vb = hn::LoadU(df, (IN_B) + i);                               \
      (void)vb;                                                              \
      hn::StoreU(EXPR, df, (OUT) + i);                                       \
    }                                                                        \
    if (i < (N_)) {                                                          \
      HWY_ALIGN float ta[kMaxLanes] = {}, tb[kMaxLanes] = {}, to[kMaxLanes]; \
      const int64_t rem = (N_)-i;                                            \
      std::memcpy(ta, (IN_A) + i, rem * sizeof(float));                      \
      std::memcpy(tb, (IN_B) + i, rem * sizeof(float));                      \
      const VF va = hn::Load(df, ta);                                        \
      const VF vb = hn::Load(df, tb);                                        \
      (void)vb;                                                              \
      hn::Store(EXPR, df, to);                                               \
      std::memcpy((OUT) + i, to, rem * sizeof(float));                       \
    }                                                                        \
  }

// Highway's Exp is valid up to x = 104; the clamp makes every larger x give +inf too (the float
// result overflows above 88.72), which SiLU needs for very negative gates.
HWY_INLINE VF ExpClamped(DF df, VF x) { return hn::Exp(df, hn::Min(x, hn::Set(df, 100.f))); }

// A vector of cache elements widened to F32: F32 as is, BF16 exactly (`--kv-cache-dtype`).
HWY_INLINE VF LoadKv(DF df, const float* p) { return hn::LoadU(df, p); }
HWY_INLINE VF LoadKv(DF df, const hwy::bfloat16_t* p) {
  const hn::Rebind<hwy::bfloat16_t, DF> dbf;
  return hn::PromoteTo(df, hn::LoadU(dbf, p));
}

}  // namespace

void SiluMul(const float* g, const float* u, int64_t n, float* out) {
  XI_HWY_ELEMENTWISE(
      n, g, u, out,
      hn::Mul(hn::Div(va, hn::Add(hn::Set(df, 1.f), ExpClamped(df, hn::Neg(va)))), vb))
}

void Add(const float* a, const float* b, int64_t n, float* out) {
  XI_HWY_ELEMENTWISE(n, a, b, out, hn::Add(va, vb))
}

void Exp(const float* x, int64_t n, float* out) {
  XI_HWY_ELEMENTWISE(n, x, x, out, ExpClamped(df, va))
}

void RmsNormRow(const float* x, const float* w, int64_t n, float eps, float* out) {
  // Sum of squares in double, as the reference does (a few hundred ns per row; not worth SIMD).
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float inv = static_cast<float>(1.0 / std::sqrt(ss / n + eps));
  XI_HWY_ELEMENTWISE(n, x, w, out, hn::Mul(hn::Mul(va, hn::Set(df, inv)), vb))
}
#undef XI_HWY_ELEMENTWISE

int64_t F32Lanes() { return static_cast<int64_t>(hn::Lanes(DF())); }

int64_t Target() { return HWY_TARGET; }

// q . k for `keys` keys (1, 4 or 8) whose rows start at k[0..keys): one accumulator per key
// over d in element order, then SumOfLanes, so a key's score is the same whichever group it is
// computed in. Eight keys give the FMA latency eight independent chains.
template <int kKeys, class T>
HWY_INLINE void ScoreKeys(const float* q, const T* const* k, int64_t d, float scale,
                          float* scores) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  VF s0 = hn::Zero(df), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
  for (int64_t c = 0; c < d; c += lanes) {
    const VF qv = hn::LoadU(df, q + c);
    s0 = hn::MulAdd(qv, LoadKv(df, k[0] + c), s0);
    if constexpr (kKeys >= 4) {
      s1 = hn::MulAdd(qv, LoadKv(df, k[1] + c), s1);
      s2 = hn::MulAdd(qv, LoadKv(df, k[2] + c), s2);
      s3 = hn::MulAdd(qv, LoadKv(df, k[3] + c), s3);
    }
    if constexpr (kKeys == 8) {
      s4 = hn::MulAdd(qv, LoadKv(df, k[4] + c), s4);
      s5 = hn::MulAdd(qv, LoadKv(df, k[5] + c), s5);
      s6 = hn::MulAdd(qv, LoadKv(df, k[6] + c), s6);
      s7 = hn::MulAdd(qv, LoadKv(df, k[7] + c), s7);
    }
  }
  scores[0] = hn::GetLane(hn::SumOfLanes(df, s0)) * scale;
  if constexpr (kKeys >= 4) {
    scores[1] = hn::GetLane(hn::SumOfLanes(df, s1)) * scale;
    scores[2] = hn::GetLane(hn::SumOfLanes(df, s2)) * scale;
    scores[3] = hn::GetLane(hn::SumOfLanes(df, s3)) * scale;
  }
  if constexpr (kKeys == 8) {
    scores[4] = hn::GetLane(hn::SumOfLanes(df, s4)) * scale;
    scores[5] = hn::GetLane(hn::SumOfLanes(df, s5)) * scale;
    scores[6] = hn::GetLane(hn::SumOfLanes(df, s6)) * scale;
    scores[7] = hn::GetLane(hn::SumOfLanes(df, s7)) * scale;
  }
}

// out[c .. c + kVecs lanes) = sum over keys j of w[j] * v_j[c ..], one fma per key in key order
// from 0, the kVecs accumulators in registers (in memory, each key's FMA waited for the previous
// key's store: ~40 % of a prefill's attention on Zen 3). kVecs is 8, 4, 2 or 1.
template <int kVecs, class T>
HWY_INLINE void WeightedSumBlock(const T* v_base, const int64_t* row_off, const float* w,
                                 int64_t n_keys, int64_t c, float* out) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  VF o0 = hn::Zero(df), o1 = o0, o2 = o0, o3 = o0, o4 = o0, o5 = o0, o6 = o0, o7 = o0;
  for (int64_t j = 0; j < n_keys; ++j) {
    const VF wj = hn::Set(df, w[j]);
    const T* vr = v_base + row_off[j] + c;
    o0 = hn::MulAdd(wj, LoadKv(df, vr), o0);
    if constexpr (kVecs >= 2) o1 = hn::MulAdd(wj, LoadKv(df, vr + lanes), o1);
    if constexpr (kVecs >= 4) {
      o2 = hn::MulAdd(wj, LoadKv(df, vr + 2 * lanes), o2);
      o3 = hn::MulAdd(wj, LoadKv(df, vr + 3 * lanes), o3);
    }
    if constexpr (kVecs == 8) {
      o4 = hn::MulAdd(wj, LoadKv(df, vr + 4 * lanes), o4);
      o5 = hn::MulAdd(wj, LoadKv(df, vr + 5 * lanes), o5);
      o6 = hn::MulAdd(wj, LoadKv(df, vr + 6 * lanes), o6);
      o7 = hn::MulAdd(wj, LoadKv(df, vr + 7 * lanes), o7);
    }
  }
  hn::StoreU(o0, df, out + c);
  if constexpr (kVecs >= 2) hn::StoreU(o1, df, out + c + lanes);
  if constexpr (kVecs >= 4) {
    hn::StoreU(o2, df, out + c + 2 * lanes);
    hn::StoreU(o3, df, out + c + 3 * lanes);
  }
  if constexpr (kVecs == 8) {
    hn::StoreU(o4, df, out + c + 4 * lanes);
    hn::StoreU(o5, df, out + c + 5 * lanes);
    hn::StoreU(o6, df, out + c + 6 * lanes);
    hn::StoreU(o7, df, out + c + 7 * lanes);
  }
}

template <class T>
void AttentionRowT(const float* q, const T* k_base, const T* v_base, const int64_t* row_off,
                   int64_t n_keys, int64_t d, float scale, float* scores, float* out) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  constexpr int64_t ahead = kKvPrefetchKeys;  // not re-measured with KvPrefetchKeys here
  // Scores, eight keys at a time (then four, then one); each key's sequence is the same as alone.
  PrefetchFirstRows(k_base, row_off, n_keys, d, ahead);
  PrefetchFirstRows(v_base, row_off, n_keys, d, ahead);
  const T* k[8];
  int64_t p = 0;
  for (; p + 8 <= n_keys; p += 8) {
    for (int j = 0; j < 8; ++j) {
      PrefetchRowAhead(k_base, row_off, p + j, n_keys, d, ahead);
      PrefetchRowAhead(v_base, row_off, p + j, n_keys, d, ahead);
      k[j] = k_base + row_off[p + j];
    }
    ScoreKeys<8>(q, k, d, scale, scores + p);
  }
  for (; p + 4 <= n_keys; p += 4) {
    for (int j = 0; j < 4; ++j) {
      PrefetchRowAhead(k_base, row_off, p + j, n_keys, d, ahead);
      PrefetchRowAhead(v_base, row_off, p + j, n_keys, d, ahead);
      k[j] = k_base + row_off[p + j];
    }
    ScoreKeys<4>(q, k, d, scale, scores + p);
  }
  for (; p < n_keys; ++p) {
    k[0] = k_base + row_off[p];
    ScoreKeys<1>(q, k, d, scale, scores + p);
  }
  // The max (exact in any order): whole vectors, then the tail.
  int64_t i = 0;
  VF vmax = hn::Set(df, -INFINITY);
  for (; i + lanes <= n_keys; i += lanes) vmax = hn::Max(vmax, hn::LoadU(df, scores + i));
  float mx = hn::GetLane(hn::MaxOfLanes(df, vmax));
  for (; i < n_keys; ++i) mx = std::max(mx, scores[i]);
  // exp(score - max), through the same vector code for the tail.
  const VF vmx = hn::Set(df, mx);
  i = 0;
  for (; i + lanes <= n_keys; i += lanes)
    hn::StoreU(hn::Exp(df, hn::Sub(hn::LoadU(df, scores + i), vmx)), df, scores + i);
  if (i < n_keys) {
    HWY_ALIGN float tail[kMaxLanes] = {};
    std::memcpy(tail, scores + i, (n_keys - i) * sizeof(float));
    hn::Store(hn::Exp(df, hn::Sub(hn::Load(df, tail), vmx)), df, tail);
    std::memcpy(scores + i, tail, (n_keys - i) * sizeof(float));
  }
  // The denominator in double, keys j = 0, 1, 2, 3 (mod 4) in four running sums (one chain of
  // dependent adds over the keys took as long as the scores' FMAs on Zen 3).
  double sum4[4] = {0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 4 <= n_keys; j += 4)
    for (int r = 0; r < 4; ++r) sum4[r] += scores[j + r];
  for (int r = 0; j < n_keys; ++j, ++r) sum4[r] += scores[j];
  const double denom = (sum4[0] + sum4[1]) + (sum4[2] + sum4[3]);
  // Weighted sum of V rows: blocks of up to 8 vectors of the output, each over all keys.
  int64_t c = 0;
  for (; c + 8 * lanes <= d; c += 8 * lanes)
    WeightedSumBlock<8>(v_base, row_off, scores, n_keys, c, out);
  if (c + 4 * lanes <= d) {
    WeightedSumBlock<4>(v_base, row_off, scores, n_keys, c, out);
    c += 4 * lanes;
  }
  if (c + 2 * lanes <= d) {
    WeightedSumBlock<2>(v_base, row_off, scores, n_keys, c, out);
    c += 2 * lanes;
  }
  if (c < d) WeightedSumBlock<1>(v_base, row_off, scores, n_keys, c, out);
  const VF inv = hn::Set(df, static_cast<float>(1.0 / denom));
  for (c = 0; c < d; c += lanes) hn::StoreU(hn::Mul(hn::LoadU(df, out + c), inv), df, out + c);
}

void AttentionRow(const float* q, const float* k_base, const float* v_base, const int64_t* row_off,
                  int64_t n_keys, int64_t d, float scale, float* scores, float* out) {
  AttentionRowT(q, k_base, v_base, row_off, n_keys, d, scale, scores, out);
}
void AttentionRowBf16(const float* q, const hwy::bfloat16_t* k_base, const hwy::bfloat16_t* v_base,
                      const int64_t* row_off, int64_t n_keys, int64_t d, float scale, float* scores,
                      float* out) {
  AttentionRowT(q, k_base, v_base, row_off, n_keys, d, scale, scores, out);
}

float ReadSum(const float* p, int64_t n) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  VF a0 = hn::Zero(df), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    a0 = hn::Add(a0, hn::LoadU(df, p + i));
    a1 = hn::Add(a1, hn::LoadU(df, p + i + lanes));
    a2 = hn::Add(a2, hn::LoadU(df, p + i + 2 * lanes));
    a3 = hn::Add(a3, hn::LoadU(df, p + i + 3 * lanes));
  }
  float s = hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i) s += p[i];
  return s;
}

float FmaLoop(int64_t iters) {
  const DF df;
  const VF a = hn::Set(df, 0.999f), b = hn::Set(df, 0.001f);
  VF c0 = hn::Set(df, 0.f), c1 = hn::Set(df, 1.f), c2 = hn::Set(df, 2.f), c3 = hn::Set(df, 3.f);
  VF c4 = hn::Set(df, 4.f), c5 = hn::Set(df, 5.f), c6 = hn::Set(df, 6.f), c7 = hn::Set(df, 7.f);
  VF c8 = hn::Set(df, 8.f), c9 = hn::Set(df, 9.f), c10 = hn::Set(df, 10.f), c11 = hn::Set(df, 11.f);
  for (int64_t i = 0; i < iters; ++i) {
    c0 = hn::MulAdd(c0, a, b);
    c1 = hn::MulAdd(c1, a, b);
    c2 = hn::MulAdd(c2, a, b);
    c3 = hn::MulAdd(c3, a, b);
    c4 = hn::MulAdd(c4, a, b);
    c5 = hn::MulAdd(c5, a, b);
    c6 = hn::MulAdd(c6, a, b);
    c7 = hn::MulAdd(c7, a, b);
    c8 = hn::MulAdd(c8, a, b);
    c9 = hn::MulAdd(c9, a, b);
    c10 = hn::MulAdd(c10, a, b);
    c11 = hn::MulAdd(c11, a, b);
  }
  const VF s = hn::Add(
      hn::Add(hn::Add(hn::Add(c0, c1), hn::Add(c2, c3)), hn::Add(hn::Add(c4, c5), hn::Add(c6, c7))),
      hn::Add(hn::Add(c8, c9), hn::Add(c10, c11)));
  return hn::GetLane(hn::SumOfLanes(df, s));
}

}  // namespace HWY_NAMESPACE
}  // namespace xinfer::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xinfer::cpu::simd {

HWY_EXPORT(SiluMul);
HWY_EXPORT(Add);
HWY_EXPORT(Exp);
HWY_EXPORT(RmsNormRow);
HWY_EXPORT(F32Lanes);
HWY_EXPORT(Target);
HWY_EXPORT(AttentionRow);
HWY_EXPORT(AttentionRowBf16);
HWY_EXPORT(ReadSum);
HWY_EXPORT(FmaLoop);

int64_t TargetBits() { return HWY_DYNAMIC_DISPATCH(Target)(); }
bool Available() { return (TargetBits() & (HWY_SCALAR | HWY_EMU128)) == 0; }
const char* TargetName() { return hwy::TargetName(TargetBits()); }
int64_t F32Lanes() { return HWY_DYNAMIC_DISPATCH(F32Lanes)(); }
void RmsNormRow(const float* x, const float* w, int64_t n, float eps, float* out) {
  HWY_DYNAMIC_DISPATCH(RmsNormRow)(x, w, n, eps, out);
}
void SiluMul(const float* g, const float* u, int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(SiluMul)(g, u, n, out);
}
void Add(const float* a, const float* b, int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(Add)(a, b, n, out);
}
void Exp(const float* x, int64_t n, float* out) { HWY_DYNAMIC_DISPATCH(Exp)(x, n, out); }
bool AttentionSupports(int64_t d) { return d % F32Lanes() == 0; }
void AttentionRow(const float* q, const float* k_base, const float* v_base, const int64_t* row_off,
                  int64_t n_keys, int64_t d, float scale, float* scores, float* out) {
  HWY_DYNAMIC_DISPATCH(AttentionRow)(q, k_base, v_base, row_off, n_keys, d, scale, scores, out);
}
void AttentionRow(const float* q, const uint16_t* k_base, const uint16_t* v_base,
                  const int64_t* row_off, int64_t n_keys, int64_t d, float scale, float* scores,
                  float* out) {
  HWY_DYNAMIC_DISPATCH(AttentionRowBf16)
  (q, reinterpret_cast<const hwy::bfloat16_t*>(k_base),
   reinterpret_cast<const hwy::bfloat16_t*>(v_base), row_off, n_keys, d, scale, scores, out);
}
float ReadSum(const float* p, int64_t n) { return HWY_DYNAMIC_DISPATCH(ReadSum)(p, n); }
float FmaLoop(int64_t iters) { return HWY_DYNAMIC_DISPATCH(FmaLoop)(iters); }

}  // namespace xinfer::cpu::simd
#endif  // HWY_ONCE
