#include "sampling/vocab_math.h"

#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "sampling/vocab_math.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// foreach_target.h must come first.
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace xinfer::vocab {
namespace HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

void ExpOfNonPositive(const float* x, int64_t n, float* out) {
  const hn::ScalableTag<float> df;
  const auto lanes = static_cast<int64_t>(hn::Lanes(df));
  // Below log(FLT_MIN) the float result would be subnormal or 0: exactly 0, as it is for -inf
  // and NaN (the compare is false), so masked tokens need no pass of their own.
  const auto underflow = hn::Set(df, -87.33654f), hi = hn::Zero(df);
  auto exp = [&](auto v) {
    return hn::IfThenElseZero(hn::Ge(v, underflow),
                              hn::Exp(df, hn::Min(hn::Max(v, underflow), hi)));
  };
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(exp(hn::LoadU(df, x + i)), df, out + i);
  if (i < n) {  // the tail through a padded buffer and the same vector code
    HWY_ALIGN float tail[HWY_MAX_BYTES / sizeof(float)] = {};
    std::memcpy(tail, x + i, static_cast<size_t>(n - i) * sizeof(float));
    hn::Store(exp(hn::Load(df, tail)), df, tail);
    std::memcpy(out + i, tail, static_cast<size_t>(n - i) * sizeof(float));
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace xinfer::vocab
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xinfer::vocab {

HWY_EXPORT(ExpOfNonPositive);

void ExpOfNonPositive(const float* x, int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(ExpOfNonPositive)(x, n, out);
}

}  // namespace xinfer::vocab
#endif  // HWY_ONCE
