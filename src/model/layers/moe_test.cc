#include "model/layers/moe.h"

#include <gtest/gtest.h>

#include <cmath>

namespace xinfer {
namespace {

TEST(MoeRoutingTest, TopKOfTheSoftmaxGroupedByExpert) {
  // Two tokens, four experts, two each.
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 0.0f,   // token 0: experts 1, 2
                                     0.5f, 0.5f, -1.f, 2.0f};  // token 1: 3, then the tie: 0
  MoeRouting r;
  RouteTokens(logits, 4, 2, /*renormalize=*/false, r);
  EXPECT_EQ(r.begin, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{1, 0, 0, 1}));
  const double z0 = std::exp(1.0) + std::exp(3.0) + std::exp(2.0) + 1;
  const double z1 = 2 * std::exp(0.5) + std::exp(-1.0) + std::exp(2.0);
  EXPECT_NEAR(r.weights[0], std::exp(0.5) / z1, 1e-7);  // expert 0, token 1
  EXPECT_NEAR(r.weights[1], std::exp(3.0) / z0, 1e-7);  // expert 1, token 0
  EXPECT_NEAR(r.weights[2], std::exp(2.0) / z0, 1e-7);  // expert 2, token 0
  EXPECT_NEAR(r.weights[3], std::exp(2.0) / z1, 1e-7);  // expert 3, token 1
  // norm_topk_prob: each token's chosen weights sum to 1.
  RouteTokens(logits, 4, 2, /*renormalize=*/true, r);
  EXPECT_NEAR(r.weights[1] + r.weights[2], 1.0, 1e-6);
  EXPECT_NEAR(r.weights[1], std::exp(3.0) / (std::exp(3.0) + std::exp(2.0)), 1e-7);
  EXPECT_NEAR(r.weights[0] + r.weights[3], 1.0, 1e-6);
  // Every expert (k = E): each token in every run, in token order.
  RouteTokens(logits, 4, 4, /*renormalize=*/true, r);
  EXPECT_EQ(r.begin, (std::vector<int32_t>{0, 2, 4, 6, 8}));
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{0, 1, 0, 1, 0, 1, 0, 1}));
  // No tokens: empty runs.
  RouteTokens({}, 4, 2, true, r);
  EXPECT_EQ(r.begin, (std::vector<int32_t>(5, 0)));
  EXPECT_TRUE(r.tokens.empty());
}

}  // namespace
}  // namespace xinfer
