#include "sampling/vocab_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace xinfer::vocab {
namespace {

// Against double-precision exp over the whole exponent range a softmax weight has, in lengths
// that exercise the tail path, and in place.
TEST(VocabMathTest, ExpOfNonPositiveIsWithinAFewUlpsOfExp) {
  for (int64_t n : {1, 3, 16, 17, 1000, 4099}) {
    std::vector<float> x(static_cast<size_t>(n)), out(x.size());
    for (int64_t i = 0; i < n; ++i) x[i] = -87.0f * static_cast<float>(i) / static_cast<float>(n);
    ExpOfNonPositive(x.data(), n, out.data());
    for (int64_t i = 0; i < n; ++i) {
      const double want = std::exp(static_cast<double>(x[i]));
      ASSERT_NEAR(out[i], want, 4e-7 * want) << "x " << x[i] << " n " << n;
    }
    ExpOfNonPositive(x.data(), n, x.data());
    EXPECT_EQ(x, out) << "in place";
  }
}

TEST(VocabMathTest, ExpOfNonPositiveIsExactlyOneAtZeroAndVanishesFarBelow) {
  std::vector<float> x = {0.0f,
                          -0.0f,
                          -90.0f,
                          -1000.0f,
                          -std::numeric_limits<float>::max(),
                          -std::numeric_limits<float>::infinity()};
  std::vector<float> out(x.size());
  ExpOfNonPositive(x.data(), static_cast<int64_t>(x.size()), out.data());
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 1.0f);
  for (size_t i = 2; i < x.size(); ++i) {
    EXPECT_GE(out[i], 0.0f) << x[i];
    EXPECT_LT(out[i], 1e-38f) << x[i];  // 0 or subnormal: never a weight that matters
    EXPECT_EQ(out[i], 0.0f) << x[i];    // in fact exactly 0: masked tokens need no pass
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float nan_out = 1.0f;
  ExpOfNonPositive(&nan, 1, &nan_out);
  EXPECT_EQ(nan_out, 0.0f);
}

}  // namespace
}  // namespace xinfer::vocab
