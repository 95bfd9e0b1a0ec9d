#include "tensor/dtype.h"

#include <gtest/gtest.h>

#include <cmath>

namespace xinfer {
namespace {

TEST(DTypeTest, Bf16RoundTripAndRounding) {
  for (float f : {0.0f, 1.0f, -2.5f, 3.140625f, 1e-3f, 65504.0f}) {
    EXPECT_NEAR(Bf16ToF32(F32ToBf16(f)), f, std::fabs(f) / 128 + 1e-30);
  }
  // 1 + 2^-8 is exactly halfway between two bf16 values: ties go to even (1.0).
  EXPECT_EQ(Bf16ToF32(F32ToBf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_TRUE(std::isnan(Bf16ToF32(F32ToBf16(NAN))));
}

TEST(DTypeTest, F16RoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 0.099975586f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f}) {
    EXPECT_EQ(F16ToF32(F32ToF16(f)), f) << f;
  }
  EXPECT_EQ(F32ToF16(1.0f), 0x3c00);
  EXPECT_EQ(F16ToF32(0xc000), -2.0f);
  EXPECT_TRUE(std::isinf(F16ToF32(F32ToF16(1e6f))));
}

TEST(DTypeTest, ParseNames) {
  EXPECT_EQ(*ParseDType("BF16"), DType::kBF16);
  auto bad = ParseDType("F8_E4M3");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("F8_E4M3"), std::string::npos);
}

}  // namespace
}  // namespace xinfer
