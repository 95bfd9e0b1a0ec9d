#include "model/layers/rope_scaling.h"

#include <gtest/gtest.h>

#include <cmath>

namespace xinfer {
namespace {

ModelConfig Config(double theta, int head_dim, RopeScaling scaling) {
  ModelConfig c;
  c.rope_theta = theta;
  c.head_dim = head_dim;
  c.rope_scaling = std::move(scaling);
  return c;
}

TEST(RopeScalingTest, NoScalingIsThetaToTheMinusTwoIOverD) {
  const RopeSpec r = MakeRopeSpec(Config(1e6, 128, {}));
  ASSERT_EQ(r.inv_freq.size(), 64u);
  EXPECT_DOUBLE_EQ(r.inv_freq[0], 1.0);
  EXPECT_DOUBLE_EQ(r.inv_freq[32], 1e-3);  // 1e6^(-64/128)
  EXPECT_EQ(r.scale, 1.0);
}

// Qwen's long-context recipe: {"rope_type": "yarn", "factor": 4.0,
// "original_max_position_embeddings": 32768} on theta 1e6, head_dim 128. The correction
// dimensions are 128 ln(32768 / (2 pi beta)) / (2 ln 1e6): 23.60 for beta_fast 32 (floor: 23)
// and 39.65 for beta_slow 1 (ceil: 40). Pairs up to 23 keep their frequency, from 40 on they
// are divided by 4, linearly between; cos and sin are scaled by 0.1 ln 4 + 1 = 1.138629.
TEST(RopeScalingTest, YarnAsQwenConfiguresIt) {
  const RopeSpec plain = MakeRopeSpec(Config(1e6, 128, {}));
  const RopeSpec r = MakeRopeSpec(
      Config(1e6, 128, {.type = "yarn", .factor = 4, .original_max_position_embeddings = 32768}));
  ASSERT_EQ(r.inv_freq.size(), 64u);
  for (int i = 0; i <= 23; ++i) EXPECT_DOUBLE_EQ(r.inv_freq[i], plain.inv_freq[i]) << i;
  for (int i = 40; i < 64; ++i) EXPECT_DOUBLE_EQ(r.inv_freq[i], plain.inv_freq[i] / 4) << i;
  const double ramp = (31 - 23) / 17.0;  // pair 31: 8/17 of the way to interpolation
  EXPECT_NEAR(r.inv_freq[31], plain.inv_freq[31] * (ramp / 4 + (1 - ramp)),
              1e-15 * plain.inv_freq[31]);
  EXPECT_NEAR(r.scale, 1.138629436111989, 1e-12);
  // attn_factor multiplies the scale; extrapolation_factor 0 interpolates every pair.
  const RopeSpec all = MakeRopeSpec(Config(1e6, 128,
                                           {.type = "yarn",
                                            .factor = 4,
                                            .original_max_position_embeddings = 32768,
                                            .extrapolation_factor = 0,
                                            .attn_factor = 0.5}));
  for (int i = 0; i < 64; ++i) EXPECT_DOUBLE_EQ(all.inv_freq[i], plain.inv_freq[i] / 4) << i;
  EXPECT_NEAR(all.scale, 1.138629436111989 / 2, 1e-12);
  // Factor 1 stretches nothing.
  const RopeSpec one = MakeRopeSpec(
      Config(1e6, 128, {.type = "yarn", .factor = 1, .original_max_position_embeddings = 32768}));
  for (int i = 0; i < 64; ++i)
    EXPECT_NEAR(one.inv_freq[i], plain.inv_freq[i], 1e-15 * plain.inv_freq[i]) << i;
  EXPECT_EQ(one.scale, 1.0);
}

// Llama 3.1: theta 500000, factor 8, low_freq_factor 1, high_freq_factor 4, trained on 8192.
// Wavelengths 2 pi / inv_freq under 8192 / 4 = 2048 keep their frequency (pairs 0..28), those over
// 8192 are divided by 8 (pairs 35..63), pairs 29..34 blend with
// smooth = (8192 / wavelength - 1) / 3.
TEST(RopeScalingTest, Llama3AsLlama31ConfiguresIt) {
  const RopeSpec plain = MakeRopeSpec(Config(500000, 128, {}));
  const RopeSpec r = MakeRopeSpec(Config(500000, 128,
                                         {.type = "llama3",
                                          .factor = 8,
                                          .original_max_position_embeddings = 8192,
                                          .low_freq_factor = 1,
                                          .high_freq_factor = 4}));
  for (int i = 0; i <= 28; ++i) EXPECT_DOUBLE_EQ(r.inv_freq[i], plain.inv_freq[i]) << i;
  for (int i = 35; i < 64; ++i) EXPECT_DOUBLE_EQ(r.inv_freq[i], plain.inv_freq[i] / 8) << i;
  for (int i = 29; i <= 34; ++i) {
    const double f = plain.inv_freq[i];
    const double smooth = (8192 / (2 * M_PI / f) - 1) / 3;
    ASSERT_GT(smooth, 0);
    ASSERT_LT(smooth, 1);
    EXPECT_NEAR(r.inv_freq[i], (1 - smooth) * f / 8 + smooth * f, 1e-15 * f) << i;
  }
  EXPECT_EQ(r.scale, 1.0);
}

TEST(RopeScalingTest, LinearDynamicAndFrequencyFactors) {
  const RopeSpec plain = MakeRopeSpec(Config(10000, 64, {}));
  const RopeSpec linear = MakeRopeSpec(Config(10000, 64, {.type = "linear", .factor = 2}));
  for (int i = 0; i < 32; ++i) EXPECT_DOUBLE_EQ(linear.inv_freq[i], plain.inv_freq[i] / 2);
  // vLLM's dynamic NTK for the whole stretched context: base 10000 * (2^2 - 2 + 1)^(64 / 62).
  const RopeSpec dynamic = MakeRopeSpec(Config(10000, 64, {.type = "dynamic", .factor = 2}));
  EXPECT_EQ(dynamic, MakeRopeSpec(Config(10000 * std::pow(3.0, 64.0 / 62), 64, {})));
  EXPECT_DOUBLE_EQ(dynamic.inv_freq[0], 1.0);
  EXPECT_LT(dynamic.inv_freq[31], plain.inv_freq[31]);
  // GGUF's rope_freqs divide whatever the type gave.
  RopeScaling factors;
  factors.freq_factors.assign(32, 1.0);
  factors.freq_factors[31] = 8;
  const RopeSpec divided = MakeRopeSpec(Config(10000, 64, factors));
  EXPECT_DOUBLE_EQ(divided.inv_freq[31], plain.inv_freq[31] / 8);
  EXPECT_DOUBLE_EQ(divided.inv_freq[30], plain.inv_freq[30]);
}

}  // namespace
}  // namespace xinfer
