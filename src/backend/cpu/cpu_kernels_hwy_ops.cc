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

void AttentionRow(const float* q, const float* k_base, const float* v_base, const int64_t* row_off,
                  int64_t n_keys, int64_t d, float scale, float* scores, float* out) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  // Scores, four keys at a time for independent FMA chains; each key's sequence is the same as
  // alone (one accumulator over d in element order, then SumOfLanes).
  float mx = -INFINITY;
  PrefetchFirstKvRows(k_base, v_base, row_off, n_keys, d);
  int64_t p = 0;
  for (; p + 4 <= n_keys; p += 4) {
    for (int64_t j = p; j < p + 4; ++j) PrefetchKvRowsAhead(k_base, v_base, row_off, j, n_keys, d);
    const float* k0 = k_base + row_off[p];
    const float* k1 = k_base + row_off[p + 1];
    const float* k2 = k_base + row_off[p + 2];
    const float* k3 = k_base + row_off[p + 3];
    VF s0 = hn::Zero(df), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t c = 0; c < d; c += lanes) {
      const VF qv = hn::LoadU(df, q + c);
      s0 = hn::MulAdd(qv, hn::LoadU(df, k0 + c), s0);
      s1 = hn::MulAdd(qv, hn::LoadU(df, k1 + c), s1);
      s2 = hn::MulAdd(qv, hn::LoadU(df, k2 + c), s2);
      s3 = hn::MulAdd(qv, hn::LoadU(df, k3 + c), s3);
    }
    scores[p] = hn::GetLane(hn::SumOfLanes(df, s0)) * scale;
    scores[p + 1] = hn::GetLane(hn::SumOfLanes(df, s1)) * scale;
    scores[p + 2] = hn::GetLane(hn::SumOfLanes(df, s2)) * scale;
    scores[p + 3] = hn::GetLane(hn::SumOfLanes(df, s3)) * scale;
    mx = std::max({mx, scores[p], scores[p + 1], scores[p + 2], scores[p + 3]});
  }
  for (; p < n_keys; ++p) {
    const float* kr = k_base + row_off[p];
    VF s = hn::Zero(df);
    for (int64_t c = 0; c < d; c += lanes)
      s = hn::MulAdd(hn::LoadU(df, q + c), hn::LoadU(df, kr + c), s);
    scores[p] = hn::GetLane(hn::SumOfLanes(df, s)) * scale;
    mx = std::max(mx, scores[p]);
  }
  // exp(score - max), through the same vector code for the tail.
  const VF vmx = hn::Set(df, mx);
  int64_t i = 0;
  for (; i + lanes <= n_keys; i += lanes)
    hn::StoreU(hn::Exp(df, hn::Sub(hn::LoadU(df, scores + i), vmx)), df, scores + i);
  if (i < n_keys) {
    HWY_ALIGN float tail[kMaxLanes] = {};
    std::memcpy(tail, scores + i, (n_keys - i) * sizeof(float));
    hn::Store(hn::Exp(df, hn::Sub(hn::Load(df, tail), vmx)), df, tail);
    std::memcpy(scores + i, tail, (n_keys - i) * sizeof(float));
  }
  double denom = 0;
  for (int64_t j = 0; j < n_keys; ++j) denom += scores[j];
  // Weighted sum of V rows, accumulated in `out` (in L1) key by key.
  for (int64_t c = 0; c < d; c += lanes) hn::StoreU(hn::Zero(df), df, out + c);
  for (int64_t j = 0; j < n_keys; ++j) {
    const VF wj = hn::Set(df, scores[j]);
    const float* vr = v_base + row_off[j];
    for (int64_t c = 0; c < d; c += lanes)
      hn::StoreU(hn::MulAdd(wj, hn::LoadU(df, vr + c), hn::LoadU(df, out + c)), df, out + c);
  }
  const VF inv = hn::Set(df, static_cast<float>(1.0 / denom));
  for (int64_t c = 0; c < d; c += lanes)
    hn::StoreU(hn::Mul(hn::LoadU(df, out + c), inv), df, out + c);
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
float ReadSum(const float* p, int64_t n) { return HWY_DYNAMIC_DISPATCH(ReadSum)(p, n); }
float FmaLoop(int64_t iters) { return HWY_DYNAMIC_DISPATCH(FmaLoop)(iters); }

}  // namespace xinfer::cpu::simd
#endif  // HWY_ONCE
